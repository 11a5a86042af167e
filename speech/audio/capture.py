"""When the microphone heard each frame: a sound card's capture clock.

A frame reaches the listen loop some time after its sound reached the microphone: the
input path buffers it (PortAudio and the sound server: the stream's reported input
latency), and it may wait in the loop's queue behind a busy moment. Stamped when the loop
hears it, the customer's last voiced frame looked that much later than it was, and the
printed voice to voice was that much short of the one the customer felt (issue 26, item 7).
The sound card source stamps each block as PortAudio hands it over, less the input
latency; ``CaptureClock`` holds the capture time of the frame the listen loop hears now.
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

    def frame_start(self) -> float | None:
        """When the frame heard now began to be captured: the echo canceller's first frame."""
        return None if self.frame_end is None else self.frame_end - FRAME_MS / 1000

    def restamp(self, utterance: Utterance) -> Utterance:
        """``utterance`` (ended by the frame heard now) with its ``hangover_s`` counted from
        when its last voiced frame was captured: the endpointer's wait plus the input
        path's latency and any queueing, so voice to voice is the wait the customer felt."""
        if self.frame_end is None:
            return utterance
        late = max(0.0, utterance.ended_at - self.frame_end)
        voice_end = self.frame_end - utterance.hangover_s
        log.debug("utterance captured from %.3f to %.3f (monotonic); heard %.0f ms after capture",
                  voice_end - (utterance.t_end - utterance.t_start), voice_end, late * 1000)
        return dataclasses.replace(utterance, hangover_s=round(utterance.hangover_s + late, 3))
