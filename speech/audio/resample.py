"""Sample-rate conversion with soxr (libsoxr: the SoX resampler, prebuilt wheels).

Whole signals go through ``soxr.resample``; a microphone stream goes block by block through
``StreamResampler`` (a ``soxr.ResampleStream``), which gives exactly the same samples as
converting the stream in one piece. Quality "HQ": a linear-phase low-pass, pass band to
about 91 % of the lower Nyquist frequency, over 120 dB down beyond it, so nothing aliases
into the band the VAD and Whisper listen to. ``bench/resample.py`` measures it against
the numpy polyphase filter it replaced."""

from __future__ import annotations

import numpy as np
import soxr

from speech.audio.pcm import float_to_pcm, pcm_to_float
from speech.types import SpeechAudio

QUALITY = "HQ"


def _mono_float32(samples: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(samples, dtype=np.float32).reshape(-1))


def _check_rates(src_rate: int, dst_rate: int) -> None:
    if src_rate <= 0 or dst_rate <= 0:
        raise ValueError(f"sample rates must be positive, got {src_rate} -> {dst_rate}")


class StreamResampler:
    """Converts mono float blocks from ``src_rate`` to ``dst_rate``, keeping filter state.

    soxr works in internal blocks, so a block's output may be empty or hold more than its
    share: over a stream the output lags the input by up to about 40 ms (20 ms blocks,
    44.1 or 48 kHz -> 16 kHz). ``flush()`` releases the rest and resets."""

    def __init__(self, src_rate: int, dst_rate: int) -> None:
        _check_rates(src_rate, dst_rate)
        self.src_rate, self.dst_rate = src_rate, dst_rate
        self._stream = None if src_rate == dst_rate else soxr.ResampleStream(src_rate, dst_rate, 1, "float32", QUALITY)

    def process(self, block: np.ndarray) -> np.ndarray:
        block = _mono_float32(block)
        return block if self._stream is None else self._stream.resample_chunk(block)

    def flush(self) -> np.ndarray:
        """The remaining outputs; then the converter starts a new stream."""
        if self._stream is None:
            return np.zeros(0, dtype=np.float32)
        out = self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
        self._stream.clear()
        return out


def resample(samples: np.ndarray, src_rate: int, dst_rate: int) -> np.ndarray:
    """Whole-signal conversion of mono float samples (float32); length round(n*dst/src)."""
    samples = _mono_float32(samples)
    _check_rates(src_rate, dst_rate)
    if src_rate == dst_rate:
        return samples
    return soxr.resample(samples, src_rate, dst_rate, quality=QUALITY)


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
