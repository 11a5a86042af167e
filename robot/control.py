"""What a body or an operator may ask the running robot to do (MQTT commands call this)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class RobotControl(Protocol):
    async def say(self, text: str) -> None:
        """Speak the given text now (queued behind the sentence being spoken)."""
        ...

    async def stop_speaking(self) -> None:
        """Stop speaking at once; drop the rest of the current reply's audio."""
        ...

    def mute(self) -> None:
        """Ignore the microphone until unmute()."""
        ...

    def unmute(self) -> None: ...

    async def switch_persona(self, path: Path) -> None:
        """Load another persona file; both memory stores are kept. Raises ConfigError."""
        ...

    async def reload(self) -> None:
        """Re-read the persona file and settings that can change live. Raises ConfigError."""
        ...

    async def forget(self, user: str) -> str:
        """Delete all of a user's memory; returns a one-line account of what went."""
        ...
