"""When a pause ends the customer's turn: the end-of-turn policy.

Silence alone (``vad.hangover_ms``, 1000 ms; 700 before) makes every reply wait that long, and a
shorter one cuts people off at commas. ``EndOfTurn`` asks a turn-completion model once a
pause reaches ``pause_ms`` (250 ms): a finished sentence ends the turn there, an unfinished
one ("and our budget is ...") waits for the rest, up to the endpointer's own hangover, which
stays the upper bound. One question per pause: a new word starts a new pause.

The model runs in a worker thread (tens of milliseconds); the listen loop awaits it, so
frames wait in the source's queue meanwhile and none is lost, and a simulation (fed faster
than real time) takes the same decisions as a live microphone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

from speech.vad import Endpointer

log = logging.getLogger(__name__)


class TurnCompletion(Protocol):
    def probability(self, pcm: bytes) -> float:
        """That the turn in ``pcm`` (16 kHz mono int16) is complete, 0..1 (blocking)."""
        ...


@dataclass
class EndOfTurn:
    """Asks ``model`` at each pause of ``pause_ms``; ends the turn when it says complete."""

    model: TurnCompletion
    pause_ms: int = 250
    threshold: float = 0.5
    _asked: int | None = field(default=None, init=False)  # the pause last asked about (its last voiced frame)
    last_probability: float | None = field(default=None, init=False)

    def due(self, endpointer: Endpointer) -> bool:
        """A pause long enough that this turn has not been asked about yet. Not in a
        barge-in turn (held open: an interruption is heard whole)."""
        pause = endpointer.pause
        if pause is None or endpointer.held_open:
            return False
        return pause[1] >= self.pause_ms and pause[0] != self._asked

    async def finished(self, endpointer: Endpointer) -> bool:
        """Ask the model about the turn so far (once for this pause)."""
        pause = endpointer.pause
        assert pause is not None
        self._asked = pause[0]
        audio = endpointer.turn_audio()
        try:
            probability = await asyncio.to_thread(self.model.probability, audio)
        except Exception:  # noqa: BLE001 - a broken model must not end turns: silence still does
            log.exception("turn-completion model failed; the pause decides")
            return False
        self.last_probability = probability
        return probability >= self.threshold
