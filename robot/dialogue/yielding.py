"""Yield and merge: the customer only paused, the turn ended too early, and they go on.

A turn that ended on a pause opens a ``YieldWindow`` (``barge_in.yield_window_ms`` of stream
time after the endpointer's decision). Speech the second stage confirms in it, while the robot
still thinks or speaks on that turn, is a continuation: the robot stops (the reply's request
closed, the speaker cut within one block), nothing of the turn is remembered, and the next
turn answers the first words and the continuation together. The window carries what the two
turns share: whether the first was yielded, its transcript, and when the robot fell silent.

Until the window has passed (or the reply is over) the turn's user remark waits: a turn that
is yielded leaves no entry in memory, one that stands is recorded exactly as before.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from speech.types import Transcript, Utterance


# Once the robot has begun its answer, a customer who was only pausing goes on at once;
# speech that begins later is an interruption (a barge-in), not the rest of their turn. The
# grace counts from when the robot began to speak (its first sentence still being rendered
# and buffered: in the room test the customer's words pushed 0.4 s into the audible answer
# began 1.2 s after it). Without it, "Sorry to interrupt. How much is the train to Nara?"
# said 1.5 s into the answer fell inside the 2 s window when the robot answered fast, was
# merged with the question it interrupted, and the simulation waited for a second answer.
SPEAKING_GRACE_S = 1.5

# Continuations merged into one turn at most: a turn yielded this often has no window (what
# talks over it is a barge-in), so a robot that hears its own voice never yields in a loop.
MAX_YIELDS = 3


def _future() -> asyncio.Future:  # type: ignore[type-arg]
    return asyncio.get_running_loop().create_future()


@dataclass
class YieldWindow:
    """One turn's window, from the endpointer's decision to ``closes_at`` (stream seconds)."""

    closes_at: float
    utterance: Utterance  # the first part's audio: answered alone if nothing usable follows
    yields: int = 0  # continuations already merged into this turn's words
    stage: str | None = None  # "thinking" or "speaking" when the customer went on
    confirmed_at: float | None = None  # monotonic: the continuation confirmed, the robot told to stop
    silent_at: float | None = None  # monotonic: the yielded turn's speech was over
    outcome: asyncio.Future[bool] = field(default_factory=_future)  # True: yielded; False: the turn stands
    first: asyncio.Future[Transcript | None] = field(default_factory=_future)  # the turn's transcript
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # the turn is over (yielded or not)

    def robot_speaks(self, now: float) -> None:
        """The robot's answer became audible at stream time ``now``: the window closes at most
        ``SPEAKING_GRACE_S`` later."""
        self.closes_at = min(self.closes_at, now + SPEAKING_GRACE_S)

    @property
    def settled(self) -> bool:
        return self.outcome.done()

    @property
    def yielded(self) -> bool:
        return self.outcome.done() and self.outcome.result()

    def stand(self) -> None:
        """The window passed, or the turn is over: it stands (its words are recorded)."""
        if not self.outcome.done():
            self.outcome.set_result(False)

    def yield_to_continuation(self, stage: str, confirmed_at: float | None = None,
                              silent_at: float | None = None) -> bool:
        """The customer went on (confirmed at ``confirmed_at``, monotonic; the robot silent
        from ``silent_at``, when known); False when the turn already stood."""
        if self.outcome.done():
            return False
        self.stage, self.confirmed_at, self.silent_at = stage, confirmed_at or time.monotonic(), silent_at
        self.outcome.set_result(True)
        return True

    async def standing(self) -> bool:
        """Wait until the window is settled: True when the turn stands."""
        return not await asyncio.shield(self.outcome)

    def heard(self, transcript: Transcript | None) -> None:
        if not self.first.done():
            self.first.set_result(transcript)

    def reply_over(self) -> None:
        """The turn's reply is over (said, cut or failed): it stands unless it was yielded,
        and a yielded one is silent from now."""
        self.stand()
        if self.yielded and self.silent_at is None:
            self.silent_at = time.monotonic()

    def over(self) -> None:
        """The turn ended: the next turn may take its words."""
        self.reply_over()
        self.heard(None)
        self.ended.set()

    @property
    def stop_s(self) -> float | None:
        """Seconds from the continuation's confirmation to the robot's silence (None: it had
        not begun to speak, nothing was cut)."""
        if self.stage != "speaking" or self.confirmed_at is None or self.silent_at is None:
            return None
        return max(0.0, self.silent_at - self.confirmed_at)

    async def joined(self, continuation: Transcript | None) -> Transcript | None:
        """The first part's words and the continuation's, as one transcript (after the
        yielded turn is over). Either alone when the other has no words; None when neither
        has (the continuation's own result is then reported as usual)."""
        await self.ended.wait()
        first = self.first.result() if self.first.done() else None
        return join(first, continuation)


def join(first: Transcript | None, second: Transcript | None) -> Transcript | None:
    if first is None or not first.text.strip():
        return second
    if second is None or not second.text.strip():
        return first
    return Transcript(text=f"{first.text.strip()} {second.text.strip()}", audio_s=first.audio_s + second.audio_s,
                      stt_s=first.stt_s + second.stt_s, language=second.language or first.language,
                      heard=f"{first.heard} {second.heard}".strip())
