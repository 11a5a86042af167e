"""The shipped broker ACL (config/mosquitto/acl) on a real mosquitto (issue 28, item 2):
every event kind the robot publishes passes, with the kinds read from the code itself
(so a new kind fails here until the ACL lists it), and every forbidden message is dropped:
a robot commanding itself or speaking for another robot, a body publishing anything or
reading the commands, an operator publishing events or commanding another site's robots,
an anonymous client. Accounts are the per-robot pattern (the account is the robot_id), a
body per robot, and an operator per site."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import aiomqtt
import pytest

from config.schema import MqttSettings
from robot.mqtt import Topics
from tests.mqtt.conftest import Mosquitto, account

ROBOT_CODE = Path(__file__).resolve().parents[2] / "robot"


def published_kinds() -> set[str]:
    """Every topic kind the robot publishes, from its code: each event class's
    ``kind: ClassVar[str] = "..."`` anywhere under robot/, and each payload built as a dict
    literal with a "kind" (the status and its will)."""
    kinds: set[str] = set()
    for path in ROBOT_CODE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "kind"
                    and isinstance(node.value, ast.Constant)):
                kinds.add(node.value.value)
            elif isinstance(node, ast.Dict):
                kinds.update(v.value for k, v in zip(node.keys, node.values)
                             if isinstance(k, ast.Constant) and k.value == "kind" and isinstance(v, ast.Constant))
    kinds.discard("event")  # the base class's
    return kinds


def test_the_kinds_come_from_the_code():
    kinds = published_kinds()
    assert {"status", "state", "speech", "forgotten", "session", "interruption", "ignored", "ack", "error"} <= kinds
    assert "command" not in kinds


class Watcher:
    """A logged-in client that records what reaches it."""

    def __init__(self, broker: Mosquitto, user: str, *subscriptions: str) -> None:
        self.client = account(broker, user)
        self.subscriptions = subscriptions
        self.got: list[tuple[str, str]] = []  # (topic, the payload's "tag")
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> "Watcher":
        await self.client.__aenter__()
        for topic in self.subscriptions:
            await self.client.subscribe(topic, qos=1)
        self._task = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async for message in self.client.messages:
            self.got.append((str(message.topic), json.loads(message.payload)["tag"]))  # type: ignore[arg-type]

    def tags(self) -> set[str]:
        return {tag for _, tag in self.got}

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self.client.__aexit__(*exc)


async def send(broker: Mosquitto, user: str, messages: list[tuple[str, str]]) -> None:
    """Publish (topic, tag) pairs as ``user``, QoS 1: each is through the broker (delivered
    or dropped) when its PUBACK is back."""
    async with account(broker, user) as client:
        for topic, tag in messages:
            await client.publish(topic, json.dumps({"tag": tag}), qos=1)


async def arrived(condition, timeout_s: float = 5.0) -> None:
    """Until what must arrive has (then a moment more, for what must not)."""
    try:
        async with asyncio.timeout(timeout_s):
            while not condition():
                await asyncio.sleep(0.01)
    except TimeoutError:
        return  # the assertions below say what is missing
    await asyncio.sleep(0.3)


async def test_every_event_kind_passes_and_every_forbidden_message_is_dropped(tmp_path, secured):
    robot1 = Topics.from_settings(MqttSettings(prefix="kiosk", robot_id="robot1"))
    kinds = sorted(published_kinds())
    async with (Watcher(secured, "robot1", robot1.command) as robot,
                Watcher(secured, "body-robot1", robot1.all) as body,
                Watcher(secured, "operator-kiosk", "kiosk/#", "shop-b/#") as operator,
                Watcher(secured, "robot9", "shop-b/robot9/command") as robot9,
                Watcher(secured, "operator-shop-b", "shop-b/#", "kiosk/#") as other_site):
        # allowed: the robot's events; the operator's command; the other site's own command
        await send(secured, "robot1", [(robot1.of(kind), f"event:{kind}") for kind in kinds])
        await send(secured, "operator-kiosk", [(robot1.command, "command:operator")])
        await send(secured, "operator-shop-b", [("shop-b/robot9/command", "command:shop-b")])
        # forbidden
        await send(secured, "robot1", [(robot1.command, "x:robot-commands-itself"),
                                       ("kiosk/robot2/state", "x:robot-speaks-for-robot2"),
                                       (robot1.of("no-such-kind"), "x:robot-unknown-kind"),
                                       (robot1.of("state/extra"), "x:robot-deeper-topic")])
        await send(secured, "body-robot1", [(robot1.command, "x:body-commands"),
                                            (robot1.of("state"), "x:body-speaks-for-robot")])
        await send(secured, "operator-kiosk", [(robot1.of("state"), "x:operator-speaks-for-robot"),
                                               ("shop-b/robot9/command", "x:operator-commands-other-site")])
        await send(secured, "robot2", [(robot1.of("speech"), "x:robot2-speaks-for-robot1")])
        with pytest.raises(aiomqtt.MqttError):  # anonymous: refused at CONNECT
            await send(secured, None, [(robot1.command, "x:anonymous")])  # type: ignore[arg-type]
        events = {f"event:{kind}" for kind in kinds}
        await arrived(lambda: events <= operator.tags() and "command:operator" in robot.tags()
                      and "command:shop-b" in robot9.tags())

    missing = events - operator.tags()
    assert not missing, f"the shipped ACL drops events the robot publishes: {sorted(missing)}"
    assert events <= body.tags()  # the body sees every event of its robot ...
    assert "command:operator" not in body.tags()  # ... but not the commands sent to it
    assert robot.tags() == {"command:operator"}  # the robot reads only its operator's commands
    assert robot9.tags() == {"command:shop-b"}  # the other site's robot: only its own site's operator
    assert "command:shop-b" not in operator.tags()  # an operator watches only their site
    assert not any(tag.startswith(("event:", "command:operator")) for tag in other_site.tags())
    leaked = sorted(tag for w in (robot, body, operator, robot9, other_site) for tag in w.tags() if tag.startswith("x:"))
    assert not leaked, f"forbidden messages went through: {leaked}"
    log = secured.log.read_text()
    assert "Denied PUBLISH" in log and "forgotten" not in "".join(
        line for line in log.splitlines() if "Denied PUBLISH" in line)
