"""What the page shows besides the event stream: the robot as it is now, read on request
from the objects that own each part (controller, memory, MQTT hooks), never copied."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from robot.console.hub import EventHub
from robot.control.actions import RobotCommands
from robot.core.redact import redact
from robot.dialogue.sessions import Sessions


class RobotStatus:
    def __init__(self, commands: RobotCommands, hub: EventHub, persona_dir: Path,
                 mqtt_stats: Callable[[], dict[str, Any]] | None = None) -> None:
        self.commands = commands
        self.hub = hub
        self.persona_dir = persona_dir
        self.mqtt_stats = mqtt_stats

    async def notice_forgets(self) -> None:
        """A forget from another process (``robot memory forget``) counts before a read: the
        sessions publish ``forgotten``, and the hub drops the words it holds."""
        sessions = self.commands.controller.sessions
        if sessions is not None:
            await sessions.notice_forgets()

    def snapshot(self, personas: list[str]) -> dict[str, Any]:
        """The robot now; ``personas``: from ``personas()``, listed off the event loop."""
        controller = self.commands.controller
        memory = controller.memory
        summary = getattr(memory, "summary", None)
        path = self.commands.persona_path
        return {
            "state": controller.state.value,
            "muted": controller.muted,
            "persona": {"name": controller.persona.name, "file": path.name if path else None},
            "personas": personas,
            "memory": {
                # the visitor now talking (a store name); a single-user memory's user otherwise
                "user": getattr(memory, "visitor", None) or getattr(memory, "user", None) or "",
                # a summary may quote what an LLM server repeated: no known secret goes out
                "role_prompt": _clean(getattr(memory, "role_prompt", None)),
                "role_prompt_version": getattr(memory, "role_prompt_version", None),
                "summary_version": summary.version if summary else 0,
                "summary": _clean(summary.text) if summary else None,
                # what the robot knows of the visitor now talking: [label, values] per slot filled
                "profile": [list(line) for line in getattr(memory, "profile_lines", [])],
                "can_forget": hasattr(memory, "forget_user") and bool(getattr(memory, "visitor", True)),
            },
            "session": _session(controller.sessions),
            "mqtt": self.mqtt_stats() if self.mqtt_stats else None,
            "turns": [event.payload() for event in list(self.hub.turns)],
            "last_seq": self.hub.last_seq,
        }

    def personas(self) -> list[str]:
        """Persona files a `persona` command may load (the names it takes)."""
        return sorted(p.stem for p in self.persona_dir.glob("*.yaml"))


def _clean(text: str | None) -> str | None:
    return None if text is None else redact(text, shapes=False)


def _session(sessions: Sessions | None) -> dict[str, Any] | None:
    if sessions is None:
        return None
    return {"open": sessions.open, "visitor": sessions.visitor if sessions.open else None, "turns": sessions.turns}
