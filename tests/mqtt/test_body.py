"""The example body (``robot body``) and the operator's ``--send``, against the real hooks."""

from __future__ import annotations

import asyncio
import re

import pytest

from robot.app.cli import build_parser, main
from robot.core.events import GestureEvent, RobotState, SpeechEvent, StateEvent
from robot.mqtt.body import BodyPrinter, body_settings, run_body, send_command


@pytest.mark.asyncio
async def test_body_prints_what_it_would_do(mosquitto, make_hooks, listener) -> None:
    hooks = await make_hooks()
    lines: list[str] = []
    body = asyncio.create_task(run_body(mosquitto.settings(), out=lines.append))
    try:
        assert await listener.wait_for(lambda: any("listening on kiosk/robot1/#" in line for line in lines))
        hooks.publish(StateEvent(state=RobotState.SPEAKING, turn_id="t1"))
        hooks.publish(SpeechEvent(text="Welcome!", index=0, duration_s=1.2, turn_id="t1"))
        hooks.publish(GestureEvent(name="bow", sentence_index=0, turn_id="t1"))
        assert await listener.wait_for(lambda: any("gesture bow" in line for line in lines)), lines
    finally:
        body.cancel()
        await asyncio.gather(body, return_exceptions=True)
    assert "state speaking: mouth moving, LEDs white" in lines
    assert "say #0 (1.2 s): lip-sync 'Welcome!'" in lines
    assert any(line.startswith("gesture bow (+") and "ms into sentence #0" in line for line in lines)


@pytest.mark.asyncio
async def test_send_command_returns_the_ack(mosquitto, make_hooks, fake_control) -> None:
    await make_hooks(fake_control)
    reply = await send_command(mosquitto.settings(), {"command": "say", "text": "Hi there"})
    assert reply is not None and reply["kind"] == "ack" and reply["command"] == "say"
    reply = await send_command(mosquitto.settings(), {"command": "jump"})
    assert reply is not None and reply["kind"] == "error" and "unknown command" in reply["message"]
    assert fake_control.calls == [("say", "Hi there")]


@pytest.mark.asyncio
async def test_body_says_why_it_waits_for_the_broker(mosquitto) -> None:
    mosquitto.kill()
    lines: list[str] = []
    body = asyncio.create_task(run_body(mosquitto.settings(), out=lines.append))
    try:
        for _ in range(200):
            if lines:
                break
            await asyncio.sleep(0.01)
    finally:
        body.cancel()
        await asyncio.gather(body, return_exceptions=True)
    assert len(lines) == 1  # then it waits 2 s before the next try
    assert re.fullmatch(r"broker unavailable \(MqttError: .+\); retrying in 2 s", lines[0]), lines


def test_printer_names_state_gestures() -> None:
    printer = BodyPrinter()
    assert printer.line("gesture", {"name": "tilt_head", "reason": "state"}) == "gesture tilt_head (for the state)"
    assert printer.line("status", {"status": "offline", "reason": "connection lost"}) == "robot offline (connection lost)"


def test_cli_overrides_settings() -> None:
    args = build_parser().parse_args(["body", "--port", "1999", "--robot-id", "kiosk7"])
    settings = body_settings(args.settings, host=args.host, port=args.port, prefix=args.prefix,
                             robot_id=args.robot_id)
    assert (settings.port, settings.robot_id, settings.host, args.send) == (1999, "kiosk7", "127.0.0.1", None)


def test_cli_refuses_a_wildcard_robot_id(capsys) -> None:
    with pytest.raises(ValueError, match="wildcards"):
        body_settings(None, robot_id="#")
    assert main(["body", "--robot-id", "#", "--send", '{"command": "stop"}']) == 2
    assert "bad option" in capsys.readouterr().out
