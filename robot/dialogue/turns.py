"""What one turn produced, and when: the objects the controller hands to the log and the simulator."""

from __future__ import annotations

import asyncio
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
    reply_started: float | None = None  # the LLM request went out (memory read and written)
    first_token: float | None = None
    first_sentence: float | None = None  # the first whole sentence came out of the reply
    first_audio: float | None = None
    done: float | None = None
    first_render_s: float | None = None  # TTS time of the first sentence (a duration)
    # The endpointer's wait after the customer's last voiced frame: ``end_of_speech`` is
    # when it gave up waiting, the customer's voice ended this much earlier.
    hangover_s: float = 0.0

    def relative(self) -> dict[str, float | None]:
        """Seconds after end of speech (the endpointer's decision), per stage (None: the
        stage did not happen); and voice to voice: from the customer's last voiced frame to
        the robot's first audio, the wait a customer feels."""

        def since(t: float | None) -> float | None:
            return None if t is None else round(t - self.end_of_speech, 3)

        first_audio = since(self.first_audio)
        return {
            "transcript_s": since(self.transcript_ready),
            "first_token_s": since(self.first_token),
            "first_sentence_s": since(self.first_sentence),
            "first_audio_s": first_audio,
            "done_s": since(self.done),
            "hangover_s": round(self.hangover_s, 3),
            "voice_to_voice_s": None if first_audio is None else round(first_audio + self.hangover_s, 3),
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
    interrupted: bool = False  # the reply was cut (stop command; later: barge-in)
    # The customer went on after this turn's words had ended on a pause: the robot stopped
    # the turn it had begun that many times, and this one answers all the words together.
    yields: int = 0
    yield_stop_s: float | None = None  # the last of them: continuation confirmed -> the robot silent
    # Stream seconds of the end of the customer's speech this turn answers (its last part's last
    # voiced frame; None for a typed turn): a simulator tells from it which lines a merged turn took.
    heard_until_s: float | None = None
    wall_time: float = field(default_factory=time.time)

    def log_line(self) -> str:
        """The one structured JSON line every turn logs. It holds no words of either side,
        only their lengths: the visitor's words live in the memory store alone, where
        ``forget`` deletes them; a log file or a journal keeps what it got."""
        record = {
            "event": "turn",
            "turn_id": self.turn_id,
            "at": round(self.wall_time, 3),
            **self.timings.relative(),
            "audio_s": round(self.audio_s, 3),
            "stt_s": round(self.stt_s, 3),
            "user_chars": len(self.user_text),
            "reply_chars": len(self.reply_text),
            "gestures": self.gestures,
            "interrupted": self.interrupted,
            "yields": self.yields,
            "yield_stop_s": None if self.yield_stop_s is None else round(self.yield_stop_s, 3),
            "errors": self.errors,
        }
        return json.dumps(record, ensure_ascii=False)


RESULTS_KEPT = 100


class RecentResults(asyncio.Queue):  # type: ignore[type-arg]
    """The controller's finished turns, of which only the latest ``RESULTS_KEPT`` wait: a
    live robot's nobody reads, and kept all they grew its RAM by a turn's result each
    (issue 28, item 7); a simulation takes each as it comes."""

    def __init__(self, size: int = 0) -> None:
        super().__init__(size or RESULTS_KEPT)

    def put_nowait(self, item: object) -> None:
        if self.full():
            self.get_nowait()  # the oldest goes
        super().put_nowait(item)

