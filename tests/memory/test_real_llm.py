"""With the real embedded LLM (SmolLM2-135M through llama.cpp): the customer states a name
and a constraint, the timer rewrites the role prompt, and both are in it.

SmolLM2-135M alone does not carry them reliably (it often echoes the transcript or loops
on a list); the summary cleaning drops that, and the fact guard keeps the customer's own
statements verbatim, so the assertion holds whatever the model writes. Runs in ~5 s.
"""

from __future__ import annotations

import pytest

from config.schema import LlmSettings
from memory import ManualClock, StoreSettings, SummaryPolicy, create_memory
from memory.core.base import Remark
from memory.summary.facts import split_marker

pytest.importorskip("xllamacpp")
from robot.llm import open_llm  # noqa: E402

PERSONA = "You are Sakura, a friendly travel consultant at a kiosk."


async def test_name_and_constraint_reach_the_new_role_prompt(tmp_path):
    settings = LlmSettings(temperature=0, max_tokens=200, context_tokens=2048, threads=2)
    async with open_llm(settings) as llm:
        clock = ManualClock(start=0)
        updates = []
        memory = await create_memory(
            PERSONA, SummaryPolicy(update_interval_s=300), StoreSettings(db_path=tmp_path / "m.sqlite3"),
            llm.complete, clock=clock, on_update=lambda *a: updates.append(a))
        await memory.start()
        for role, text in [
            ("user", "Hello. My name is Ken Tanaka. I want to plan a trip to Kyoto and Nara."),
            ("assistant", "Nice to meet you, Ken! When would you like to go?"),
            ("user", "In April. I use a wheelchair, so I need places without stairs."),
            ("assistant", "Understood, I will pick step-free routes."),
        ]:
            await memory.record(Remark(role, text))
        assert memory.role_prompt == PERSONA
        await clock.advance(300)  # the timer fires; the summary is made by the real model
        await memory.wait_idle()
        assert memory.summary is not None, f"no summary after {memory.failures} failures"
        role_prompt = memory.role_prompt
        assert role_prompt.startswith(PERSONA)
        assert "Ken" in role_prompt and "wheelchair" in role_prompt.lower()
        assert memory.history == []
        body, _ = split_marker(memory.summary.text)
        assert body, "the model's own summary text was empty"
        assert updates and updates[-1][1] == role_prompt
        # The next reply is built on the new role prompt.
        messages = await memory.build_messages("Which temple should we see first?")
        assert messages[0]["content"] == role_prompt and len(messages) == 2
        await memory.aclose()


async def test_a_backlog_longer_than_the_context_is_folded_in_chunks_that_fit(tmp_path):
    """Real tokens from the embedded server: every summary request leaves room for the answer."""
    from memory import LlmLimits
    from memory.core.tokens import ServerTokenCounter

    context, answer = 512, 60
    settings = LlmSettings(temperature=0, max_tokens=answer, context_tokens=context, threads=2)
    async with open_llm(settings) as llm:
        counter = ServerTokenCounter(str(llm._client.base_url))
        sizes: list[int] = []

        async def measured(messages):
            sizes.append(sum([await counter(m["content"]) for m in messages]))
            return await llm.complete(messages)

        memory = await create_memory(
            PERSONA, SummaryPolicy(update_interval_s=300), StoreSettings(db_path=tmp_path / "m.sqlite3"),
            measured, clock=ManualClock(start=0), limits=LlmLimits(context, answer), count_tokens=counter)
        for i in range(14):
            await memory.record(Remark("user", f"On day {i + 1} we would like to visit temple number {i + 1} in "
                                               f"Kyoto, then have lunch near the river with my {i + 2} friends."))
            await memory.record(Remark("assistant", f"Temple {i + 1} opens at nine and is a short walk away."))
        assert await counter("\n".join(t.text for t in memory.history)) > context  # it cannot go in one request
        assert await memory.flush()
        assert memory.history == [] and len(sizes) >= 2
        assert max(sizes) + answer <= context, sizes
        assert counter._fallback is None  # the counts were the server's own
        await memory.aclose()


async def test_reply_prompts_are_sized_in_the_reply_models_own_tokens(tmp_path):
    """The counter agrees with what the server bills a prompt, and the reply prompt's budget
    holds in those tokens where characters / 4 would have overrun it (digits, names)."""
    from memory.recall.prompt_budget import PromptBudget
    from memory.core.tokens import ServerTokenCounter

    settings = LlmSettings(temperature=0, max_tokens=1, context_tokens=1024, threads=2)
    async with open_llm(settings) as llm:
        counter = ServerTokenCounter(str(llm._client.base_url))
        text = "Booking 4471-2209-8812 for Ms. Nakamura-Oyelaran: 3 nights, 2026-04-12, JPY 184,500."
        billed = await llm._client.completions.create(model="x", prompt=text, max_tokens=1)
        assert billed.usage.prompt_tokens - await counter(text) in (0, 1)  # the server may add a BOS token
        memory = await create_memory(
            PERSONA, SummaryPolicy(update_interval_s=300),
            StoreSettings(db_path=tmp_path / "m.sqlite3", token_budget=400, retrieval_tokens=0),
            llm.complete, clock=ManualClock(start=0), count_tokens=counter)
        for i in range(12):
            await memory.record(Remark("user", f"Order {i}: {text}"))
        messages = await memory.build_messages("Which one is mine?")
        real = sum([await counter(m["content"]) + 4 for m in messages])
        assert real <= 400  # within the budget in the model's tokens
        heuristic = await PromptBudget(400).messages(memory.role_prompt, memory.history, "Which one is mine?")
        assert sum([await counter(m["content"]) + 4 for m in heuristic]) > 400  # chars/4 overran it
        assert counter._fallback is None
        await memory.aclose()


async def test_the_profile_llm_pass_keeps_nothing_the_customer_did_not_say(tmp_path):
    """The embedded 135M model asked to fill the travel persona's form: whatever it answers,
    every value kept is the slots' own or in the customer's words, and the slots' values stay."""
    import re

    from config.loader import DEFAULT_PERSONA, load_persona

    persona = load_persona(DEFAULT_PERSONA)
    policy = SummaryPolicy(update_interval_s=300, vocabulary=persona.vocabulary, fact_words=persona.memory.fact_words,
                           profile={name: slot.model_dump() for name, slot in persona.memory.profile.items()})
    lines = ["We'll bring the kids along.", "My mother can't walk far, so no stairs please.",
             "Money is tight, our budget is maybe fifteen hundred."]  # each with a fact word: each asked
    settings = LlmSettings(temperature=0, max_tokens=200, context_tokens=2048, threads=2)
    async with open_llm(settings) as llm:
        memory = await create_memory(PERSONA, policy, StoreSettings(db_path=tmp_path / "m.sqlite3", profile_llm=True),
                                     llm.complete, clock=ManualClock(start=0))
        for line in lines:
            await memory.record(Remark("user", line))
        await memory.wait_idle()
        profile = memory.profile
        await memory.aclose()
    from memory.recall.profile import Profile, make_slots

    by_slots = Profile()  # what the slots' types read alone, said back their way ("$1,500")
    for line in lines:
        by_slots.update(make_slots(policy.profile, policy.vocabulary, policy.language), line)
    said = set(re.findall(r"[a-z0-9']+", " ".join(lines).lower()))
    for slot, values in profile.items():
        for value in values:
            words = re.findall(r"[a-z0-9']+", value.lower())
            assert value in by_slots.values.get(slot, []) or sum(w in said for w in words) * 2 >= len(words), (slot, value)
    assert {"limited walking", "no stairs"} <= set(profile.get("needs", []))
    assert profile.get("budget") == ["$1,500"]
