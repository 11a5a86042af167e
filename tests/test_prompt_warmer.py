"""The reply prompt read ahead: when the role prompt changes, or a turn adds to the history,
and the robot is idle, the embedded server reads the prompt's start, so the next reply finds
it in its cache (the server says how many of a request's prompt tokens it took from there) and
reads only the customer's words; a busy robot reads it when idle again; a reply's request
waits for the read, or closes one that hangs."""

from __future__ import annotations

import asyncio

import pytest

from config.schema import LlmSettings
from memory import ManualClock
from memory.core.base import Remark
from memory.full_history import FullHistoryMemory
from memory.visitors import VisitorMemory
from robot.core.events import MemoryEvent, SessionEvent
from robot.reply.prompt_warmer import STAND_IN, PromptWarmer

ROLE = ("You are Sakura, a consultant at a travel agency kiosk in Tokyo. You help customers plan trips "
        "in Japan: trains, hotels, temples, food and seasons. Answer in one or two short sentences, "
        "warmly, and ask one question at a time. Today the agency offers a Kyoto and Nara package "
        "with two nights in a ryokan, a rail pass and a guided temple walk.")
CHANGED = MemoryEvent(version=2, prompt_chars=len(ROLE), prompt_tokens=0)


def role_only(roles: list[str] | None = None):
    """A prefix of the role prompt alone (a memory with no history yet): the last of ``roles``."""
    roles = roles or [ROLE]

    async def prefix():
        return [{"role": "system", "content": roles[-1]}]
    return prefix


async def cached_tokens(llm, messages) -> tuple[int, int]:
    """(prompt tokens, of which the server took from its cache) of one request."""
    response = await llm._client.chat.completions.create(model=llm.model, messages=messages, max_tokens=1)
    return response.usage.prompt_tokens, response.usage.prompt_tokens_details.cached_tokens


async def test_a_changed_role_prompt_is_in_the_servers_cache_before_the_next_reply():
    pytest.importorskip("xllamacpp")
    from robot.llm import open_llm

    async with open_llm(LlmSettings(temperature=0, threads=2)) as llm:
        memory = FullHistoryMemory(ROLE)
        warmer = PromptWarmer(llm, memory.prompt_prefix, idle=lambda: True)
        warmer.publish(CHANGED)
        await warmer.wait()
        assert warmer.warmed == 1
        total, cached = await cached_tokens(llm, await memory.build_messages("Which temples should I see in Nara?"))
        assert cached >= total - 20  # the role prompt: all but the new question (and the template around it)
        # Without the read ahead, another prompt's start is not in the cache.
        other = FullHistoryMemory(ROLE.replace("Sakura", "Hana").replace("Tokyo", "Osaka"))
        total, cached = await cached_tokens(llm, await other.build_messages("Which temples should I see in Nara?"))
        assert cached < 20


NOTES = ("- Nara Deer Park Walk: 6,500 yen per adult, 3 hours, with Todai-ji and Kasuga Taisha.\n"
         "- Kyoto Temples Day Tour: 9,800 yen per adult, 8 hours, with a tofu lunch.")


async def next_reply_reads(llm, memory: FullHistoryMemory, warmer: PromptWarmer | None) -> int:
    """Prompt tokens the server reads anew for a reply, after a turn that carried the shop's
    notes (which the history does not keep) and was said differently from what the model wrote."""
    question = "Which temples should I see in Nara?"
    await cached_tokens(llm, await memory.build_messages(question, knowledge=NOTES))
    await memory.record(Remark("user", question))
    await memory.record(Remark("assistant", "Todai-ji and Kasuga Taisha, on our Deer Park Walk."))
    if warmer is not None:
        warmer.idle_again()  # the turn ended
        await warmer.wait()
    total, cached = await cached_tokens(llm, await memory.build_messages("How much is it for two of us?"))
    return total - cached


async def test_after_a_turn_the_next_reply_reads_only_the_customers_words():
    pytest.importorskip("xllamacpp")
    from robot.llm import open_llm

    async with open_llm(LlmSettings(temperature=0, threads=2)) as llm:
        cold = await next_reply_reads(llm, FullHistoryMemory(ROLE.replace("Sakura", "Hana")), None)
        memory = FullHistoryMemory(ROLE)
        warmer = PromptWarmer(llm, memory.prompt_prefix, idle=lambda: True)
        warm = await next_reply_reads(llm, memory, warmer)
        assert warmer.warmed == 1
        assert warm <= 20  # the new words and the template around them
        assert cold >= warm + 20  # without the read: the last exchange too


class Recorded:
    """Records each request; its stream waits for ``go`` (the timing a test needs)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.closed = 0
        self.go = asyncio.Event()

    async def stream(self, messages, *, max_tokens=None):
        assert max_tokens == 1  # the prompt is what is wanted, not a reply
        self.requests.append(messages[-1]["content"])
        try:
            await self.go.wait()
            yield "Hi"
        finally:
            self.closed += 1


async def test_a_busy_robot_reads_the_prompt_when_it_is_idle_again():
    llm, idle = Recorded(), [False]
    llm.go.set()
    warmer = PromptWarmer(llm, role_only(), idle=lambda: idle[0])
    warmer.publish(SessionEvent(state="started", visitor="ken"))
    await warmer.wait()
    assert llm.requests == []
    idle[0] = True
    warmer.idle_again()
    await warmer.wait()
    assert llm.requests == [STAND_IN] and warmer.warmed == 1
    warmer.idle_again()  # nothing changed since: nothing to read
    await warmer.wait()
    assert len(llm.requests) == 1


async def test_a_reply_waits_for_the_read_in_progress_and_closes_one_that_hangs():
    llm, roles = Recorded(), [ROLE]
    warmer = PromptWarmer(llm, role_only(roles), idle=lambda: True)
    warmer.publish(CHANGED)
    for _ in range(5):
        await asyncio.sleep(0)
    assert llm.requests == [STAND_IN]
    asyncio.get_running_loop().call_later(0.05, llm.go.set)
    await warmer.settle(timeout_s=5)  # what the controller does before a reply's request
    assert warmer.warmed == 1 and llm.closed == 1  # the read finished first
    llm.go.clear()
    roles.append(ROLE + " A summary folded.")
    warmer.publish(CHANGED)
    await warmer.settle(timeout_s=0.05)  # a read that hangs is closed
    await asyncio.sleep(0)
    assert llm.closed == 2 and warmer.warmed == 1


async def test_reading_the_prompt_ahead_opens_no_visitors_memory():
    # After a session ends no visitor is talking: the bare persona's prompt is read, and no
    # anonymous visitor is opened (and stored) for it.
    opened: list[str] = []

    async def open_visitor(name: str, prompt: str) -> FullHistoryMemory:
        opened.append(name)
        return FullHistoryMemory(prompt)

    memory = VisitorMemory(open_visitor, ROLE, ManualClock(start=0.0))
    llm = Recorded()
    llm.go.set()
    warmer = PromptWarmer(llm, memory.prompt_prefix, idle=lambda: True)
    warmer.publish(SessionEvent(state="ended", visitor="ken"))
    await warmer.wait()
    assert warmer.warmed == 1 and opened == [] and memory.visitor is None


async def test_once_closed_a_rewritten_prompt_is_not_read():
    """The robot stops: the memory closes after the warmer, and its last summary rewrites the
    role prompt; read then, the request went to a server being closed (a connection error and
    its retries logged at the end of every simulation)."""
    llm = Recorded()
    llm.go.set()
    warmer = PromptWarmer(llm, role_only(), idle=lambda: True)
    await warmer.aclose()
    warmer.publish(CHANGED)
    warmer.idle_again()
    await warmer.wait()
    assert llm.requests == [] and warmer.warmed == 0
