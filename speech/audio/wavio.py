"""Reading and writing wav files with soundfile (libsndfile).

It reads what recorders write and Python's ``wave`` rejects: PCM 8/16/24/32-bit, float
32/64, WAVE_FORMAT_EXTENSIBLE, any rate and channel count. A file that is not a wav
raises ValueError naming the file; a missing file raises FileNotFoundError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from speech.audio.pcm import float_to_pcm
from speech.audio.resample import resample
from speech.types import SAMPLE_RATE

_WAV_FORMATS = {"WAV", "WAVEX", "RF64"}  # RIFF wave, its extensible header, and its 64-bit form


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Return (float32 samples shaped [frames, channels] in [-1, 1], sample rate)."""
    with open(path, "rb") as fh:  # a missing file: FileNotFoundError with its name
        try:
            with sf.SoundFile(fh) as wav:
                if wav.format not in _WAV_FORMATS:
                    raise ValueError(f"{path}: not a wav file ({wav.format_info})")
                return wav.read(dtype="float32", always_2d=True), wav.samplerate
        except sf.LibsndfileError as exc:
            raise ValueError(f"{path}: not a wav file ({exc.error_string.rstrip('.')})") from None


def _read_mono(path: str | Path) -> tuple[np.ndarray, int]:
    samples, rate = read_wav(path)
    return (samples.mean(axis=1) if samples.shape[1] > 1 else samples[:, 0]), rate


def read_wav_16k_mono(path: str | Path) -> bytes:
    """Any wav -> the pipeline's format: 16 kHz mono int16 bytes (channels averaged)."""
    mono, rate = _read_mono(path)
    return float_to_pcm(resample(mono, rate, SAMPLE_RATE))


def read_pcm16(path: str | Path) -> tuple[bytes, int]:
    """Any wav -> (mono int16 bytes at the file's own rate, rate)."""
    mono, rate = _read_mono(path)
    return float_to_pcm(mono), rate


def write_wav(path: str | Path, pcm: bytes, sample_rate: int = SAMPLE_RATE) -> Path:
    """Write mono int16 PCM as a 16-bit wav; creates the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = np.frombuffer(pcm, dtype="<i2", count=len(pcm) // 2)
    sf.write(path, samples, sample_rate, subtype="PCM_16", format="WAV")
    return path
