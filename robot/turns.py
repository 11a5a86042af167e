"""What one turn produced, and when: the objects the controller hands to the log and the simulator."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

turn_log = logging.getLogger("robot.turn")


@dataclass
class TurnTimings:
    """Monotonic timestamps of a turn's stages; ``end_of_speech`` is the reference."""

    end_of_speech: float
    transcript_ready: float | None = None
    first_token: float | None = None
    first_audio: float | None = None
    done: float | None = None

    def relative(self) -> dict[str, float | None]:
        """Seconds after end of speech, per stage (None: the stage did not happen)."""

        def since(t: float | None) -> float | None:
            return None if t is None else round(t - self.end_of_speech, 3)

        return {
            "transcript_s": since(self.transcript_ready),
            "first_token_s": since(self.first_token),
            "first_audio_s": since(self.first_audio),
            "done_s": since(self.done),
        }


@dataclass
class TurnResult:
    turn_id: str
    user_text: str
    reply_text: str
    timings: TurnTimings
    audio_s: float = 0.0  # customer speech transcribed (0 for typed turns)
    stt_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    gestures: list[str] = field(default_factory=list)
    wall_time: float = field(default_factory=time.time)

    def log_line(self) -> str:
        """The one structured JSON line every turn logs."""
        record = {
            "event": "turn",
            "turn_id": self.turn_id,
            "at": round(self.wall_time, 3),
            **self.timings.relative(),
            "audio_s": round(self.audio_s, 3),
            "stt_s": round(self.stt_s, 3),
            "user": self.user_text,
            "reply": self.reply_text,
            "gestures": self.gestures,
            "errors": self.errors,
        }
        return json.dumps(record, ensure_ascii=False)
