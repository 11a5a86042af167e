"""Fixtures for MQTT tests: a real mosquitto on a free port, a subscriber that records what
the body would see, the hooks under test, and a RobotControl that records calls.

Reuse (e.g. an end-to-end test with the real controller): put the test in tests/mqtt/,
or add ``pytest_plugins = ["tests.mqtt.conftest"]`` to a top-level tests/conftest.py.

Fixtures: ``mosquitto`` (Mosquitto: .port, .settings(**overrides), .kill(), .start()),
``listener`` (Listener on the default robot's topics), ``make_listener`` (async factory
of more listeners), ``make_hooks`` (async factory of
started MqttHooks, closed at teardown), ``fake_control`` (FakeControl), ``connect_gate``
(asyncio.Event: clear it to hold the hooks' next connection), ``loop_errors`` (asserts
nothing went to the event loop's exception handler), ``simulated_turn`` (one scripted turn of
state, transcript, speech and gesture events, published as the controller does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
import pytest_asyncio

from config.loader import DEFAULT_PERSONA, load_persona
from config.schema import MqttSettings
from robot.core.events import Event, GestureEvent, RobotState, SpeechEvent, StateEvent, TranscriptEvent
from robot.mqtt import MqttHooks, Topics

MOSQUITTO = shutil.which("mosquitto", path="/usr/sbin:/usr/local/sbin:/usr/bin:/usr/local/bin")
READY_TIMEOUT_S = 5.0
SHIPPED_CONF = Path(__file__).resolve().parents[2] / "config" / "mosquitto" / "mosquitto.conf"
# the shipped broker's queue per client, so that a flood test sees what a kiosk's broker does
QUEUE_LINE = next(line for line in SHIPPED_CONF.read_text().splitlines() if line.startswith("max_queued_messages "))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Mosquitto:
    """A broker of our own on loopback; kill() is a crash (SIGKILL), start() comes back on the same port."""

    def __init__(self, workdir: Path) -> None:
        if MOSQUITTO is None:
            pytest.fail("mosquitto is not installed (needed by the MQTT tests): run the project's install script")
        self.port = free_port()
        self.config = workdir / "mosquitto.conf"
        self.log = workdir / "mosquitto.log"
        # no persistence: a restarted broker has forgotten retained messages, as after a crash
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n{QUEUE_LINE}\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"mosquitto exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        pytest.fail(f"mosquitto did not listen on port {self.port} within {READY_TIMEOUT_S} s")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def settings(self, **overrides: Any) -> MqttSettings:
        """Settings that reach this broker, with backoff short enough for a fast test."""
        base: dict[str, Any] = {"enabled": True, "port": self.port, "reconnect_min_s": 0.05,
                                "reconnect_max_s": 0.3, "close_timeout_s": 1.0}
        return MqttSettings(**{**base, **overrides})


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


# --- the shipped broker configuration (config/mosquitto/) ---------------------------------

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "mosquitto"
# Accounts as config/mosquitto/README.md names them: a robot's is its robot_id.
ACCOUNTS = {"robot1": "robot-pw-1", "robot2": "robot-pw-2", "robot9": "robot-pw-9", "body-robot1": "body-pw-1",
            "operator-kiosk": "operator-pw-1", "operator-shop-b": "operator-pw-b"}
# What an administrator adds for a second site, as the ACL's comments say.
SECOND_SITE = "\nuser operator-shop-b\ntopic read shop-b/#\ntopic write shop-b/+/command\n"


def secured_broker(workdir: Path) -> Mosquitto:
    """The shipped mosquitto.conf and acl on a loopback port (plus a second site's operator),
    with a password file for ``ACCOUNTS``; no TLS. ``user root``: a broker started as root
    would otherwise run as "mosquitto", who cannot read the test's files."""
    passwd = workdir / "kiosk.passwd"
    passwd.touch()
    for user, password in ACCOUNTS.items():
        subprocess.run(["mosquitto_passwd", "-b", str(passwd), user, password], check=True, capture_output=True)
    acl = workdir / "kiosk.acl"
    acl.write_text((SHIPPED / "acl").read_text() + SECOND_SITE)
    broker = Mosquitto(workdir)
    kept = [line for line in (SHIPPED / "mosquitto.conf").read_text().splitlines()
            if line.split(" ")[0] not in ("listener", "certfile", "keyfile", "password_file", "acl_file")]
    broker.config.write_text("\n".join(kept + [f"listener {broker.port} 127.0.0.1", "persistence false", "user root",
                                               f"password_file {passwd}", f"acl_file {acl}", "log_type all"]) + "\n")
    broker.start()
    return broker


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Mosquitto]:
    broker = secured_broker(tmp_path)
    try:
        yield broker
    finally:
        broker.kill()


def account(broker: Mosquitto, user: str | None, **options: Any) -> aiomqtt.Client:
    """A client of ``broker`` logged in as ``user`` (None: anonymous)."""
    return aiomqtt.Client("127.0.0.1", broker.port, username=user, password=ACCOUNTS.get(user or ""), timeout=3,
                          **options)


# --- what the body sees -----------------------------------------------------------------


@dataclass(frozen=True)
class Received:
    topic: str
    kind: str  # last topic level
    data: dict[str, Any]
    retain: bool
    at: float  # wall clock on arrival, comparable with payload "ts"


class Listener:
    """Subscribes to a robot's topics and records every message; reconnects like a body would."""

    def __init__(self, settings: MqttSettings) -> None:
        self.settings = settings
        self.topics = Topics.from_settings(settings)
        self.messages: list[Received] = []
        self.bad_payloads: list[str] = []  # robot topics whose payload was not JSON
        self.connections = 0
        self._subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> "Listener":
        self._task = asyncio.create_task(self._run())
        assert await self.wait_for(lambda: self._subscribed.is_set()), "listener could not subscribe"
        return self

    async def _run(self) -> None:
        while True:
            try:
                async with aiomqtt.Client("127.0.0.1", self.settings.port, timeout=2) as client:
                    await client.subscribe(self.topics.all, qos=1)
                    self.connections += 1
                    self._subscribed.set()
                    async for message in client.messages:
                        self._record(message)
            except aiomqtt.MqttError:
                self._subscribed.clear()
                await asyncio.sleep(0.05)

    def _record(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        try:
            data = json.loads(message.payload)  # type: ignore[arg-type]
        except ValueError:
            data = {"raw": message.payload}
            if topic != self.topics.command:  # tests send junk commands; the robot never sends junk
                self.bad_payloads.append(topic)
        self.messages.append(Received(topic, topic.rsplit("/", 1)[-1], data, message.retain, time.time()))

    def of(self, kind: str) -> list[Received]:
        return [m for m in self.messages if m.kind == kind]

    def kinds(self, *wanted: str) -> list[str]:
        return [m.kind for m in self.messages if m.kind in wanted]

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def publish(self, topic: str, payload: str | bytes, retain: bool = False) -> None:
        """Send as an operator would (a separate connection, QoS 1)."""
        async with aiomqtt.Client("127.0.0.1", self.settings.port) as client:
            await client.publish(topic, payload, qos=1, retain=retain)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        assert not self.bad_payloads, f"the robot published non-JSON on {self.bad_payloads}"


@pytest_asyncio.fixture
async def make_listener(mosquitto: Mosquitto) -> AsyncIterator[Callable[..., Any]]:
    """``await make_listener(**settings_overrides)`` -> a started Listener (a body arriving now)."""
    made: list[Listener] = []

    async def make(**overrides: Any) -> Listener:
        made.append(Listener(mosquitto.settings(**overrides)))
        return await made[-1].start()

    try:
        yield make
    finally:
        for listening in made:
            await listening.stop()


@pytest_asyncio.fixture
async def listener(make_listener: Callable[..., Any]) -> Listener:
    """A body listening to the default robot (kiosk/robot1/#) from the start of the test."""
    return await make_listener()


# --- the robot side -----------------------------------------------------------------------


class FakeControl:
    """Records each RobotControl call that succeeded; ``fail[name]`` makes that call raise.

    switch_persona and reload really load the persona file, so a broken one raises
    ConfigError as the controller's would.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail: dict[str, Exception] = {}
        self.persona: Path | None = None

    def _check(self, name: str) -> None:
        if name in self.fail:
            raise self.fail[name]

    async def say(self, text: str, remember: bool = False) -> None:
        self._check("say")
        self.calls.append(("say", text, "remember") if remember else ("say", text))

    async def stop_speaking(self) -> None:
        self._check("stop_speaking")
        self.calls.append(("stop_speaking",))

    def mute(self) -> None:
        self._check("mute")
        self.calls.append(("mute",))

    def unmute(self) -> None:
        self._check("unmute")
        self.calls.append(("unmute",))

    async def switch_persona(self, path: Path) -> None:
        self._check("switch_persona")
        load_persona(path)  # raises ConfigError like the real one
        self.persona = path
        self.calls.append(("switch_persona", path))

    async def reload(self) -> None:
        self._check("reload")
        if self.persona is not None:
            load_persona(self.persona)
        self.calls.append(("reload",))

    async def forget(self, user: str) -> str:
        self._check("forget")
        self.calls.append(("forget", user))
        return f"deleted 3 turns and 1 summary of {user}"


@pytest.fixture
def fake_control() -> FakeControl:
    return FakeControl()


@pytest_asyncio.fixture
async def make_hooks(mosquitto: Mosquitto) -> AsyncIterator[Callable[..., Any]]:
    """``await make_hooks(control=None, connect=True, **settings_overrides)`` -> started MqttHooks."""
    made: list[MqttHooks] = []

    async def make(control: Any = None, connect: bool = True, **overrides: Any) -> MqttHooks:
        hooks = MqttHooks(mosquitto.settings(**overrides), control)
        made.append(hooks)
        await hooks.start()
        if connect:
            assert await hooks.wait_connected(5), f"hooks did not connect: {hooks.stats()}"
        return hooks

    try:
        yield make
    finally:
        for hooks in made:
            await hooks.aclose()


# --- a conversation as the controller will publish it -------------------------------------

class SimulatedTurn:
    """What the controller publishes in one turn, at the moments it publishes it:
    ``await simulated_turn(publish, turn_id)``. ``reply`` lists (sentence, gestures)."""

    sentence_s = 0.25  # audio length of each simulated sentence
    reply = [("Welcome to our agency!", ["bow"]),
             ("Kyoto and Nara make a fine pair.", ["show_map", "point_right"]),
             ("When would you like to go?", [])]

    async def __call__(self, publish: Callable[[Event], None], turn_id: str) -> None:
        persona = load_persona(DEFAULT_PERSONA)
        publish(StateEvent(state=RobotState.LISTENING, turn_id=turn_id))
        await asyncio.sleep(0.05)
        publish(TranscriptEvent(text="I'd like to see temples", audio_s=1.6, turn_id=turn_id))
        publish(StateEvent(state=RobotState.THINKING, turn_id=turn_id))
        publish(GestureEvent(name=persona.state_gestures["thinking"], reason="state", turn_id=turn_id))
        await asyncio.sleep(0.05)
        publish(StateEvent(state=RobotState.SPEAKING, turn_id=turn_id))
        for index, (text, gestures) in enumerate(self.reply):
            # the sentence starts playing: its speech event, then its gestures, then the audio
            publish(SpeechEvent(text=text, index=index, duration_s=self.sentence_s, turn_id=turn_id))
            for name in gestures:
                assert name in persona.gestures
                publish(GestureEvent(name=name, sentence_index=index, turn_id=turn_id))
            await asyncio.sleep(self.sentence_s)  # audio playing
        publish(StateEvent(state=RobotState.IDLE, turn_id=turn_id))


@pytest.fixture
def simulated_turn() -> SimulatedTurn:
    return SimulatedTurn()


@pytest.fixture
def connect_gate(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """While cleared, MqttHooks may not connect: lets a test bring its listener back to a
    restarted broker before the hooks flush their queue into it. Starts open (set)."""
    import robot.mqtt.hooks as hooks_module

    gate = asyncio.Event()
    gate.set()
    real = hooks_module.make_client

    @contextlib.asynccontextmanager
    async def gated(*args: Any, **kwargs: Any) -> AsyncIterator[aiomqtt.Client]:
        await gate.wait()
        async with real(*args, **kwargs) as client:
            yield client

    monkeypatch.setattr(hooks_module, "make_client", gated)
    return gate


@pytest_asyncio.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """Everything that reached the loop's exception handler (an exception nobody caught)."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        yield errors
    finally:
        loop.set_exception_handler(previous)
    assert not errors, f"exceptions escaped to the event loop: {errors}"
