"""The robot's own voice, taken out of the microphone: WebRTC's acoustic echo canceller.

The robot knows exactly what it plays. Each block the speaker writes is given to the
canceller as the far end; each microphone frame goes through it before the VAD, so the
robot's voice coming back from its loudspeaker is removed and the customer's stays. The
binding is LiveKit's (`livekit` wheel, Apache-2.0) of the WebRTC audio-processing module.
Measured on espeak-ng speech played back at -6 and -20 dB with 20-80 ms delay: 29-58 dB of
echo removed, the customer's speech over it kept within about 4 dB, 0.6 % of a core.
A kiosk with a hardware echo-cancelling microphone array sets ``barge_in.echo_cancel: false``.
"""

from __future__ import annotations

import math
import threading
from collections import deque

import numpy as np

from speech.audio.resample import resample_pcm
from speech.types import SAMPLE_RATE

_FRAME = SAMPLE_RATE // 100  # the module works on 10 ms frames
_FRAME_BYTES = _FRAME * 2
_QUIET = 10.0 ** 2  # mean square of a frame below about -70 dBFS: silence


class EchoCanceller:
    """``far(pcm, rate)`` from the speaker's side; ``near(frame)`` for each microphone
    frame (16 kHz mono int16, a multiple of 10 ms) returns it cleaned; ``skip(frame)`` for
    a frame nobody listens to (the clock must still move).

    Both sides run on one clock, the microphone's: a far frame plays at the first
    microphone frame after it was written, or right after the far frame before it when the
    speaker writes ahead, as a sound card plays its queue. (On the wall clock instead, a
    block written 10 ms late left a gap on the far side but none in the air, and the
    reference slid behind the echo: in the room test the echo removed fell from 32 to
    10 dB within 1.5 s, and the robot's own voice cut it.)"""

    def __init__(self, delay_ms: int = 50) -> None:
        from livekit import rtc  # heavy native library: only when echo cancelling is on

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
        self._apm.set_stream_delay_ms(delay_ms)
        self._far: deque[tuple[int, bytes]] = deque(maxlen=1000)  # (plays at near frame, frame): 10 s
        self._heard = 0  # microphone frames (10 ms) seen: the clock
        self._next_far = 0  # the frame where a far frame written now would follow the queue
        self._far_rest = b""
        self._lock = threading.Lock()  # far() may come from a sound card's thread
        # How much of the last microphone frame's energy survived cancelling (dB; None when
        # nothing played): the customer's voice survives it, the robot's echo does not.
        self.kept_db: float | None = None

    def far(self, pcm: bytes, sample_rate: int) -> None:
        """What the loudspeaker is about to play (called as each block is written)."""
        data = resample_pcm(pcm, sample_rate, SAMPLE_RATE)
        with self._lock:
            if self._heard <= self._next_far:
                data = self._far_rest + data  # the loudspeaker plays on from where it was
            # else it ran dry (a gap): the part-frame left over played before the gap, and
            # carried on it would shift everything after it against the echo
            whole = len(data) - len(data) % _FRAME_BYTES
            at = max(self._heard, self._next_far)
            for i in range(0, whole, _FRAME_BYTES):
                self._far.append((at, data[i: i + _FRAME_BYTES]))
                at += 1
            self._next_far = at
            self._far_rest = data[whole:]

    def near(self, frame: bytes) -> bytes:
        out = bytearray()
        playing = False
        for i in range(0, len(frame) - len(frame) % _FRAME_BYTES, _FRAME_BYTES):
            if (far := self._due()) is not None:
                playing = True
                self._apm.process_reverse_stream(self._rtc.AudioFrame(bytearray(far), SAMPLE_RATE, 1, _FRAME))
            chunk = self._rtc.AudioFrame(bytearray(frame[i: i + _FRAME_BYTES]), SAMPLE_RATE, 1, _FRAME)
            self._apm.process_stream(chunk)  # in place
            out += bytes(chunk.data)
        cleaned = bytes(out)
        self.kept_db = _kept_db(frame, cleaned) if playing else None
        return cleaned

    def skip(self, frame: bytes) -> None:
        """A microphone frame went unheard (the robot was deaf): what played meanwhile is gone."""
        for _ in range(len(frame) // _FRAME_BYTES):
            self._due()

    def _due(self) -> bytes | None:
        """The far frame playing at this microphone frame, if any; the clock moves on."""
        with self._lock:
            while self._far and self._far[0][0] < self._heard:
                self._far.popleft()  # its microphone frame was skipped
            due = self._far.popleft()[1] if self._far and self._far[0][0] == self._heard else None
            self._heard += 1
        return due


def _kept_db(before: bytes, after: bytes) -> float:
    a = np.frombuffer(before, dtype=np.int16).astype(np.float32)
    b = np.frombuffer(after, dtype=np.int16).astype(np.float32)
    energy_in = float(np.dot(a, a))
    if energy_in < len(a) * _QUIET:
        return -99.0  # nothing there to keep
    return 10 * math.log10(max(float(np.dot(b, b)), 1.0) / energy_in)
