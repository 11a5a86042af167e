"""robot/dialogue/farewell.py: a goodbye and nothing else is answered with the persona's own
farewell line, at once, the LLM not asked; anything more is a turn like any other."""

from __future__ import annotations

import asyncio

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from robot.app.runtime import open_runtime
from robot.dialogue.farewell import is_goodbye
from tests.openai_stub_server import StubOpenAIServer

PERSONA = load_persona(DEFAULT_PERSONA)


@pytest.mark.parametrize("text", [
    "Thank you, that is all for today.",
    "Okay, goodbye!",
    "That's all, thanks.",
    "No, that is everything, thank you very much.",
    "Thanks so much, have a nice day!",
    "Bye bye",
    "Okay, thank you very much, that is all for today, goodbye.",
])
def test_a_goodbye_and_nothing_else_is_one(text):
    assert is_goodbye(text)


@pytest.mark.parametrize("text", [
    "Thank you.",  # a thank-you alone often comes before the next question
    "Thank you. Can you remind me what we planned so far?",
    "Is that all the tours you have?",
    "That is all I need to know about Kyoto, what about Nara?",
    "Goodbye to the crowds, we want quiet temples.",
    "No.",
    "",
])
def test_more_than_a_goodbye_is_none(text):
    assert not is_goodbye(text)


def test_a_persona_may_name_its_own_goodbyes():
    assert is_goodbye("Sayonara, thank you!", ["sayonara"])
    assert not is_goodbye("Goodbye!", ["sayonara"])


async def test_a_goodbye_is_answered_with_the_farewell_and_the_llm_is_not_asked(tmp_path):
    """Through the controller of a real runtime (the sample persona, its knowledge and slots),
    an OpenAI-compatible stub as the LLM that counts what it is asked."""
    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    async with StubOpenAIServer(reply="Noted: thank you; for today.") as server:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
        async with open_runtime(settings, PERSONA, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
            bye = await rt.controller.handle_text("Thank you, that is all for today.")
            asked_before = len(server.requests)
            thanks = await rt.controller.handle_text("Thank you.")
            history = [(t.role, t.text) for t in rt.memory.history]
    assert bye.reply_text == PERSONA.farewell and not bye.errors
    assert asked_before == 0  # the LLM was not asked for the goodbye
    assert len(server.requests) == 1 and thanks.reply_text != PERSONA.farewell  # a thank-you alone: the LLM's
    # the goodbye and the farewell are remembered as said
    assert history[-4:-2] == [("user", "Thank you, that is all for today."), ("assistant", PERSONA.farewell)]


async def test_without_a_farewell_line_the_llm_answers_a_goodbye(tmp_path):
    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    persona = PERSONA.model_copy(update={"farewell": None})
    async with StubOpenAIServer(reply="Goodbye, and safe travels.") as server:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
        async with open_runtime(settings, persona, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
            bye = await rt.controller.handle_text("Thank you, that is all for today.")
    assert bye.reply_text == "Goodbye, and safe travels." and len(server.requests) == 1, bye.errors


async def test_after_the_farewell_the_visit_ends_and_the_next_visitor_starts_clean(tmp_path):
    """A real runtime, ``session.after_goodbye_s`` at its floor (1 s): the visitor who said goodbye
    is no longer the one the next words are remembered for."""
    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    settings.session.after_goodbye_s = 1
    async with StubOpenAIServer(reply="Happy to help.") as server:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
        async with open_runtime(settings, PERSONA, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
            sessions = rt.controller.sessions
            await rt.controller.handle_text("We are two adults and our budget is two thousand dollars.")
            first = sessions.visitor_id, rt.memory.visitor
            await rt.controller.handle_text("Thank you, that is all for today.")
            for _ in range(40):  # the watcher checks once a second
                if not sessions.open:
                    break
                await asyncio.sleep(0.1)
            ended = not sessions.open
            await rt.controller.handle_text("Hello, is the Nara tour still on?")
            second = rt.memory.visitor
            remembered = " ".join(t.text for t in rt.memory.history)
            prefix = " ".join(m["content"] for m in await rt.memory.prompt_prefix())
    assert ended
    assert first[1] is not None and second is not None and second != first[1]
    assert "Nara tour" in remembered  # the new visitor's own words ...
    for fact in ("two adults", "two thousand", "2,000"):  # ... and nothing of the first visitor's
        assert fact not in remembered and fact not in prefix, fact
