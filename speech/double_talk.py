"""Double talk: is someone other than the robot talking while it speaks?

The echo canceller says, for each microphone frame while the robot plays, how much of its
energy survived cancelling (``EchoCanceller.kept_db``) and how loud what is left is. Two
tests, each judged frame by frame:

- *loud*: the frame kept at least -6 dB of its energy. The robot's echo keeps -15 to -40 dB
  (-4 to -12 dB in its first seconds, before the canceller converged), a customer talking
  over it at their own level -4 to +1 dB.
- *soft*: the frame kept at least -24 dB and what is left stands 10 dB over the canceller's
  usual output (the median level of its output over the last 3 s of the robot's voice: in a
  quiet room near silence, as its suppressor zeroes most echo frames; in a noisy one the
  room). A customer 12 dB under the echo (-40 dBFS against the robot's -28 dBFS at the
  microphone) keeps only about -21 dB, never -6: the canceller's suppressor takes 9 dB of
  their voice too (issue 26, item 5; docs/speech.md "A quiet customer under the robot's
  voice").

Once the linear echo filter beside the canceller has learnt the echo path
(speech/echo_linear.py), the soft test reads its output instead, where a quiet voice is not
suppressed: the frame kept at least -18 dB (the echo alone keeps -30 dB and less there, a
voice 12 dB under it about -12 dB), or 10 dB over what the filter usually keeps where that is
lower (a quiet voice under a loud stretch of the robot's keeps only -20 to -25 dB), raised by
how widely the echo's frames spread over what it usually keeps (a filter only just learnt keeps
many of them over -18 dB), and stands 10 dB over that filter's usual output.

The soft test says nothing until the residue is known (0.5 s of the robot's voice heard),
and nothing in a loud room: where the canceller's usual output (the room's noise passes it)
is over -50 dBFS, a quiet voice, 9 dB down, cannot be told from the room. In real time with a
piano at -35 dBFS under the robot's voice the soft bar without that bound cut 2 of 3 replies
(one taken for the customer's words), with it 0 of 6.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

from speech.types import FRAME_MS

LOUD_KEPT_DB = -6.0
SOFT_KEPT_DB = -24.0
LINEAR_SOFT_KEPT_DB = -18.0
SOFT_OVER_RESIDUE_DB = 10.0
SPREAD_WEIGHT = 1.0  # the linear bar rises by this much of the echo's spread (upper quartile less median)
QUIET_ROOM_DBFS = -50.0  # the residue's median over this: a loud room, no soft test
_RESIDUE_FRAMES = 3000 // FRAME_MS  # the residue's median is taken over 3 s of the robot's voice
_RESIDUE_KNOWN = 500 // FRAME_MS


@dataclass
class DoubleTalk:
    """``hear(t, kept_db, level_db)`` for each microphone frame (the canceller's ``kept_db``
    and ``out_dbfs``, None while nothing plays); ``loud_s(since)`` and ``soft_s(since)`` say
    how many seconds of frames since stream time ``since`` passed each test."""

    _frames: deque[tuple[float, bool, bool]] = field(default_factory=lambda: deque(maxlen=100))  # (t, loud, soft)
    _levels: deque[float] = field(default_factory=lambda: deque(maxlen=_RESIDUE_FRAMES))  # output dBFS while playing
    _linear_levels: deque[float] = field(default_factory=lambda: deque(maxlen=_RESIDUE_FRAMES))  # the linear filter's
    _linear_kept: deque[float] = field(default_factory=lambda: deque(maxlen=_RESIDUE_FRAMES))  # its kept dB

    def hear(self, t: float, kept_db: float | None, level_db: float | None,
             linear_kept_db: float | None = None, linear_db: float | None = None) -> None:
        """One frame: the canceller's figures, and the linear filter's once it is heard."""
        if kept_db is None or level_db is None:  # the robot is not playing: no echo to judge against
            self._frames.append((t, False, False))
            return
        if linear_kept_db is not None and linear_db is not None:
            soft = self._soft(linear_kept_db, linear_db, self._linear_bar(), self._linear_levels)
            self._linear_kept.append(linear_kept_db)
        else:
            soft = self._soft(kept_db, level_db, SOFT_KEPT_DB, self._levels)
        self._frames.append((t, kept_db >= LOUD_KEPT_DB, soft))

    def _linear_bar(self) -> float:
        """The linear filter's kept bar: -18 dB, or 10 dB over what it usually keeps of the
        robot's voice where that is lower (a filter that takes 35 dB of the echo: -25 dB);
        raised by how widely the echo's frames spread over that (the third quartile
        less the median). A filter that has only just learnt the echo (20-26 dB at the median
        on the PulseAudio virtual card, whose loopback resamples) keeps 37 % of the echo's
        frames over -18 dB: on the bar alone the robot's own greeting passed for a quiet
        customer and cut itself (7 of 15 live runs; replayed with the spread, 1 of the 7)."""
        if len(self._linear_kept) < _RESIDUE_KNOWN:
            return LINEAR_SOFT_KEPT_DB
        _, median, upper = statistics.quantiles(self._linear_kept, n=4)
        return min(LINEAR_SOFT_KEPT_DB, median + SOFT_OVER_RESIDUE_DB) + SPREAD_WEIGHT * (upper - median)

    @staticmethod
    def _soft(kept_db: float, level_db: float, bar_db: float, levels: deque[float]) -> bool:
        """Kept ``bar_db`` or more and over the residue of that output; the level joins it."""
        soft = len(levels) >= _RESIDUE_KNOWN and kept_db >= bar_db and _over_residue(levels, level_db)
        levels.append(level_db)
        return soft

    @property
    def soft_now(self) -> bool:
        """The last frame heard was soft double talk."""
        return bool(self._frames) and self._frames[-1][2]

    def loud_s(self, since: float) -> float:
        return sum(loud for t, loud, _ in self._frames if t >= since) * FRAME_MS / 1000

    def soft_s(self, since: float) -> float:
        return sum(soft for t, _, soft in self._frames if t >= since) * FRAME_MS / 1000


def _over_residue(levels: deque[float], level_db: float) -> bool:
    residue = statistics.median_high(levels)  # 150 values, 50 times a second: about 10 us
    return residue <= QUIET_ROOM_DBFS and level_db >= residue + SOFT_OVER_RESIDUE_DB
