"""Topic names under ``<prefix>/<robot_id>/``, and which event goes where.

Every outbound event goes to ``<base>/<event.kind>`` (state, transcript, speech, gesture,
memory, error, turn, session, forgotten, ack, ...), so a new event kind needs no change here.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.schema import MqttSettings
from robot.core.events import Event, StateEvent

# Kinds the broker keeps for late subscribers: a body that starts after the robot must
# still learn the current state and whether the controller is online.
RETAINED_KINDS = frozenset({StateEvent.kind})


@dataclass(frozen=True)
class Topics:
    base: str

    @classmethod
    def from_settings(cls, settings: MqttSettings) -> "Topics":
        return cls(base=f"{settings.prefix.strip('/')}/{settings.robot_id}")

    def of(self, kind: str) -> str:
        return f"{self.base}/{kind}"

    def for_event(self, event: Event) -> str:
        return self.of(event.kind)

    @property
    def state(self) -> str:
        return self.of("state")

    @property
    def status(self) -> str:
        """online / offline; the broker publishes the offline will if we vanish."""
        return self.of("status")

    @property
    def command(self) -> str:
        return self.of("command")

    @property
    def error(self) -> str:
        return self.of("error")

    @property
    def ack(self) -> str:
        return self.of("ack")

    @property
    def all(self) -> str:
        """Wildcard a body subscribes to: everything of this robot."""
        return f"{self.base}/#"


def is_retained(event: Event) -> bool:
    return event.kind in RETAINED_KINDS
