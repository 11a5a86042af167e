"""A 500-turn conversation: the prompt stays under budget and no turn is ever lost."""

from __future__ import annotations

import pytest

from memory.core.base import Remark
from memory.core.tokens import count_message_tokens
from memory.stores.sqlite_db import SqliteDb


@pytest.mark.parametrize("strategy", ["rsum", "swin"])
async def test_500_turns_stay_under_budget_and_lose_nothing(make_memory, clock, llm, db, strategy):
    budget = 800
    memory = await make_memory(budget=budget, strategy=strategy, update_interval_s=120, max_summary_sentences=8)
    worst = 0
    for i in range(250):
        question = f"Question {i}: could we also visit place number {i} on day {i % 7}, and is it far?"
        messages = await memory.build_messages(question)
        worst = max(worst, count_message_tokens(messages))
        await memory.record(Remark("user", question, turn_id=str(i)))
        await memory.record(Remark("assistant", f"Place {i} is about {i % 50} minutes away by bus.", turn_id=str(i)))
        await clock.advance(20)  # ~40 s per exchange of simulated time: the timer fires every 3 exchanges
        if i % 50 == 0:
            await memory.wait_idle()
    await memory.wait_idle()
    assert worst <= budget, worst
    assert memory.trimmed_prompts == 0  # the triggers kept it under budget; no turn was left out
    view = SqliteDb(db)
    user_id = view.user_id("default")
    all_ids = {t.id for t in view.turns(user_id)}
    absorbed = {i for s in view.summaries(user_id) for i in s.absorbed}
    view.close()
    assert len(all_ids) == 500
    assert all_ids == absorbed | {t.id for t in memory.history}
    assert len(llm.calls) >= 25  # the timer kept folding (a tick during a running summary is coalesced)


async def test_a_dead_summarizer_never_breaks_the_budget_nor_drops_a_turn(make_memory, clock, llm, db):
    budget = 400
    memory = await make_memory(budget=budget, retry_backoff_s=30)
    llm.fail = 10**6
    for i in range(100):
        await memory.record(Remark("user", f"Utterance {i} about the plan for the trip to Nara."))
        messages = await memory.build_messages("next")
        assert count_message_tokens(messages) <= budget
        await clock.advance(60)
    await memory.wait_idle()
    # Each failed request is kept extractively at once: the backlog drains.
    assert memory.stats.failed >= 2 and memory.stats.extractive >= 1 and memory.stats.accepted == 0
    assert len(memory.history) < 10
    assert "Nara" in memory.role_prompt and "said:" in memory.role_prompt
    view = SqliteDb(db)
    user_id = view.user_id("default")
    stored = {t.id for t in view.turns(user_id)}
    absorbed = {i for s in view.summaries(user_id) for i in s.absorbed}
    view.close()
    assert len(stored) == 100 and stored == absorbed | {t.id for t in memory.history}  # none lost
