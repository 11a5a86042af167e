"""Sample-rate conversion in numpy: a polyphase windowed-sinc (Kaiser) filter.

Rational ratio L/M (e.g. 48000->16000 is 1/3, 22050->16000 is 320/441). Each output sample
is a dot product of the nearest input samples with one phase of the low-pass filter, so
the cost is about 2*ZERO_CROSSINGS multiply-adds per output sample whatever the ratio.
The cut-off sits at 95 % of the lower Nyquist frequency: enough to keep speech intact
and to stop the aliasing that would confuse the VAD and Whisper.
``StreamResampler`` keeps its state between blocks, so a microphone stream can be
converted block by block with the same result as converting it in one piece."""

from __future__ import annotations

from functools import lru_cache
from math import gcd

import numpy as np

from speech.audio.pcm import float_to_pcm, pcm_to_float
from speech.types import SpeechAudio

ZERO_CROSSINGS = 16  # filter half-length, in zero crossings of the lower rate
KAISER_BETA = 8.6  # ~80 dB stop-band
CUTOFF = 0.95  # fraction of the lower Nyquist frequency
_BLOCK = 32768  # outputs per vectorized step: bounds the temporary matrix's memory


@lru_cache(maxsize=16)
def _polyphase_filter(up: int, down: int) -> tuple[np.ndarray, int]:
    """Filter phases shaped [up, taps_per_phase] and the centre index of the prototype."""
    cutoff = CUTOFF * 0.5 / max(up, down)  # cycles per sample at the upsampled rate
    centre = int(np.ceil(ZERO_CROSSINGS / (2 * cutoff)))
    n = np.arange(2 * centre + 1) - centre
    proto = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(2 * centre + 1, KAISER_BETA)
    proto *= up  # zero-stuffing by `up` divides the signal's gain by `up`
    taps = -(-len(proto) // up)
    padded = np.zeros(taps * up)
    padded[: len(proto)] = proto
    # phases[r, k] = proto[r + k*up]: the taps that meet real input samples for phase r
    return padded.reshape(taps, up).T.copy(), centre


class StreamResampler:
    """Converts mono float blocks from ``src_rate`` to ``dst_rate``, keeping filter state.

    Output sample n is aligned with input time n*src/dst (no delay is added); it is
    produced as soon as the input it needs has arrived, so each block's output lags by
    about ZERO_CROSSINGS samples of the lower rate (1 ms at 16 kHz), released by flush()."""

    def __init__(self, src_rate: int, dst_rate: int) -> None:
        if src_rate <= 0 or dst_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {src_rate} -> {dst_rate}")
        g = gcd(src_rate, dst_rate)
        self.up, self.down = dst_rate // g, src_rate // g
        self._phases, self._centre = _polyphase_filter(self.up, self.down)
        self._taps = self._phases.shape[1]
        self._reset()

    def _reset(self) -> None:
        self._buf = np.zeros(0)  # input samples kept for the next outputs
        self._buf_start = 0  # absolute index of _buf[0]
        self._received = 0  # input samples seen
        self._next_out = 0  # index of the next output sample

    def process(self, block: np.ndarray) -> np.ndarray:
        block = np.asarray(block, dtype=np.float64).reshape(-1)
        if self.up == self.down:
            return block.astype(np.float32)
        self._buf = np.concatenate([self._buf, block])
        self._received += len(block)
        # output n needs inputs up to (n*down + centre) // up
        last = (self._received * self.up - 1 - self._centre) // self.down
        return self._emit(last)

    def flush(self) -> np.ndarray:
        """The remaining outputs, as if the input continued with silence; then resets."""
        if self.up == self.down:
            return np.zeros(0, dtype=np.float32)
        total = -(-self._received * self.up // self.down)  # ceil(received * dst / src)
        needed = (total * self.down + self._centre) // self.up + 1
        if needed > self._received:
            self._buf = np.concatenate([self._buf, np.zeros(needed - self._received)])
        out = self._emit(total - 1)
        self._reset()
        return out

    def _emit(self, last: int) -> np.ndarray:
        chunks = []
        while self._next_out <= last:
            stop = min(last + 1, self._next_out + _BLOCK)
            chunks.append(self._compute(np.arange(self._next_out, stop)))
            self._next_out = stop
        # keep only the inputs the next outputs can still reach
        oldest = (self._next_out * self.down + self._centre) // self.up - self._taps + 1
        drop = max(0, min(oldest - self._buf_start, len(self._buf)))
        self._buf, self._buf_start = self._buf[drop:], self._buf_start + drop
        return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, dtype=np.float32)

    def _compute(self, outs: np.ndarray) -> np.ndarray:
        pos = outs * self.down + self._centre
        newest, phase = pos // self.up, pos % self.up
        idx = newest[:, None] - np.arange(self._taps)[None, :] - self._buf_start
        valid = idx >= 0  # before the stream began there is silence
        samples = np.where(valid, self._buf[np.clip(idx, 0, None)], 0.0)
        return np.einsum("ij,ij->i", samples, self._phases[phase])


def resample(samples: np.ndarray, src_rate: int, dst_rate: int) -> np.ndarray:
    """Whole-signal conversion of mono float samples; output length = round(n*dst/src)."""
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    if src_rate == dst_rate:
        return samples
    conv = StreamResampler(src_rate, dst_rate)
    out = np.concatenate([conv.process(samples), conv.flush()])
    return out[: int(round(len(samples) * dst_rate / src_rate))]


def resample_pcm(pcm: bytes, src_rate: int, dst_rate: int) -> bytes:
    """int16 mono bytes -> int16 mono bytes at another rate."""
    if src_rate == dst_rate:
        return pcm
    return float_to_pcm(resample(pcm_to_float(pcm), src_rate, dst_rate))


def resample_speech(audio: SpeechAudio, dst_rate: int) -> SpeechAudio:
    """The same speech at another sample rate (e.g. espeak's 22050 Hz -> 16 kHz for the mic path)."""
    if audio.sample_rate == dst_rate:
        return audio
    return SpeechAudio(resample_pcm(audio.pcm, audio.sample_rate, dst_rate), dst_rate, audio.text)
