"""Only an operator may command the robot (issue 14, Authentication): a real mosquitto with
the shipped ACL (config/mosquitto/acl) and a password file; the robot's real MqttHooks."""

from __future__ import annotations

import asyncio
import json
import logging

import aiomqtt
import pytest

from robot.mqtt import MqttHooks
from robot.mqtt.connection import exposure_warning
from tests.mqtt.conftest import ACCOUNTS, account as client

COMMAND = "kiosk/robot1/command"


class Control:
    def __init__(self) -> None:
        self.said: list[str] = []

    async def say(self, text: str, remember: bool = False) -> None:
        self.said.append(text)


@pytest.mark.asyncio
async def test_only_the_operator_can_command_the_robot(secured) -> None:
    control = Control()
    hooks = MqttHooks(secured.settings(username="robot1", password=ACCOUNTS["robot1"]), control)  # type: ignore[arg-type]
    await hooks.start()
    try:
        assert await hooks.wait_connected(5), hooks.stats()
        async with client(secured, "operator-kiosk") as operator:
            await operator.subscribe("kiosk/robot1/#", qos=1)
            async with client(secured, "body-robot1") as body:  # may read, not command
                await body.publish(COMMAND, json.dumps({"command": "say", "text": "from the body", "id": "b"}), qos=1)
            with pytest.raises(aiomqtt.MqttError):  # anonymous: refused at CONNECT
                async with client(secured, None) as anonymous:
                    await anonymous.publish(COMMAND, json.dumps({"command": "say", "text": "anon"}), qos=1)
            await operator.publish(COMMAND, json.dumps({"command": "say", "text": "from the operator", "id": "o"}),
                                   qos=1)
            answers, commands_seen = [], []
            async with asyncio.timeout(5):
                async for message in operator.messages:
                    data = json.loads(message.payload)  # type: ignore[arg-type]
                    if str(message.topic) == COMMAND:
                        commands_seen.append(data["text"])
                    elif data["kind"] in ("ack", "error"):
                        answers.append((data["kind"], data["id"]))
                        if data["id"] == "o":
                            break
    finally:
        await hooks.aclose()
    assert control.said == ["from the operator"]  # the body's command never reached the robot
    assert answers == [("ack", "o")]
    assert commands_seen == ["from the operator"]  # the broker dropped the body's at once
    assert hooks.stats()["commands_rejected"] == 0


def test_an_exposed_connection_is_named(mosquitto) -> None:
    assert exposure_warning(mosquitto.settings(host="127.0.0.1")) is None
    assert exposure_warning(mosquitto.settings(host="localhost")) is None
    assert exposure_warning(mosquitto.settings(host="broker.example", username="r", tls=True)) is None
    warning = exposure_warning(mosquitto.settings(host="10.0.0.5"))
    assert warning and "anonymously and without TLS" in warning
    assert "without TLS" in (exposure_warning(mosquitto.settings(host="broker.example", username="r")) or "")


@pytest.mark.asyncio
async def test_the_warning_is_logged_at_start(mosquitto, caplog) -> None:
    caplog.set_level(logging.WARNING)
    hooks = MqttHooks(mosquitto.settings(host="192.0.2.10", close_timeout_s=0.1))
    await hooks.start()
    await hooks.aclose()
    assert any("192.0.2.10" in r.getMessage() and "anonymously" in r.getMessage() for r in caplog.records)
