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

from speech.types import SAMPLE_RATE, Utterance

_SLICE = SAMPLE_RATE // 200  # samples: levels are kept per 5 ms
_KEPT = 200  # frames of levels kept (4 s at 20 ms): a turn's hangover and the end of its speech
# How far before the endpointer's last voiced frame the last sound may be: webrtcvad's own
# hang-over (about 100 ms) with room to spare; a longer quiet stretch the VAD called voiced
# is left as it was (a quiet voice under the threshold: never made shorter than it was).
SEARCH_S = 0.2
_VOICE_FLOOR = 0.003  # RMS (about -50 dBFS): quieter than this is not the customer's voice
_OVER_FLOOR = 4.0  # x the room's level in the silence the endpointer waited (12 dB)


class VoiceEnd:
    """The level of each 5 ms the endpointer heard, on its stream clock (seconds of audio
    fed), and from them where an utterance's voice ended. About 10 us a 20 ms frame."""

    def __init__(self) -> None:
        self._levels: deque[tuple[float, np.ndarray]] = deque(maxlen=_KEPT)

    def hear(self, frame: bytes, end: float) -> None:
        """The endpointer heard ``frame`` (16 kHz mono int16), which ends at stream time ``end``."""
        samples = np.frombuffer(frame, dtype="<i2")
        slices = samples[: len(samples) // _SLICE * _SLICE].reshape(-1, _SLICE).astype(np.float32)
        self._levels.append((end, np.sqrt(np.mean(slices * slices, axis=1)) / 32768.0))

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
        """(stream time of each 5 ms slice's end, its RMS), oldest first."""
        ends, levels = [], []
        for end, slice_levels in self._levels:
            n = len(slice_levels)
            ends.append(end - (n - 1 - np.arange(n)) * _SLICE / SAMPLE_RATE)
            levels.append(slice_levels)
        if not ends:
            return np.empty(0), np.empty(0)
        return np.concatenate(ends), np.concatenate(levels)
