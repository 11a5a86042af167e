"""The dual store on an injected clock: timer, slow and failing summaries, swaps, restarts."""

from __future__ import annotations

import asyncio

from memory import StoreSettings, SummaryPolicy, create_memory
from memory.core.base import Remark
from memory.core.tokens import count_message_tokens
from memory.stores.sqlite_db import SqliteDb
from tests.memory.conftest import PERSONA, say


async def test_timer_fires_at_the_configured_interval(make_memory, clock, llm):
    memory = await make_memory(update_interval_s=600)
    await say(memory, "My name is Ken.", "Nice to meet you, Ken.")
    await clock.advance(599)
    await memory.wait_idle()
    assert llm.calls == [] and memory.summary is None
    await clock.advance(1)
    await memory.wait_idle()
    assert len(llm.calls) == 1
    assert memory.summary is not None and memory.summary.version == 1
    assert memory.history == []
    assert "Ken" in memory.role_prompt and memory.role_prompt.startswith(PERSONA)
    # The next interval: nothing new was said, so no summary; then a new turn is folded.
    await clock.advance(600)
    await memory.wait_idle()
    assert len(llm.calls) == 1
    await say(memory, "We want to go in April.")
    await clock.advance(600)
    await memory.wait_idle()
    assert len(llm.calls) == 2 and memory.summary.version == 2
    assert "April" in memory.role_prompt and "Ken" in memory.role_prompt


async def test_reply_does_not_wait_and_turns_said_during_a_slow_summary_survive(make_memory, clock, llm):
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    llm.gate = asyncio.Event()  # the summary will hang until released
    await clock.advance(300)
    assert memory.updating
    # While it runs: replies are built at once from the old state, and turns are recorded.
    messages = await asyncio.wait_for(memory.build_messages("Is Nara far?"), timeout=10)  # a hung summary would hold it for ever
    assert [m["content"] for m in messages[1:]] == ["My name is Ken.", "Hello Ken.", "Is Nara far?"]
    await say(memory, "Is Nara far?", "About 45 minutes by train.")
    llm.gate.set()
    await memory.wait_idle()
    assert [t.text for t in memory.history] == ["Is Nara far?", "About 45 minutes by train."]
    assert "Ken" in memory.role_prompt
    absorbed = set(memory.summary.absorbed)
    assert absorbed.isdisjoint(t.id for t in memory.history) and len(absorbed) == 2
    messages = await memory.build_messages("Thanks")
    assert messages[0]["content"] == memory.role_prompt
    assert [m["content"] for m in messages[1:]] == ["Is Nara far?", "About 45 minutes by train.", "Thanks"]


async def test_a_folded_summary_waits_to_be_swapped_in_while_a_reply_is_made(make_memory, clock, llm):
    """The robot says when a new role prompt may come in (``swap_when``: robot/reply/swap_hold.py):
    a reply's prompt built meanwhile stays the one the LLM was already reading."""
    allowed = [False]
    memory = await make_memory(swap_when=lambda: allowed[0])
    await say(memory, "My name is Ken.", "Hello Ken.")
    await clock.advance(300)
    await asyncio.sleep(0.3)  # folded at once by the double; the swap waits
    assert len(llm.calls) == 1 and memory.updating
    assert memory.summary is None and memory.role_prompt == PERSONA
    messages = await memory.build_messages("Is Nara far?")
    assert [m["content"] for m in messages[1:]] == ["My name is Ken.", "Hello Ken.", "Is Nara far?"]
    await say(memory, "Is Nara far?", "About 45 minutes by train.")  # the turn is recorded meanwhile
    allowed[0] = True
    await asyncio.wait_for(memory.wait_idle(), timeout=10)
    assert memory.summary.version == 1 and "Ken" in memory.role_prompt
    assert [t.text for t in memory.history] == ["Is Nara far?", "About 45 minutes by train."]


async def test_a_summary_is_not_held_past_its_bound_nor_at_a_sessions_end(make_memory, clock, llm, monkeypatch):
    from memory.dual_store import summaries

    monkeypatch.setattr(summaries, "SWAP_WAIT_MAX_S", 0.3)
    memory = await make_memory(swap_when=lambda: False)  # a robot stuck thinking never lets it in
    await say(memory, "My name is Ken.", "Hello Ken.")
    await clock.advance(300)
    await asyncio.wait_for(memory.wait_idle(), timeout=10)
    assert memory.summary.version == 1 and memory.history == []
    # A session's last summary (the visitor left) rewrites no reply's prompt: it does not wait.
    monkeypatch.setattr(summaries, "SWAP_WAIT_MAX_S", 30.0)
    await say(memory, "We love temples.")
    assert await asyncio.wait_for(memory.flush(), timeout=10)
    assert "temples" in memory.role_prompt and memory.history == []


async def test_a_failing_summary_is_kept_extractively_at_once_and_the_next_asks_the_llm(make_memory, clock, llm):
    # A summarizer that fails (down, or too slow for its timeout on a busy machine) used to leave
    # the turns raw for two more tries a session: replayed visits ended with no summary at all.
    memory = await make_memory(retry_backoff_s=30)
    await say(memory, "My name is Ken.", "Hello Ken.")
    llm.fail = 1
    await clock.advance(300)
    await memory.wait_idle()
    assert memory.summary is not None and memory.history == [] and "Ken" in memory.role_prompt
    assert (memory.stats.failed, memory.stats.extractive) == (1, 1)
    await say(memory, "Our budget is 2000 dollars.")
    await clock.advance(300)  # the next fold: the LLM is asked again
    await memory.wait_idle()
    assert len(llm.calls) == 2 and memory.stats.accepted == 1 and memory.history == []


async def test_a_summarizer_that_never_answers_keeps_the_prompt_bounded_and_the_memory_summarized(
        make_memory, clock, llm):
    memory = await make_memory(summary_timeout_s=0.05, retry_backoff_s=10, budget=400)
    llm.hang = True  # every summary request times out
    for i in range(40):
        await say(memory, f"Turn {i}: my name is Ken and we plan a trip to Nara.")
        await clock.advance(300)
        await memory.wait_idle()
        assert count_message_tokens(await memory.build_messages("next")) <= 400
    assert memory.summary is not None and len(memory.history) <= 2  # folded each time, extractively
    assert memory.stats.extractive >= 30 and memory.stats.accepted == 0 and "Ken" in memory.role_prompt


async def test_a_crash_between_summary_and_swap_loses_nothing(db, clock, llm):
    settings = StoreSettings(db_path=db)
    memory = await create_memory(PERSONA, SummaryPolicy(), settings, llm, clock=clock)
    await memory.start()
    await say(memory, "My name is Ken.", "Hello Ken.", "Our budget is 2000 dollars.")
    await clock.advance(300)
    await memory.wait_idle()
    await say(memory, "We love temples.", "Kyoto then.")

    # The next summary is made, then the process dies before the swap is committed.
    class Crash(BaseException):
        pass

    async def die(*args, **kwargs):
        raise Crash()

    memory._store.commit_summary = die
    task = asyncio.create_task(memory.flush())
    try:
        await task
    except Crash:
        pass
    # Restart on the same file: the old summary and every raw turn are there.
    db_view = SqliteDb(db)
    state = db_view.load_user("default", now=0)
    db_view.close()
    assert state.summary.version == 1 and "Ken" in state.summary.text
    assert [t.text for t in state.history] == ["We love temples.", "Kyoto then."]
    again = await create_memory(PERSONA, SummaryPolicy(), settings, llm, clock=clock)
    assert [t.text for t in again.history] == ["We love temples.", "Kyoto then."]
    assert again.role_prompt == memory.role_prompt
    assert await again.flush()
    assert "temples" in again.role_prompt and "Ken" in again.role_prompt
    await again.aclose()


async def test_restart_resumes_the_same_memory(db, clock, llm):
    settings = StoreSettings(db_path=db)
    first = await create_memory(PERSONA, SummaryPolicy(), settings, llm, clock=clock)
    await say(first, "My name is Ken.", "Hello Ken.")
    await first.flush()
    await say(first, "Two adults.")
    await first.aclose()
    second = await create_memory(PERSONA, SummaryPolicy(), settings, llm, clock=clock)
    assert second.summary.version == 1 and "Ken" in second.role_prompt
    assert [t.text for t in second.history] == ["Two adults."]
    assert second.role_prompt_version == first.role_prompt_version  # same prompt: no new version
    await second.aclose()


async def test_persona_change_keeps_both_stores_and_versions_the_prompt(make_memory, clock):
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    await memory.flush()
    await say(memory, "We want to see deer.")
    before = memory.role_prompt_version
    await memory.set_persona_prompt("You are Hana. New tour: Nara deer park at dawn.")
    assert memory.role_prompt_version == before + 1
    assert memory.role_prompt.startswith("You are Hana.") and "Ken" in memory.role_prompt
    assert [t.text for t in memory.history] == ["We want to see deer."]
    version, text, summary = memory.updates[-1]
    assert (version, text) == (memory.role_prompt_version, memory.role_prompt) and "Ken" in summary
    # The next summary keeps the new persona.
    await memory.flush()
    assert memory.role_prompt.startswith("You are Hana.") and "deer" in memory.role_prompt


async def test_a_persona_change_during_a_summary_is_kept(make_memory, clock, llm):
    memory = await make_memory()
    await say(memory, "My name is Ken.")
    llm.gate = asyncio.Event()
    await clock.advance(300)
    await memory.set_persona_prompt("You are Hana.")
    llm.gate.set()
    await memory.wait_idle()
    assert memory.role_prompt.startswith("You are Hana.") and "Ken" in memory.role_prompt


async def test_summaries_are_versioned_with_absorbed_ids_and_predecessors(make_memory, db):
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    await memory.flush()
    await say(memory, "Budget 2000 dollars.")
    await memory.flush()
    view = SqliteDb(db)
    user_id = view.user_id("default")
    v1, v2 = view.summaries(user_id)
    turns = view.turns(user_id)
    view.close()
    assert (v1.version, v2.version) == (1, 2) and v2.predecessor_id == v1.id and v1.predecessor_id is None
    assert v1.absorbed == (turns[0].id, turns[1].id) and v2.absorbed == (turns[2].id,)
    assert v2.created >= v1.created
    assert [u[0] for u in memory.updates] == [2, 3]  # role prompt v1 at start, one per summary


async def test_record_keeps_the_loop_turn_id_and_assigns_a_store_id(make_memory):
    memory = await make_memory()
    await memory.record(Remark("user", "Hello", turn_id="t7"))
    await memory.record(Remark("assistant", "Welcome", turn_id="t7"))
    first, second = memory.history
    assert first.loop_turn_id == second.loop_turn_id == "t7"
    assert second.id > first.id


async def test_the_prompt_prefix_is_how_the_next_reply_begins(make_memory):
    # What the reply server reads ahead (robot/reply/prompt_warmer.py): the next reply's
    # messages up to the customer's words, whatever notes ride on them.
    lines = ("Hello, my name is Ken.", "Welcome, Ken! Where would you like to go?",
             "We are two adults and want to see Kyoto in April.", "April is cherry blossom season.")
    memory = await make_memory(update_interval_s=10_000)
    await say(memory, *lines)
    prefix = await memory.prompt_prefix()
    messages = await memory.build_messages("What does the day tour cost?")
    assert messages[:-1] == prefix and len(prefix) == 1 + len(lines)
    # Under a budget that leaves old turns out (a summarizer down), reading ahead is no reply's
    # prompt: neither counted nor warned about as one left short.
    small = await make_memory(budget=50, user="small", update_interval_s=10_000)
    await say(small, *lines)
    assert len(await small.prompt_prefix()) < 1 + len(lines) and small.trimmed_prompts == 0


async def test_turn_and_token_triggers(make_memory, llm):
    memory = await make_memory(update_after_turns=4)
    await say(memory, "a", "b", "c")
    await memory.wait_idle()
    assert llm.calls == []
    await say(memory, "d")
    await memory.wait_idle()
    assert len(llm.calls) == 1 and memory.history == []
    tokens = await make_memory(user="other", update_after_tokens=50)
    await say(tokens, "x" * 120)
    await tokens.wait_idle()
    assert len(llm.calls) == 1
    await say(tokens, "y" * 120)
    await tokens.wait_idle()
    assert len(llm.calls) == 2 and tokens.history == []


async def test_forget_user_deletes_and_starts_afresh(make_memory, db):
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    await memory.flush()
    await say(memory, "Budget 2000 dollars.")
    report = await memory.forget_user("default")
    assert report == ("deleted user 'default': 3 turns, 1 summary versions, 2 role-prompt versions, 1 sessions")
    assert memory.summary is None and memory.history == [] and memory.role_prompt == PERSONA
    view = SqliteDb(db)
    texts = [t.text for t in view.turns(view.user_id("default"))]
    view.close()
    assert texts == []
    await say(memory, "I am new here.")
    assert [t.text for t in memory.history] == ["I am new here."]
