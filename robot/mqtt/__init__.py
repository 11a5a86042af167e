"""MQTT hooks: events out to the robot's body, validated commands in. See docs/mqtt.md."""

from robot.control.commands import CommandAckEvent, CommandErrorEvent
from robot.mqtt.hooks import MqttHooks
from robot.mqtt.topics import Topics

__all__ = ["CommandAckEvent", "CommandErrorEvent", "MqttHooks", "Topics"]
