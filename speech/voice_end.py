"""Where the customer's voice really ended: the last sound before webrtcvad's last voiced frame.

webrtcvad goes on calling frames voiced for about 100 ms after a voice stops (measured on
espeak-ng speech ending in digital silence: 100-111 ms), so an utterance's wait counted
from its last voiced frame left that much out of the voice to voice the customer lived
(issue 26, item 7). The listen loop keeps the level of what it heard, per 5 ms, and counts
an utterance's wait (``Utterance.hangover_s``) from the end of its last 5 ms louder than the
room, for every source: a sound card, a file, a simulated room.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import numpy as np
import numpy.ma  # noqa: F401 - np.median imports it on first use: 150 ms held the event loop at the first utterance

from speech.types import SAMPLE_RATE, Utterance

_SLICE = SAMPLE_RATE // 200  # samples: levels are kept per 5 ms
_KEPT = 200  # frames kept (4 s at 20 ms): a turn's hangover and the end of its speech
# How far before the endpointer's last voiced frame the last sound may be: webrtcvad's own
# hang-over (about 100 ms) with room to spare; a longer quiet stretch the VAD called voiced
# is left as it was (a quiet voice under the threshold: never made shorter than it was).
SEARCH_S = 0.2
_VOICE_FLOOR = 0.003  # RMS (about -50 dBFS): quieter than this is not the customer's voice
_OVER_FLOOR = 4.0  # x the room's level in the silence the endpointer waited (12 dB)


class VoiceEnd:
    """The last seconds the endpointer heard, on its stream clock (seconds of audio fed, one
    unbroken stretch: deaf time does not move it), and from their level per 5 ms where an
    utterance's voice ended. Hearing a frame only keeps it (well under a microsecond); the
    levels are worked out once an utterance ends (about 0.3 ms)."""

    def __init__(self) -> None:
        self._frames: deque[bytes] = deque(maxlen=_KEPT)
        self._end = 0.0  # stream time where the latest frame ends

    def hear(self, frame: bytes, end: float) -> None:
        """The endpointer heard ``frame`` (16 kHz mono int16), which ends at stream time ``end``."""
        self._frames.append(frame)
        self._end = end

    def correct(self, utterance: Utterance) -> Utterance:
        """``utterance`` with its wait counted from its last sound: ``hangover_s`` grows by
        ``overhang_s``, how long before its last voiced frame (``t_end``) the voice ended.
        A cut utterance (no wait) is left as it was."""
        if utterance.truncated:
            return utterance
        overhang = round(utterance.t_end - self.find(utterance.t_end), 3)
        if overhang <= 0:
            return utterance
        return dataclasses.replace(utterance, hangover_s=round(utterance.hangover_s + overhang, 3), overhang_s=overhang)

    def find(self, vad_end: float) -> float:
        """The end of the last 5 ms louder than the room (the silence after ``vad_end``, +12
        dB) and than -50 dBFS, at most ``SEARCH_S`` before ``vad_end``; else ``vad_end``."""
        ends, levels = self._slices()
        if not len(ends):
            return vad_end
        after = levels[ends > vad_end + 1e-6]
        threshold = max(_VOICE_FLOOR, _OVER_FLOOR * float(np.median(after)) if len(after) else 0.0)
        loud = ends[(ends > vad_end - SEARCH_S) & (ends <= vad_end + 1e-6) & (levels > threshold)]
        return float(loud.max()) if len(loud) else vad_end

    def _slices(self) -> tuple[np.ndarray, np.ndarray]:
        """(stream time of each 5 ms slice's end, its RMS), oldest first; the slices end
        where the latest frame does (a part-slice at the oldest end is left out)."""
        samples = np.frombuffer(b"".join(self._frames), dtype="<i2")
        n = len(samples) // _SLICE
        slices = samples[len(samples) - n * _SLICE:].reshape(n, _SLICE).astype(np.float32) / 32768.0
        ends = self._end - (n - 1 - np.arange(n)) * _SLICE / SAMPLE_RATE
        return ends, np.sqrt(np.mean(slices * slices, axis=1))
