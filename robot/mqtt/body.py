"""``robot body``: an example body. Subscribes to one robot's topics and prints what a real
body (head, arms, LEDs, a face on a screen) would do, with each gesture's offset from the
start of its sentence, so gesture timing can be checked by eye.

Also ``robot body --send JSON``: send one command and print its ack or error.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomqtt
from pydantic import ValidationError

from config.loader import load_settings  # load_settings applies MQTT_USERNAME/PASSWORD
from config.schema import MqttSettings
from robot.core.retry import RetryPolicy, describe_exception
from robot.mqtt.connection import make_client
from robot.mqtt.topics import Topics

# What each state looks like on the body.
STATE_LOOKS = {
    "idle": "face neutral, LEDs dim blue",
    "listening": "face attentive, LEDs green",
    "thinking": "eyes up, LEDs amber pulsing",
    "speaking": "mouth moving, LEDs white",
}
RETRY_S = 2.0
# A body (a bench tool) just tries again every RETRY_S seconds, for as long as it runs.
RECONNECT = RetryPolicy(attempts=None, first_delay_s=RETRY_S, max_delay_s=RETRY_S, multiplier=1.0)


class BodyPrinter:
    """Turns one robot message into one line of what the body does."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sentence_started: dict[tuple[str | None, int], float] = {}

    def line(self, kind: str, data: dict[str, Any]) -> str | None:
        handler = getattr(self, f"_on_{kind}", None)
        return handler(data) if handler else f"{kind}: {json.dumps(data)}"

    def _on_status(self, d: dict[str, Any]) -> str:
        return f"robot {d.get('status')} ({d.get('reason')})"

    def _on_state(self, d: dict[str, Any]) -> str:
        state = d.get("state")
        return f"state {state}: {STATE_LOOKS.get(state, 'no look defined')}"

    def _on_transcript(self, d: dict[str, Any]) -> str:
        return f"heard: {d.get('text')!r}"

    def _on_speech(self, d: dict[str, Any]) -> str:
        self._sentence_started[(d.get("turn_id"), d.get("index", -1))] = self._clock()
        return f"say #{d.get('index')} ({d.get('duration_s', 0):.1f} s): lip-sync {d.get('text')!r}"

    def _on_gesture(self, d: dict[str, Any]) -> str:
        name, index = d.get("name"), d.get("sentence_index")
        if d.get("reason") == "state" or index is None:
            return f"gesture {name} (for the state)"
        started = self._sentence_started.get((d.get("turn_id"), index))
        when = f"+{(self._clock() - started) * 1000:.0f} ms into sentence #{index}" if started else f"sentence #{index}"
        return f"gesture {name} ({when})"

    def _on_memory(self, d: dict[str, Any]) -> str:
        return f"memory rewritten: version {d.get('version')}, {d.get('prompt_tokens')} tokens"

    def _on_error(self, d: dict[str, Any]) -> str:
        extra = f" [{d['command']} id={d.get('id')}]" if d.get("command") else ""
        return f"ERROR from {d.get('source')}{extra}: {d.get('message')}"

    def _on_ack(self, d: dict[str, Any]) -> str:
        return f"command {d.get('command')} done (id={d.get('id')}): {d.get('detail')}"

    def _on_command(self, d: dict[str, Any]) -> str:
        return f"command sent to the robot: {json.dumps(d)}"


async def run_body(settings: MqttSettings, out: Callable[[str], None] = print) -> None:
    """Print what a body would do, forever; reconnects when the broker goes away."""
    topics, printer = Topics.from_settings(settings), BodyPrinter()
    identifier = f"{settings.robot_id}-body-{secrets.token_hex(3)}"
    backoff = RECONNECT.backoff()
    while True:
        try:
            async with make_client(settings, identifier, will=None) as client:
                await client.subscribe(topics.all, qos=settings.qos)
                backoff.reset()
                out(f"listening on {topics.all} at {settings.host}:{settings.port}")
                async for message in client.messages:
                    kind = str(message.topic).rsplit("/", 1)[-1]
                    out(printer.line(kind, _json(message.payload)) or "")
        except aiomqtt.MqttError as exc:
            delay = backoff.next()
            out(f"broker unavailable ({describe_exception(exc)}); retrying in {delay:g} s")
            await asyncio.sleep(delay)


async def send_command(settings: MqttSettings, command: dict[str, Any], timeout: float = 5.0) -> dict[str, Any] | None:
    """Send one command and return its ack or error payload (None if none came in time)."""
    topics = Topics.from_settings(settings)
    command = {"id": secrets.token_hex(4), **command}
    async with make_client(settings, f"{settings.robot_id}-operator-{secrets.token_hex(3)}", will=None) as client:
        await client.subscribe(topics.ack, qos=settings.qos)
        await client.subscribe(topics.error, qos=settings.qos)
        await client.publish(topics.command, json.dumps(command), qos=settings.qos)
        try:
            async with asyncio.timeout(timeout):
                async for message in client.messages:
                    reply = _json(message.payload)
                    if reply.get("id") == command["id"]:
                        return reply
        except TimeoutError:
            return None
    return None


def _json(payload: Any) -> dict[str, Any]:
    try:
        data = json.loads(payload)
    except (TypeError, ValueError):
        return {"raw": str(payload)}
    return data if isinstance(data, dict) else {"value": data}


# --- command line ----------------------------------------------------------------------


def body_settings(settings_file: Path | None, **overrides: str | int | None) -> MqttSettings:
    """The settings file's ``mqtt:`` section with the command line's host/port/prefix/robot_id."""
    settings = load_settings(settings_file).mqtt
    # validated again (model_copy would not), so that a --robot-id '#' is refused
    return MqttSettings.model_validate({**settings.model_dump(), **{k: v for k, v in overrides.items() if v is not None}})


def body_main(settings_file: Path | None, send: str | None, **overrides: str | int | None) -> int:
    """``robot body``: watch the robot's events, or ``send`` one command and print its answer."""
    try:
        settings = body_settings(settings_file, **overrides)
    except ValidationError as exc:
        print(f"robot body: bad option: {exc.errors(include_url=False)[0]['msg']}")
        return 2
    if send is None:
        try:
            asyncio.run(run_body(settings))
        except KeyboardInterrupt:
            pass
        return 0
    return asyncio.run(_send_main(settings, send))


async def _send_main(settings: MqttSettings, text: str) -> int:
    try:
        command = json.loads(text)
    except ValueError as exc:
        print(f"--send: not JSON: {exc}")
        return 2
    if not isinstance(command, dict):
        print('--send: a command is a JSON object, e.g. {"command": "stop"}')
        return 2
    try:
        reply = await send_command(settings, command)
    except aiomqtt.MqttError as exc:
        print(f"broker unavailable: {exc}")
        return 1
    if reply is None:
        print("no answer from the robot (is it running and connected?)")
        return 1
    print(BodyPrinter().line(str(reply.get("kind")), reply))
    return 0 if reply.get("kind") == "ack" else 1
