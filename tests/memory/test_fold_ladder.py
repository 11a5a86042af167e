"""Summaries that never stall, never overflow, never lose a tick (issue 18).

Scripted summarizers show what a real model does only sometimes: it copies the transcript,
answers nothing, hangs, or drops a number. Whatever it does, no turn is lost, the prompt
stays within budget, the backlog drains, and the person's facts survive.
"""

from __future__ import annotations

import asyncio

import pytest

from memory.core.base import Message, Remark
from memory.core.settings import LlmLimits
from memory.core.tokens import count_message_tokens
from memory.stores.sqlite_db import SqliteDb
from tests.memory.conftest import RuleLLM

FACTS = ["My name is Ken Tanaka.", "We are 3 adults with a budget of $2400.", "We fly on 14 May to Osaka."]


class Copier:
    """Answers with the transcript it was given (SmolLM2's commonest failure)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, messages: list[Message]) -> str:
        self.calls += 1
        return messages[-1]["content"]


class Empty(Copier):
    async def __call__(self, messages: list[Message]) -> str:
        self.calls += 1
        return ""


class Hangs(Copier):
    async def __call__(self, messages: list[Message]) -> str:
        self.calls += 1
        await asyncio.Event().wait()
        return ""


class DropsNumbers(RuleLLM):
    """A fluent summary without any digit: the entity gate must refuse it."""

    async def __call__(self, messages: list[Message]) -> str:
        text = await super().__call__(messages)
        return "".join(c for c in text if not c.isdigit())


async def _talk(memory, clock, exchanges: int = 30) -> list[int]:
    worst = 0
    for i in range(exchanges):
        line = FACTS[i] if i < len(FACTS) else f"Could we see temple number {i} near Kyoto station on day {i % 5}?"
        worst = max(worst, count_message_tokens(await memory.build_messages(line)))
        await memory.record(Remark("user", line))
        await memory.record(Remark("assistant", f"Temple {i} is a short walk from the station."))
        await clock.advance(60)
        await memory.wait_idle()  # real time for a summary's (real-time) timeout
    for _ in range(5):  # the session is over: the timer and the retries go on
        await clock.advance(60)
        await memory.wait_idle()
    return [worst]


def _covered(db, memory) -> tuple[set[int], set[int]]:
    view = SqliteDb(db)
    user_id = view.user_id("default")
    stored = {t.id for t in view.turns(user_id)}
    absorbed = {i for s in view.chain(view.current_summary(user_id)) for i in s.absorbed}
    view.close()
    return stored, absorbed | {t.id for t in memory.history}


@pytest.mark.parametrize("summarizer", [Copier, Empty, Hangs, DropsNumbers])
async def test_whatever_the_summarizer_does_nothing_is_lost_and_the_backlog_drains(
        make_memory, clock, db, summarizer):
    llm = summarizer()
    budget = 600
    memory = await make_memory(budget=budget, llm_=llm, update_interval_s=300, retry_backoff_s=30,
                               summary_timeout_s=0.05)
    [worst] = await _talk(memory, clock)
    assert worst <= budget
    stored, covered = _covered(db, memory)
    assert len(stored) == 60 and stored == covered  # every turn stored, pending or absorbed
    assert len(memory.history) <= 4  # the backlog drained
    for fact in ("Ken Tanaka", "$2400", "14 May"):
        assert fact in memory.role_prompt  # the fact guard ran although the LLM failed
    assert memory.stats.extractive >= 1
    # an answer refused climbs the ladder (two rungs); a failed request goes to the extractive one at once
    assert memory.stats.failed + memory.stats.rejected >= memory.stats.extractive


async def test_the_entity_gate_rejects_a_summary_that_drops_a_number(make_memory, clock):
    memory = await make_memory(llm_=DropsNumbers())
    await memory.record(Remark("user", "We need 4 rooms for 12 nights."))
    assert await memory.flush()
    assert memory.stats.rejected == 2 and memory.stats.extractive == 1
    assert "4 rooms for 12 nights" in memory.role_prompt
    # With the gate off, the same answer is accepted and the numbers are gone.
    other = await make_memory(user="other", llm_=DropsNumbers(), min_entity_recall=0)
    await other.record(Remark("user", "We need 4 rooms for 12 nights."))
    assert await other.flush()
    assert other.stats.accepted == 1 and "12" not in other.summary.text


async def test_a_tick_during_a_running_summary_is_coalesced(make_memory, clock, llm):
    memory = await make_memory(update_interval_s=300)
    await memory.record(Remark("user", "My name is Ken."))
    llm.gate = asyncio.Event()
    await clock.advance(300)  # the first summary starts and hangs
    assert memory.updating
    await memory.record(Remark("user", "We like temples."))
    await clock.advance(300)  # a tick while it runs
    await clock.advance(300)  # and another: still one more run, not two
    llm.gate.set()
    await memory.wait_idle()
    assert len(llm.calls) == 2 and memory.history == []
    assert "temples" in memory.role_prompt


async def test_a_long_backlog_is_folded_in_chunks_that_fit_the_context(make_memory, clock, llm, db):
    sizes: list[int] = []

    async def measured(messages: list[Message]) -> str:
        sizes.append(sum([await counter(m["content"]) + 4 for m in messages]))
        return await llm(messages)

    async def counter(text: str) -> int:  # a stand-in tokenizer: one token per word
        return len(text.split())

    memory = await make_memory(llm_=measured, update_interval_s=10_000, budget=100_000,
                               limits=LlmLimits(context_tokens=400, answer_tokens=100), count_tokens=counter)
    for i in range(80):
        await memory.record(Remark("user" if i % 2 == 0 else "assistant", f"Line {i}: we could also go to place {i}."))
    assert await memory.flush()
    assert len(sizes) >= 4 and max(sizes) + 100 + 32 <= 400  # every request left room for the answer
    stored, covered = _covered(db, memory)
    assert memory.history == [] and stored == covered
