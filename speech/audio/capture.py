"""When the microphone heard each frame: a sound card's capture clock, and from it how late
the listen loop heard the end of the customer's voice.

A frame reaches the listen loop some time after its sound reached the microphone: the
input path buffers it (PortAudio and the sound server: the stream's reported input
latency, 40 ms on the PulseAudio virtual card), and it may wait in the loop's queue behind
a busy moment. Counted from when the loop heard it, the customer's voice looked that much
later than it was (issue 26, item 7). The sound card source stamps each frame with when it
was captured (``stamp``); ``restamp`` adds the input path to an utterance's wait. Where in
the stream the voice ended (webrtcvad's last voiced frame is about 100 ms after it) the
listen loop finds for every source (speech/voice_end.py): it is not counted here again.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from speech.types import FRAME_MS, Utterance

log = logging.getLogger(__name__)


@dataclass
class CaptureClock:
    """``frame_end``: time.monotonic() when the end of the latest frame the source yielded
    was captured (None before the first). The listen loop hears a frame before the source
    yields the next one, so during that frame's events this is its capture time."""

    frame_end: float | None = None

    def stamp(self, frame: bytes, end: float) -> None:
        """The source yields ``frame`` (16 kHz mono int16), its last sample captured at ``end``."""
        self.frame_end = end

    def frame_start(self) -> float | None:
        """When the frame heard now began to be captured: the echo canceller's first frame."""
        return None if self.frame_end is None else self.frame_end - FRAME_MS / 1000

    def restamp(self, utterance: Utterance) -> Utterance:
        """``utterance`` (ended by the frame heard now) with its ``hangover_s`` counted from
        when its last sound was captured: the wait the listen loop counted on the stream
        (to the end of the frame heard now) plus how long after that frame's capture the
        loop decided (the input path's latency and any queueing)."""
        if self.frame_end is None:
            return utterance
        late = utterance.ended_at - self.frame_end
        voice_end = self.frame_end - utterance.hangover_s  # its last sound, captured
        vad_end = voice_end + utterance.overhang_s  # webrtcvad's last voiced frame's end, captured
        log.debug("utterance captured from %.3f to %.3f (monotonic; the VAD's last voiced frame ends "
                  "%.0f ms later); heard %.0f ms after capture", vad_end - (utterance.t_end - utterance.t_start),
                  voice_end, utterance.overhang_s * 1000, late * 1000)
        return dataclasses.replace(utterance, hangover_s=round(utterance.hangover_s + late, 3))
