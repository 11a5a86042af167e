"""Inbound commands: validation on its own, then each command through a real broker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA
from robot.control.commands import CommandRejected, Forget, Say, Stop, SwitchPersona, parse_command, persona_file

MAX = 4096

# --- validation, no broker ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"command": "say", "text": "Hello"}', Say(command="say", text="Hello")),
        ('{"command": "stop", "id": "op-1"}', Stop(command="stop", id="op-1")),
        ('{"command": "persona", "path": "guide"}', SwitchPersona(command="persona", path="guide")),
        ('{"command": "forget", "user": "ana"}', Forget(command="forget", user="ana")),
    ],
)
def test_valid_commands_parse(payload: str, expected: object) -> None:
    assert parse_command(payload.encode(), MAX) == expected


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"command": "say", "text": "Hi"', "malformed JSON"),
        (b"\xff\xfe", "malformed JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"stop"', "must be a JSON object"),
        (b'{"text": "Hi"}', "missing field 'command'"),
        (b'{"command": "dance"}', "unknown command 'dance'"),
        (b'{"command": "say"}', "field 'text': Field required"),
        (b'{"command": "say", "text": ""}', "field 'text'"),
        (b'{"command": "say", "text": 42}', "field 'text'"),
        (b'{"command": "stop", "now": true}', "field 'now': unknown field"),
        (b'{"command": "forget"}', "field 'user'"),
        (b'{"command": "say", "text": "' + b"a" * MAX + b'"}', "command too large"),
    ],
)
def test_invalid_commands_are_rejected(payload: bytes, reason: str) -> None:
    with pytest.raises(CommandRejected) as caught:
        parse_command(payload, MAX)
    assert reason in caught.value.reason


def test_rejection_keeps_name_and_id_for_the_error_event() -> None:
    with pytest.raises(CommandRejected) as caught:
        parse_command(b'{"command": "say", "id": "x7"}', MAX)
    event = caught.value.event()
    assert (event.source, event.command, event.id) == ("command", "say", "x7")


def test_persona_files_stay_in_their_directory(tmp_path: Path) -> None:
    assert persona_file("guide", tmp_path) == (tmp_path / "guide.yaml").resolve()
    assert persona_file("guide.yml", tmp_path) == (tmp_path / "guide.yml").resolve()
    for escape in ("../secrets", "/etc/passwd", "a/../../b.yaml"):
        with pytest.raises(CommandRejected):
            persona_file(escape, tmp_path)


# --- through the broker -------------------------------------------------------------------

@pytest.fixture
def persona_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "personas"
    folder.mkdir()
    shutil.copy(DEFAULT_PERSONA, folder / "guide.yaml")
    shutil.copytree(DEFAULT_PERSONA.parent / "knowledge", folder / "knowledge")  # relative to the persona
    (folder / "broken.yaml").write_text("name: Broken\nrole_prompt: ''\n")
    return folder


async def send(listener, *commands: dict | str | bytes, topic: str | None = None, retain: bool = False) -> None:
    for command in commands:
        payload = json.dumps(command) if isinstance(command, dict) else command
        await listener.publish(topic or listener.topics.command, payload, retain=retain)


def answers(listener) -> list[tuple[str, str | None]]:
    return [(m.kind, m.data.get("id")) for m in listener.messages if m.kind in ("ack", "error")]


@pytest.mark.asyncio
async def test_each_command_runs_and_is_acked(make_hooks, listener, fake_control, persona_dir) -> None:
    await make_hooks(fake_control, persona_dir=persona_dir)
    commands = [
        {"command": "say", "text": "One moment please.", "id": "1"},
        {"command": "stop", "id": "2"},
        {"command": "mute", "id": "3"},
        {"command": "unmute", "id": "4"},
        {"command": "persona", "path": "guide", "id": "5"},
        {"command": "reload", "id": "6"},
        {"command": "forget", "user": "ana", "id": "7"},
    ]
    await send(listener, *commands)
    assert await listener.wait_for(lambda: len(listener.of("ack")) == len(commands)), answers(listener)
    assert fake_control.calls == [
        ("say", "One moment please."), ("stop_speaking",), ("mute",), ("unmute",),
        ("switch_persona", (persona_dir / "guide.yaml").resolve()), ("reload",), ("forget", "ana"),
    ]
    acks = {m.data["id"]: m.data for m in listener.of("ack")}
    assert acks["7"]["detail"] == "deleted 3 turns and 1 summary of ana"
    assert acks["5"]["command"] == "persona" and "memory kept" in acks["5"]["detail"]
    assert not listener.of("error")


@pytest.mark.asyncio
async def test_bad_commands_change_nothing(make_hooks, listener, fake_control) -> None:
    hooks = await make_hooks(fake_control, max_command_bytes=256)
    bad = [b"not json", b"[]", {"command": "dance"}, {"command": "say"}, {"command": "say", "text": "x" * 300},
           {"command": "mute", "extra": 1}, {"command": "persona", "path": "../../etc/passwd"}, b""]
    await send(listener, *bad)
    assert await listener.wait_for(lambda: len(listener.of("error")) == len(bad)), answers(listener)
    assert fake_control.calls == []
    assert not listener.of("ack")
    assert {m.data["source"] for m in listener.of("error")} == {"command"}
    assert hooks.stats()["commands_rejected"] == len(bad)
    # the robot still works afterwards
    await send(listener, {"command": "stop"})
    assert await listener.wait_for(lambda: listener.of("ack"))
    assert fake_control.calls == [("stop_speaking",)]


@pytest.mark.asyncio
async def test_failing_control_reports_an_error(make_hooks, listener, fake_control, persona_dir) -> None:
    await make_hooks(fake_control, persona_dir=persona_dir)
    fake_control.fail["say"] = RuntimeError("speaker unplugged")
    await send(listener, {"command": "persona", "path": "broken", "id": "p"},
               {"command": "persona", "path": "missing", "id": "m"}, {"command": "say", "text": "hi", "id": "s"})
    assert await listener.wait_for(lambda: len(listener.of("error")) == 3), answers(listener)
    errors = {m.data["id"]: m.data for m in listener.of("error")}
    assert "broken.yaml" in errors["p"]["message"] and "role_prompt" in errors["p"]["message"]
    assert "file not found" in errors["m"]["message"]
    assert errors["s"]["message"] == "say failed: speaker unplugged" and errors["s"]["command"] == "say"
    assert fake_control.calls == []


@pytest.mark.asyncio
async def test_commands_only_on_the_command_topic(make_hooks, listener, fake_control) -> None:
    await make_hooks(fake_control)
    stop = {"command": "stop"}
    await send(listener, stop, topic="kiosk/robot2/command")  # another robot's
    await send(listener, stop, topic="kiosk/robot1/command/extra")
    await send(listener, stop, topic="kiosk/robot1/commands")
    await send(listener, {"command": "mute", "id": "barrier"})  # commands run in order: once it is acked, the rest were ignored
    assert await listener.wait_for(lambda: listener.of("ack"))
    assert fake_control.calls == [("mute",)]
    assert not listener.of("error")


@pytest.mark.asyncio
async def test_retained_command_is_not_run(mosquitto, make_hooks, listener, fake_control) -> None:
    await send(listener, {"command": "say", "text": "again and again", "id": "r"}, retain=True)
    await make_hooks(fake_control)  # connects after the command was stored: gets it as retained
    assert await listener.wait_for(lambda: listener.of("error"))
    assert "retained" in listener.of("error")[0].data["message"]
    assert fake_control.calls == []


@pytest.mark.asyncio
async def test_commands_wait_for_a_controller(make_hooks, listener, fake_control) -> None:
    hooks = await make_hooks(None)
    await send(listener, {"command": "stop", "id": "early"})
    assert await listener.wait_for(lambda: listener.of("error"))
    assert "no controller" in listener.of("error")[0].data["message"]
    hooks.set_control(fake_control)
    await send(listener, {"command": "stop", "id": "late"})
    assert await listener.wait_for(lambda: listener.of("ack"))
    assert fake_control.calls == [("stop_speaking",)]
