"""Resampler and wav reading/writing."""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from speech.audio import StreamResampler, read_wav, read_wav_16k_mono, resample, resample_pcm, write_wav


def _peak_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum) * rate / len(samples))


@pytest.mark.parametrize("src", [48000, 44100, 22050, 8000])
def test_resample_keeps_a_tone_frequency_and_level(src: int) -> None:
    t = np.arange(2 * src) / src
    out = resample(0.5 * np.sin(2 * np.pi * 1000 * t), src, 16000)
    assert len(out) == 32000
    assert _peak_hz(out[8000:24000], 16000) == pytest.approx(1000, abs=2)
    assert np.sqrt(np.mean(out[8000:24000] ** 2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_resample_48k_removes_what_16k_cannot_hold() -> None:
    t = np.arange(48000) / 48000
    out = resample(np.sin(2 * np.pi * 10000 * t), 48000, 16000)  # would alias to 6 kHz
    assert np.sqrt(np.mean(out[2000:-2000] ** 2)) < 1e-3


def test_streaming_matches_one_piece() -> None:
    x = np.random.default_rng(1).standard_normal(48000) * 0.1
    whole = resample(x, 48000, 16000)
    conv = StreamResampler(48000, 16000)
    parts = [conv.process(x[i : i + 997]) for i in range(0, len(x), 997)] + [conv.flush()]
    assert np.allclose(np.concatenate(parts)[: len(whole)], whole, atol=1e-6)


def test_resample_pcm_lengths() -> None:
    assert len(resample_pcm(bytes(2 * 22050), 22050, 16000)) == 2 * 16000
    assert resample_pcm(b"\x01\x00" * 10, 16000, 16000) == b"\x01\x00" * 10


def test_write_then_read(tmp_path: Path) -> None:
    pcm = (np.arange(1600, dtype="<i2") * 7).tobytes()
    path = write_wav(tmp_path / "sub" / "a.wav", pcm, 16000)
    samples, rate = read_wav(path)
    assert rate == 16000 and samples.shape == (1600, 1)
    assert read_wav_16k_mono(path) == pcm


def test_reads_stereo_float_wav_that_wave_module_rejects(tmp_path: Path) -> None:
    rate, n = 48000, 4800
    left = np.full(n, 0.5, dtype="<f4")
    data = np.stack([left, -left / 2], axis=1).tobytes()  # mean = 0.125
    fmt = struct.pack("<HHIIHH", 3, 2, rate, rate * 8, 8, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    path = tmp_path / "float.wav"
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    pcm = read_wav_16k_mono(path)
    assert len(pcm) == 2 * 1600
    middle = np.frombuffer(pcm, dtype="<i2")[400:1200]
    assert np.all(np.abs(middle - 0.125 * 32768) < 50)


def test_reads_24_bit(tmp_path: Path) -> None:
    path = tmp_path / "24.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(3)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00\xc0" * 100)  # -0.5 in 24-bit
    samples, _ = read_wav(path)
    assert np.allclose(samples[:, 0], -0.5)


def test_mix_under_loops_the_noise_and_clips():
    from speech.audio import float_to_pcm, mix_under, pcm_to_float, rms

    speech = float_to_pcm(np.full(1000, 0.5))
    mixed = pcm_to_float(mix_under(speech, np.array([0.25, -0.25]), gain=1.0))
    assert mixed[:4].tolist() == pytest.approx([0.75, 0.25, 0.75, 0.25], abs=1e-4)  # looped
    loud = pcm_to_float(mix_under(speech, np.array([0.9]), gain=1.0))
    assert loud.max() <= 1.0 and loud.max() > 0.99  # clipped at full scale, not wrapped
    assert mix_under(speech, np.array([]), 1.0) == speech
    assert rms(float_to_pcm(np.full(100, 0.5))) == pytest.approx(0.5, abs=1e-4)
    assert rms(b"") == 0.0
