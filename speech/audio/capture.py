"""When the microphone heard each frame: a sound card's capture clock, and from it when the
customer's voice really ended.

A frame reaches the listen loop some time after its sound reached the microphone: the
input path buffers it (PortAudio and the sound server: the stream's reported input
latency, 40 ms on the PulseAudio virtual card), and it may wait in the loop's queue behind
a busy moment. Stamped when the loop heard it, the customer's last voiced frame looked
that much later than it was. And webrtcvad goes on calling frames voiced for about 100 ms
after a voice stops (measured on espeak-ng speech ending in digital silence: 100-111 ms),
so "the last voiced frame" is that much after the last sound. Both made the printed voice
to voice about 140 ms short of the one the customer felt (issue 26, item 7). The sound card
source stamps each frame with when it was captured (``stamp``); ``restamp`` counts an
utterance's wait from the last sound before the endpointer's last voiced frame.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from speech.types import FRAME_MS, SAMPLE_RATE, Utterance

log = logging.getLogger(__name__)

_SLICE = SAMPLE_RATE // 200  # samples: levels are kept per 5 ms
_KEPT = 200  # frames of levels kept (4 s): a turn's hangover and the end of its speech
# How far before the endpointer's last voiced frame the last sound may be: webrtcvad's own
# hang-over (about 100 ms) with room to spare; a longer quiet stretch the VAD called voiced
# is left as it was (a quiet voice under the threshold: never made shorter than it was).
SEARCH_S = 0.2
_VOICE_FLOOR = 0.003  # RMS (about -50 dBFS): quieter than this is not the customer's voice
_OVER_FLOOR = 4.0  # x the room's level in the silence the endpointer waited (12 dB)


@dataclass
class CaptureClock:
    """``frame_end``: time.monotonic() when the end of the latest frame the source yielded
    was captured (None before the first). The listen loop hears a frame before the source
    yields the next one, so during that frame's events this is its capture time."""

    frame_end: float | None = None
    _levels: deque[tuple[float, np.ndarray]] = field(default_factory=lambda: deque(maxlen=_KEPT), repr=False)

    def stamp(self, frame: bytes, end: float) -> None:
        """The source yields ``frame`` (16 kHz mono int16), its last sample captured at ``end``."""
        self.frame_end = end
        samples = np.frombuffer(frame, dtype="<i2").astype(np.float32) / 32768.0
        slices = samples[: len(samples) // _SLICE * _SLICE].reshape(-1, _SLICE)
        self._levels.append((end, np.sqrt(np.mean(slices**2, axis=1))))

    def frame_start(self) -> float | None:
        """When the frame heard now began to be captured: the echo canceller's first frame."""
        return None if self.frame_end is None else self.frame_end - FRAME_MS / 1000

    def restamp(self, utterance: Utterance) -> Utterance:
        """``utterance`` (ended by the frame heard now) with its ``hangover_s`` counted from
        when its last sound was captured: the endpointer's wait, webrtcvad's own hang-over,
        the input path's latency and any queueing; voice to voice is then what the customer felt."""
        if self.frame_end is None:
            return utterance
        vad_end = self.frame_end - utterance.hangover_s  # the last voiced frame's end, captured
        voice_end = self.voice_end(vad_end)
        late = max(0.0, utterance.ended_at - self.frame_end)
        log.debug("utterance captured from %.3f to %.3f (monotonic; the VAD's last voiced frame ends "
                  "%.0f ms later); heard %.0f ms after capture", vad_end - (utterance.t_end - utterance.t_start),
                  voice_end, (vad_end - voice_end) * 1000, late * 1000)
        return dataclasses.replace(utterance, hangover_s=round(utterance.ended_at - voice_end, 3))

    def voice_end(self, vad_end: float) -> float:
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
        """(capture time of each 5 ms slice's end, its RMS), oldest first."""
        ends, levels = [], []
        for end, slice_levels in self._levels:
            n = len(slice_levels)
            ends.append(end - (n - 1 - np.arange(n)) * _SLICE / SAMPLE_RATE)
            levels.append(slice_levels)
        if not ends:
            return np.empty(0), np.empty(0)
        return np.concatenate(ends), np.concatenate(levels)
