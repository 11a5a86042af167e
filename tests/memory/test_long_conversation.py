"""A 500-turn conversation: the prompt stays under budget and no turn is ever lost."""

from __future__ import annotations

import pytest

from memory.base import Turn
from memory.sqlite_store import SqliteDb
from memory.tokens import count_message_tokens


@pytest.mark.parametrize("strategy", ["rsum", "swin"])
async def test_500_turns_stay_under_budget_and_lose_nothing(make_memory, clock, llm, db, strategy):
    budget = 800
    memory = await make_memory(budget=budget, strategy=strategy, update_interval_s=120, max_summary_sentences=8)
    worst = 0
    for i in range(250):
        question = f"Question {i}: could we also visit place number {i} on day {i % 7}, and is it far?"
        messages = await memory.build_messages(question)
        worst = max(worst, count_message_tokens(messages))
        await memory.record(Turn("user", question, turn_id=str(i)))
        await memory.record(Turn("assistant", f"Place {i} is about {i % 50} minutes away by bus.", turn_id=str(i)))
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
    assert len(llm.calls) >= 25  # the timer kept folding (a tick during a running summary is skipped)


async def test_a_dead_summarizer_never_breaks_the_budget_nor_drops_a_turn(make_memory, clock, llm, caplog):
    budget = 400
    memory = await make_memory(budget=budget)
    llm.fail = 10**6
    for i in range(100):
        await memory.record(Turn("user", f"Utterance {i} about the plan for the trip."))
        messages = await memory.build_messages("next")
        assert count_message_tokens(messages) <= budget
        await clock.advance(60)
    await memory.wait_idle()
    assert len(memory.history) == 100  # all still pending, none summarized, none dropped
    assert "left out of this prompt" in caplog.text and memory.trimmed_prompts > 0
