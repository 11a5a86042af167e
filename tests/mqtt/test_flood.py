"""A flood of commands (issue 14, item 11; issue 50, item 2: 5,000 in about a second):
every one answered exactly once, the excess with "busy" (gathered: one error event lists
many ids), `stop` always taken, no event dropped without an error event saying so, and an
operator's `say` never enters the dialogue memory unless asked. A real mosquitto; the
RobotControl records calls (tests/mqtt/conftest.py)."""

from __future__ import annotations

import asyncio
import json

import aiomqtt
import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory.full_history import FullHistoryMemory
from robot.control.actions import RobotCommands
from robot.core.events import EventBus, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.mqtt.rate_limit import TokenBucket
from robot.speaking.speaker import TextSpeaker

FLOOD = 5000


async def flood(port: int, topic: str, commands: list[dict]) -> None:
    """One client sending as fast as the broker takes it (QoS 1), as a runaway script would."""
    async with aiomqtt.Client("127.0.0.1", port, max_inflight_messages=1000) as client:
        await asyncio.gather(*(client.publish(topic, json.dumps(c), qos=1) for c in commands))


@pytest.mark.asyncio
async def test_a_flood_gets_one_answer_per_command(mosquitto, make_hooks, listener, fake_control) -> None:
    hooks = await make_hooks(fake_control, commands_per_s=5, command_burst=20)
    commands = [{"command": "say", "text": f"line {i}", "id": f"f{i}"} for i in range(FLOOD)]
    commands[500] = {"command": "stop", "id": "stop-in-the-flood"}
    await flood(mosquitto.port, listener.topics.command, commands)

    def answered_ids() -> list[str]:
        ids = [m.data["id"] for m in listener.of("ack")]
        for error in (m.data for m in listener.of("error")):
            ids += (error["ids"] or [error["id"]]) if error["source"] == "command" else []
        return ids

    assert await listener.wait_for(lambda: len(answered_ids()) >= FLOOD, timeout=120), (
        len(answered_ids()), hooks.stats())
    await asyncio.sleep(0.6)  # nothing more may come (a gathered refusal waits 0.25 s)
    assert sorted(answered_ids()) == sorted(c["id"] for c in commands)  # each exactly once
    refusals = [m.data for m in listener.of("error")]
    assert all(e["message"].startswith("busy: more than 5 commands per second") and e["command"] == "say"
               for e in refusals)
    assert len(refusals) < FLOOD / 20  # gathered, so the outbox never fills
    refused = sum(len(e["ids"] or [e["id"]]) for e in refusals)
    ran = [c for c in fake_control.calls if c[0] == "say"]
    assert 20 <= len(ran) <= 20 + 5 * 60  # the burst, then 5 a second for however long it took
    assert refused == FLOOD - 1 - len(ran)
    assert ("stop_speaking",) in fake_control.calls  # never refused
    assert hooks.stats()["commands_busy"] == refused
    assert hooks.dropped == 0


def test_the_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=2, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.wait_s() == pytest.approx(0.5)
    now[0] = 0.5
    assert bucket.take() and not bucket.take()
    now[0] = 100.0
    assert sum(bucket.take() for _ in range(10)) == 3  # never more than the burst


@pytest.mark.asyncio
async def test_an_operators_say_is_remembered_only_if_asked(make_hooks, listener) -> None:
    memory = FullHistoryMemory("prompt")
    events = EventBus(RecordingPublisher())
    controller = DialogueController(persona=load_persona(DEFAULT_PERSONA), memory=memory, llm=None,  # type: ignore[arg-type]
                                    speaker=TextSpeaker("x", events, write=lambda _: None), events=events)
    await make_hooks(RobotCommands(controller))
    await listener.publish(listener.topics.command, json.dumps({"command": "say", "text": "Closing soon.", "id": "a"}))
    await listener.publish(listener.topics.command,
                           json.dumps({"command": "say", "text": "Welcome back.", "id": "b", "remember": True}))
    assert await listener.wait_for(lambda: len(listener.of("ack")) == 2), listener.messages
    assert [t.text for t in memory.turns] == ["Welcome back."]
