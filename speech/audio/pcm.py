"""Conversions between int16 PCM bytes and numpy arrays, and cutting PCM into frames."""

from __future__ import annotations

import numpy as np

from speech.types import BYTES_PER_FRAME, SAMPLE_RATE


def pcm_to_float(pcm: bytes) -> np.ndarray:
    """int16 little-endian bytes -> float32 in [-1, 1)."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def float_to_pcm(samples: np.ndarray) -> bytes:
    """float in [-1, 1] -> int16 little-endian bytes, clipped (never wrapped) at full scale."""
    scaled = np.clip(np.round(np.asarray(samples, dtype=np.float64) * 32768.0), -32768, 32767)
    return scaled.astype("<i2").tobytes()


def mix_under(pcm: bytes, noise: np.ndarray, gain: float) -> bytes:
    """``pcm`` with ``noise`` (float samples, looped to its length, scaled by ``gain``) under it."""
    signal = pcm_to_float(pcm)
    if not len(signal) or not len(noise):
        return pcm
    return float_to_pcm(signal + gain * np.resize(noise, len(signal)))


def rms(pcm: bytes) -> float:
    """Root-mean-square level of int16 PCM, as a fraction of full scale (0 for no audio)."""
    samples = pcm_to_float(pcm).astype(np.float64)
    return float(np.sqrt(np.mean(samples**2))) if samples.size else 0.0


def silence(seconds: float, sample_rate: int = SAMPLE_RATE) -> bytes:
    return bytes(2 * int(round(seconds * sample_rate)))


def split_frames(pcm: bytes, frame_bytes: int = BYTES_PER_FRAME) -> list[bytes]:
    """Cut PCM into whole frames; a short last frame is padded with silence so the stream
    clock (frame count x frame length) never loses audio."""
    frames = [pcm[i : i + frame_bytes] for i in range(0, len(pcm), frame_bytes)]
    if frames and len(frames[-1]) < frame_bytes:
        frames[-1] = frames[-1] + bytes(frame_bytes - len(frames[-1]))
    return frames


class FrameBuffer:
    """Collects PCM chunks of any size and hands back whole frames.

    Device callbacks and resamplers produce blocks that are not multiples of 20 ms."""

    def __init__(self, frame_bytes: int = BYTES_PER_FRAME) -> None:
        self._frame_bytes = frame_bytes
        self._pending = bytearray()

    def push(self, pcm: bytes) -> list[bytes]:
        self._pending += pcm
        whole = len(self._pending) - len(self._pending) % self._frame_bytes
        if whole == 0:
            return []
        data = bytes(self._pending[:whole])
        del self._pending[:whole]
        return split_frames(data, self._frame_bytes)

    @property
    def pending_bytes(self) -> int:
        """The part-frame held back for the next push."""
        return len(self._pending)

    def flush(self) -> list[bytes]:
        """The last partial frame, padded with silence (or nothing)."""
        data, self._pending = bytes(self._pending), bytearray()
        return split_frames(data, self._frame_bytes)
