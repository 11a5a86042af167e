"""The fleet's PostgreSQL server lost mid-conversation never holds a reply (issue 28,
item 3): a real server started by the tests is stopped (`pg_ctl stop -m immediate`) or
frozen (SIGSTOP on every one of its processes) between two turns. Each turn is heard
within `llm.filler_after_s` and ends within it too (the next turn is not held); a visitor
who walks up meanwhile is answered as fast; and once the server is back every turn is in
it, once. Before, the stopped server cost 3.5 s of silence, the frozen one 13.5 s."""

from __future__ import annotations

import asyncio
import time

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from memory.stores.pg_store import PostgresStore
from robot.core.events import SpeechEvent
from robot.app.runtime import open_runtime
from tests.memory.backends import pg_server  # noqa: F401 - fixture
from tests.openai_stub_server import StubOpenAIServer

REPLY = "Happy to help with your trip."


class Heard:
    """When each sentence was said (monotonic)."""

    def __init__(self) -> None:
        self.at: list[float] = []

    def publish(self, event: object) -> None:
        if isinstance(event, SpeechEvent):
            self.at.append(time.monotonic())


@pytest.mark.parametrize("fault", ["stop", "freeze"])
async def test_a_store_lost_mid_conversation_never_holds_a_reply(pg_server, fault):  # noqa: F811
    url = pg_server.create_database()
    settings = load_settings(None)
    settings.memory.store = url
    deadline = settings.llm.filler_after_s
    timings: list[tuple[str, float, float]] = []
    async with StubOpenAIServer(reply=REPLY) as llm:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", llm.base_url, "stub"
        # Every reply the LLM's: no knowledge answering for it, no profile said back before it.
        persona = load_persona(DEFAULT_PERSONA).model_copy(
            update={"knowledge": None, "noted": None, "welcome_name": None})
        async with open_runtime(settings, persona, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
            heard = Heard()
            rt.events.add(heard)

            async def turn(text: str) -> None:
                before, start = len(heard.at), time.monotonic()
                await asyncio.wait_for(rt.controller.handle_text(text), 30)
                timings.append((text, heard.at[before] - start, time.monotonic() - start))

            await rt.controller.sessions.start("card-1")
            await turn("My name is Ken.")
            pg_server.stop("immediate") if fault == "stop" else pg_server.freeze()
            try:
                await turn("We would like to see Kyoto.")
                await turn("Two adults in April.")
                await rt.controller.sessions.end()
                await asyncio.sleep(deadline)  # the store is tried afresh (no "failed just now")
                await turn("Hi, just looking.")  # a visitor whose words open a session meanwhile
                await rt.controller.sessions.start("card-2")  # one with a card
                await turn("Hello, I am Ana.")
                await turn("Is Nara far?")
            finally:
                pg_server.start() if fault == "stop" else pg_server.thaw()
            await turn("Thank you.")
            await asyncio.wait_for(rt.memory.current.wait_stored(), 60)
            await rt.controller.sessions.end()
            await asyncio.wait_for(rt.memory.wait_idle(), 60)  # card-1's and card-2's closes
    slow = [(text, round(first, 2), round(done, 2)) for text, first, done in timings
            if first > deadline or done > deadline]
    assert not slow, f"turns held past the filler's deadline ({deadline} s): {slow}"
    store = PostgresStore(url)
    try:
        ken, ana = await store.dump_user("card-1"), await store.dump_user("card-2")
        visitors = await store.user_names()
    finally:
        await store.close()
    assert [t.text for t in ken.turns if t.role == "user"] == [
        "My name is Ken.", "We would like to see Kyoto.", "Two adults in April."]
    assert [t.text for t in ana.turns if t.role == "user"] == ["Hello, I am Ana.", "Is Nara far?", "Thank you."]
    assert [t.text for t in ken.turns + ana.turns if t.role == "assistant"] == [REPLY] * 6  # once each
    assert visitors == ["card-1", "card-2"]  # the anonymous one: written, then deleted at its close
