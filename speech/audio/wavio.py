"""Reading and writing wav files without the limits of the ``wave`` module.

Python 3.11's ``wave`` rejects float and WAVE_FORMAT_EXTENSIBLE files, which many recorders
write, so the RIFF chunks are parsed here (PCM 8/16/24/32-bit and float 32/64)."""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np

from speech.audio.pcm import float_to_pcm
from speech.audio.resample import resample
from speech.types import SAMPLE_RATE

_PCM, _FLOAT, _EXTENSIBLE = 1, 3, 0xFFFE


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Return (float32 samples shaped [frames, channels] in [-1, 1], sample rate)."""
    data = Path(path).read_bytes()
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError(f"{path}: not a RIFF/WAVE file")
    fmt, payload = _find_chunks(data, path)
    tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", fmt[:16])
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = struct.unpack("<H", fmt[24:26])[0]  # first two bytes of the sub-format GUID
    samples = _decode(payload, tag, bits, path)
    usable = len(samples) - len(samples) % channels
    return samples[:usable].reshape(-1, channels), rate


def _find_chunks(data: bytes, path: str | Path) -> tuple[bytes, bytes]:
    fmt = payload = None
    pos = 12
    while pos + 8 <= len(data):
        cid, size = data[pos : pos + 4], struct.unpack("<I", data[pos + 4 : pos + 8])[0]
        body = data[pos + 8 : pos + 8 + size]
        if cid == b"fmt ":
            fmt = body
        elif cid == b"data":
            payload = body  # a truncated file keeps what is there
        pos += 8 + size + (size & 1)  # chunks are word-aligned
    if fmt is None or payload is None:
        raise ValueError(f"{path}: wav file has no 'fmt ' or 'data' chunk")
    return fmt, payload


def _decode(payload: bytes, tag: int, bits: int, path: str | Path) -> np.ndarray:
    if tag == _FLOAT and bits in (32, 64):
        n = len(payload) // (bits // 8)
        return np.frombuffer(payload[: n * bits // 8], dtype=f"<f{bits // 8}").astype(np.float32)
    if tag != _PCM:
        raise ValueError(f"{path}: unsupported wav encoding (format tag {tag}); use PCM or float")
    if bits == 8:  # 8-bit wav is unsigned
        return (np.frombuffer(payload, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    if bits == 16:
        n = len(payload) // 2
        return np.frombuffer(payload[: 2 * n], dtype="<i2").astype(np.float32) / 32768.0
    if bits == 24:
        raw = np.frombuffer(payload[: len(payload) - len(payload) % 3], dtype=np.uint8).reshape(-1, 3)
        ints = raw[:, 0].astype(np.int32) | (raw[:, 1].astype(np.int32) << 8) | (raw[:, 2].astype(np.int32) << 16)
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        return ints.astype(np.float32) / float(1 << 23)
    if bits == 32:
        n = len(payload) // 4
        return (np.frombuffer(payload[: 4 * n], dtype="<i4").astype(np.float64) / 2.0**31).astype(np.float32)
    raise ValueError(f"{path}: unsupported PCM sample width of {bits} bits")


def read_wav_16k_mono(path: str | Path) -> bytes:
    """Any wav -> the pipeline's format: 16 kHz mono int16 bytes (channels averaged)."""
    samples, rate = read_wav(path)
    mono = samples.mean(axis=1) if samples.shape[1] > 1 else samples[:, 0]
    return float_to_pcm(resample(mono, rate, SAMPLE_RATE))


def read_pcm16(path: str | Path) -> tuple[bytes, int]:
    """Any wav -> (mono int16 bytes at the file's own rate, rate)."""
    samples, rate = read_wav(path)
    mono = samples.mean(axis=1) if samples.shape[1] > 1 else samples[:, 0]
    return float_to_pcm(mono), rate


def write_wav(path: str | Path, pcm: bytes, sample_rate: int = SAMPLE_RATE) -> Path:
    """Write mono int16 PCM; creates the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
    return path
