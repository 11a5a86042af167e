"""The broker is absent at start, or killed mid-conversation: the conversation goes on."""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest

from robot.control.commands import CommandAckEvent
from robot.core.events import Event, RobotState, SpeechEvent, StateEvent
from robot.mqtt import MqttHooks

pytestmark = pytest.mark.asyncio

# Generous: publish() only appends to a deque (microseconds); anything that waited for the
# network would take at least a connect attempt or an operation timeout (seconds).
# publish() only queues: a call that waited on the dead broker would take its connect timeout (seconds);
# a busy machine can hold a plain call for a few scheduler slices, never this long.
BLOCKING_S = 0.5


class TimedPublisher:
    """Wraps hooks.publish as the dialogue loop calls it, and records the slowest call."""

    def __init__(self, hooks: MqttHooks) -> None:
        self.hooks = hooks
        self.slowest = 0.0

    def __call__(self, event: Event) -> None:
        start = time.perf_counter()
        self.hooks.publish(event)
        self.slowest = max(self.slowest, time.perf_counter() - start)


async def restart(mosquitto, listener, connect_gate) -> None:
    """Bring the broker back, let the body resubscribe first, then let the robot in."""
    connections = listener.connections
    mosquitto.start()
    assert await listener.wait_for(lambda: listener.connections > connections), "listener did not come back"
    connect_gate.set()


async def test_broker_killed_mid_conversation(mosquitto, make_hooks, listener, connect_gate,
                                              make_listener, simulated_turn, loop_errors) -> None:
    hooks: MqttHooks = await make_hooks()
    publish = TimedPublisher(hooks)
    talk = asyncio.create_task(_turns(simulated_turn, publish, ["t0", "t1", "t2"]))
    assert await listener.wait_for(lambda: any(m.data["turn_id"] == "t0" for m in listener.of("speech")))

    connect_gate.clear()
    mosquitto.kill()
    assert await listener.wait_for(lambda: not hooks.connected), "hooks did not notice the broker died"
    await asyncio.sleep(0.4)  # the conversation goes on with no broker at all
    assert not talk.done() and hooks.queued > 0
    await restart(mosquitto, listener, connect_gate)
    await asyncio.wait_for(talk, 10)  # the dialogue never saw a thing: no exception
    talk.result()

    assert await hooks.wait_connected(5)
    assert hooks.reconnects == 1 and hooks.dropped == 0
    assert await listener.wait_for(lambda: _said(listener, "t2", "idle"))
    sentences = {(m.data["turn_id"], m.data["index"]) for m in listener.of("speech")}
    assert sentences == {(t, i) for t in ("t0", "t1", "t2") for i in range(len(simulated_turn.reply))}
    assert publish.slowest < BLOCKING_S, f"publish() took {publish.slowest:.3f} s"
    # the restarted broker holds the current state and online status for any body arriving now
    late = await make_listener()
    assert await late.wait_for(lambda: late.of("state") and late.of("status"))
    assert late.of("state")[0].data["state"] == "idle" and late.of("state")[0].retain
    assert late.of("status")[0].data["status"] == "online"
    assert "broker connection back" in listener.of("error")[-1].data["message"]


async def test_state_republished_after_an_idle_outage(mosquitto, make_hooks, listener, connect_gate,
                                                      make_listener) -> None:
    hooks: MqttHooks = await make_hooks()
    hooks.publish(StateEvent(state=RobotState.LISTENING))
    assert await listener.wait_for(lambda: listener.of("state"))
    connect_gate.clear()
    mosquitto.kill()  # no persistence: the broker forgets the retained state
    await restart(mosquitto, listener, connect_gate)
    assert await hooks.wait_connected(5)
    assert hooks.reconnects == 1 and hooks.republished == 1
    late = await make_listener()
    assert await late.wait_for(lambda: late.of("state"))
    assert (late.of("state")[0].data["state"], late.of("state")[0].retain) == ("listening", True)


async def test_full_queue_drops_oldest_and_counts(mosquitto, make_hooks, listener, connect_gate) -> None:
    hooks: MqttHooks = await make_hooks(queue_size=5)
    connect_gate.clear()
    mosquitto.kill()
    assert await listener.wait_for(lambda: not hooks.connected)
    hooks.publish(StateEvent(state=RobotState.SPEAKING))
    for index in range(20):
        hooks.publish(SpeechEvent(text=f"sentence {index}", index=index, duration_s=0.1))
    assert (hooks.queued, hooks.dropped) == (5, 16)  # the state and sentences 0..14 went first

    await restart(mosquitto, listener, connect_gate)
    assert await listener.wait_for(lambda: len(listener.of("speech")) == 5)
    assert [m.data["index"] for m in listener.of("speech")] == [15, 16, 17, 18, 19]
    # the dropped state still reaches the body: re-published on reconnect
    assert listener.of("state")[-1].data["state"] == "speaking" and hooks.republished == 1
    assert "16 events dropped" in listener.of("error")[-1].data["message"]


async def test_broker_absent_at_start(mosquitto, make_hooks, listener, connect_gate, loop_errors, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="robot.mqtt.hooks")
    connect_gate.clear()
    mosquitto.kill()
    hooks: MqttHooks = await make_hooks(connect=False)  # start() returns with no broker there
    connect_gate.set()
    hooks.publish(StateEvent(state=RobotState.LISTENING))
    hooks.publish(SpeechEvent(text="Hello.", index=0, duration_s=0.5))
    await asyncio.sleep(0.2)  # a few failed attempts
    assert not hooks.connected and hooks.queued == 2
    # the reason names the exception type and its text
    assert re.fullmatch(r"MqttError: .+", hooks.stats()["last_error"]), hooks.stats()["last_error"]
    # one warning per outage, with the reason and the reconnect policy; the retries after it at DEBUG
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"MQTT broker 127.0.0.1:{mosquitto.port} unavailable ({hooks.stats()['last_error']}); "
                        "events queue up, reconnecting (retry forever, waits 0.05s x2 up to 0.3s, +20% jitter)"]
    retries = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG
               and r.getMessage().startswith("MQTT reconnect failed: MqttError: ")]
    assert 1 <= len(retries) <= 4  # 0.2 s of waits of 0.05 s, 0.1 s, ... with jitter: a few, not a busy loop

    connect_gate.clear()
    await restart(mosquitto, listener, connect_gate)
    assert await hooks.wait_connected(5)
    assert await listener.wait_for(lambda: listener.of("speech") and listener.of("state"))
    assert hooks.reconnects == 0 and hooks.dropped == 0


async def test_close_without_a_broker_is_prompt(mosquitto, make_hooks) -> None:
    mosquitto.kill()
    hooks: MqttHooks = await make_hooks(connect=False)
    hooks.publish(StateEvent(state=RobotState.IDLE))
    await asyncio.sleep(0.1)
    await asyncio.wait_for(hooks.aclose(), 10)  # the reconnect loop (retry forever) must not hold it
    assert hooks.dropped == 1  # the queued state never left: counted
    hooks.publish(StateEvent(state=RobotState.IDLE))  # after close: ignored, no error
    assert (hooks.queued, hooks.dropped, hooks.published, hooks.connections) == (1, 1, 0, 0)


async def _turns(turn, publish, turn_ids: list[str]) -> None:
    for turn_id in turn_ids:
        await turn(publish, turn_id)


def _said(listener, turn_id: str, state: str) -> bool:
    return any(m.data["turn_id"] == turn_id and m.data["state"] == state for m in listener.of("state"))


async def test_a_full_queue_keeps_answers_and_says_what_it_dropped(mosquitto, make_hooks, listener) -> None:
    """Issue 50, item 2: an overflow while connected (the broker slower than the events) drops
    other events before an operator's answers, and says so on the error topic."""
    hooks: MqttHooks = await make_hooks(queue_size=4)
    hooks.publish(CommandAckEvent(command="say", id="a1"))
    for index in range(10):
        hooks.publish(SpeechEvent(text=f"sentence {index}", index=index, duration_s=0.1))
    hooks.publish(CommandAckEvent(command="say", id="a2"))
    assert hooks.dropped >= 8
    assert await listener.wait_for(lambda: len(listener.of("ack")) == 2)
    assert [m.data["id"] for m in listener.of("ack")] == ["a1", "a2"]
    assert await listener.wait_for(lambda: any("events dropped: more than queue_size (4)" in m.data["message"]
                                               for m in listener.of("error")))
