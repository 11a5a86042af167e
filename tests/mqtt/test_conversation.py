"""Outbound events over a real mosquitto: the sequence a body sees during a conversation."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from robot.core.events import (
                               Event,
                               GestureEvent,
                               MemoryEvent,
                               RobotState,
                               SpeechEvent,
                               StateEvent,
                               TranscriptEvent,
                               )
from robot.mqtt import MqttHooks

pytestmark = pytest.mark.asyncio


async def test_conversation_sequence(make_hooks, listener, loop_errors, simulated_turn) -> None:
    hooks: MqttHooks = await make_hooks()
    await simulated_turn(hooks.publish, "t1")
    assert await listener.wait_for(lambda: any(m.data.get("state") == "idle" for m in listener.of("state")))

    flow = [(m.kind, m.data.get("state") or m.data.get("name") or m.data.get("index")) for m in listener.messages
            if m.kind in ("state", "transcript", "speech", "gesture")]
    assert flow == [
        ("state", "listening"), ("transcript", None), ("state", "thinking"), ("gesture", "tilt_head"),
        ("state", "speaking"),
        ("speech", 0), ("gesture", "bow"),
        ("speech", 1), ("gesture", "show_map"), ("gesture", "point_right"),
        ("speech", 2),
        ("state", "idle"),
    ]
    for message in listener.messages:
        if message.kind in ("state", "transcript", "speech", "gesture"):
            assert message.data["schema"] == 1 and message.data["turn_id"] == "t1" and message.data["ts"] > 0
    assert listener.of("transcript")[0].data["text"] == "I'd like to see temples"
    assert listener.of("gesture")[0].data["reason"] == "state"


async def test_gestures_arrive_while_their_sentence_plays(make_hooks, listener, simulated_turn) -> None:
    hooks: MqttHooks = await make_hooks()
    await simulated_turn(hooks.publish, "t2")
    assert await listener.wait_for(lambda: len(listener.of("speech")) == len(simulated_turn.reply))
    speech = {m.data["index"]: m for m in listener.of("speech")}
    for gesture in (m for m in listener.of("gesture") if m.data["reason"] == "reply"):
        sentence = speech[gesture.data["sentence_index"]]
        audio_ends = sentence.data["ts"] + sentence.data["duration_s"]
        assert listener.messages.index(sentence) < listener.messages.index(gesture)
        assert gesture.at < audio_ends, f"{gesture.data['name']} came {gesture.at - audio_ends:.3f} s late"


async def test_late_body_gets_retained_state_and_online(make_hooks, make_listener, listener) -> None:
    hooks: MqttHooks = await make_hooks()
    hooks.publish(StateEvent(state=RobotState.THINKING))
    hooks.publish(StateEvent(state=RobotState.SPEAKING))
    assert await listener.wait_for(lambda: len(listener.of("state")) == 2)

    late = await make_listener()
    assert await late.wait_for(lambda: late.of("state") and late.of("status"))
    assert [(m.data["state"], m.retain) for m in late.of("state")] == [("speaking", True)]
    assert late.of("status")[0].data["status"] == "online"


@pytest.mark.parametrize("share", [False, True])
async def test_memory_summary_leaves_only_when_allowed(make_hooks, listener, share: bool) -> None:
    hooks: MqttHooks = await make_hooks(share_memory_text=share)
    hooks.publish(MemoryEvent(version=3, prompt_chars=900, prompt_tokens=210, summary="Ana likes temples."))
    assert await listener.wait_for(lambda: listener.of("memory"))
    data = listener.of("memory")[0].data
    assert (data["version"], data["prompt_chars"], data["prompt_tokens"]) == (3, 900, 210)
    assert data["summary"] == ("Ana likes temples." if share else None)


async def test_publish_from_another_thread(make_hooks, listener) -> None:
    hooks: MqttHooks = await make_hooks()
    worker = threading.Thread(target=hooks.publish, args=(TranscriptEvent(text="from a thread", audio_s=1.5),))
    worker.start()
    worker.join()
    assert await listener.wait_for(lambda: listener.of("transcript"))
    [message] = listener.of("transcript")
    assert (message.topic, message.data["text"], message.data["audio_s"]) == (
        "kiosk/robot1/transcript", "from a thread", 1.5)
    assert hooks.published == 1 and hooks.dropped == 0


async def test_every_event_kind_has_its_topic(make_hooks, listener) -> None:
    hooks: MqttHooks = await make_hooks()
    events: list[Event] = [StateEvent(state=RobotState.IDLE), TranscriptEvent(text="hi"),
                           SpeechEvent(text="Hello.", index=0, duration_s=0.5), GestureEvent(name="nod")]
    for event in events:
        hooks.publish(event)
    assert await listener.wait_for(lambda: len(listener.kinds("state", "transcript", "speech", "gesture")) == 4)
    assert {m.topic for m in listener.messages if m.kind != "status"} == {
        "kiosk/robot1/state", "kiosk/robot1/transcript", "kiosk/robot1/speech", "kiosk/robot1/gesture"}


async def test_clean_close_says_offline(make_hooks, listener) -> None:
    hooks: MqttHooks = await make_hooks()
    hooks.publish(SpeechEvent(text="Goodbye.", index=0, duration_s=0.5))
    await hooks.aclose()
    assert await listener.wait_for(lambda: listener.of("speech") and len(listener.of("status")) >= 2)
    assert [m.data["status"] for m in listener.of("status")][-1] == "offline"
    assert listener.of("status")[-1].data["reason"] == "shutdown"
    assert not hooks.connected


CONTROLLER = """
import asyncio, sys
from config.schema import MqttSettings
from robot.mqtt import MqttHooks
async def main():
    hooks = MqttHooks(MqttSettings(port=int(sys.argv[1]), keepalive_s=5))
    await hooks.start()
    assert await hooks.wait_connected(5)
    print("ready", flush=True)
    await asyncio.sleep(60)
asyncio.run(main())
"""


async def test_will_says_offline_when_the_controller_dies(mosquitto, listener) -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(mosquitto.port)], cwd=root,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        ready = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 15)  # type: ignore[union-attr]
        assert ready.strip() == b"ready"
        assert await listener.wait_for(lambda: listener.of("status"))
        os.kill(proc.pid, signal.SIGKILL)  # no DISCONNECT: the broker must send the will
        assert await listener.wait_for(lambda: listener.of("status")[-1].data["status"] == "offline")
        assert listener.of("status")[-1].data["reason"] == "connection lost"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
