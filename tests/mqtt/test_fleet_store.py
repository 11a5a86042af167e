"""The whole robot on a fleet's PostgreSQL memory store (a real server), watched over a real
mosquitto: the database goes away mid-conversation, the visitor is still answered, the
body gets an error event, and every turn is in the database once it is back."""

from __future__ import annotations

import asyncio

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from memory.stores.pg_store import PostgresStore
from robot.app.runtime import open_runtime
from tests.memory.backends import pg_server  # noqa: F401 - fixture
from tests.openai_stub_server import StubOpenAIServer


async def test_the_database_away_mid_conversation(mosquitto, listener, pg_server):
    url = pg_server.create_database()
    settings = load_settings(None)
    settings.mqtt = mosquitto.settings()
    settings.memory.store = url
    async with StubOpenAIServer(reply="Happy to help with your trip.") as server:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
        # every reply the LLM's: no knowledge answering for it, no profile said back before it
        persona = load_persona(DEFAULT_PERSONA).model_copy(
            update={"knowledge": None, "noted": None, "welcome_name": None})
        async with open_runtime(settings, persona, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
            await rt.controller.sessions.start("card-9")
            await rt.controller.handle_text("My name is Ken.")
            pg_server.stop()
            try:
                answered = await asyncio.wait_for(rt.controller.handle_text("We want to see Kyoto."), 20)
                assert answered.reply_text == "Happy to help with your trip."  # the visitor is answered
                assert await listener.wait_for(lambda: any(
                    m.data["source"] == "memory" and pg_server.server in m.data["message"]
                    for m in listener.of("error")))
            finally:
                pg_server.start()
            await asyncio.wait_for(rt.memory.current.wait_stored(), 30)
    store = PostgresStore(url)
    try:
        dump = await store.dump_user("card-9")
    finally:
        await store.close()
    said = [t.text for t in dump.turns if t.role == "user"]
    assert said == ["My name is Ken.", "We want to see Kyoto."]
    assert [t.text for t in dump.turns if t.role == "assistant"].count("Happy to help with your trip.") == 2
