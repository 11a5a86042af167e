"""Resampler (soxr) and wav reading/writing (soundfile)."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from speech.audio import StreamResampler, read_pcm16, read_wav, read_wav_16k_mono, resample, resample_pcm, write_wav


def _peak_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum) * rate / len(samples))


def _tone(seconds: float, rate: int, hz: float = 1000, level: float = 0.5) -> np.ndarray:
    return level * np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate)


@pytest.mark.parametrize(("src", "dst"), [(48000, 16000), (44100, 16000), (22050, 16000), (8000, 16000), (16000, 48000)])
def test_resample_keeps_a_tone_frequency_and_level(src: int, dst: int) -> None:
    out = resample(_tone(2, src), src, dst)
    assert out.dtype == np.float32 and len(out) == 2 * dst
    middle = out[dst // 2 : -dst // 2]
    assert _peak_hz(middle, dst) == pytest.approx(1000, abs=2)
    assert np.sqrt(np.mean(middle.astype(np.float64) ** 2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 1001, 22051])
def test_resample_length_is_rounded_ratio(n: int) -> None:
    assert len(resample(np.zeros(n), 22050, 16000)) == round(n * 16000 / 22050)
    assert len(resample(np.zeros(n), 16000, 48000)) == 3 * n


def test_resample_48k_removes_what_16k_cannot_hold() -> None:
    out = resample(np.sin(2 * np.pi * 10000 * np.arange(48000) / 48000), 48000, 16000)  # would alias to 6 kHz
    assert np.sqrt(np.mean(out[2000:-2000] ** 2)) < 1e-4


@pytest.mark.parametrize(("src", "dst"), [(48000, 16000), (44100, 16000), (16000, 48000)])
def test_streaming_in_20ms_blocks_matches_one_piece(src: int, dst: int) -> None:
    x = np.random.default_rng(1).standard_normal(src) * 0.1 + _tone(1, src)
    whole = resample(x, src, dst)
    conv = StreamResampler(src, dst)
    block = src // 50
    for _ in range(2):  # flush() resets: a second stream gives the same samples
        parts = [conv.process(x[i : i + block]) for i in range(0, len(x), block)] + [conv.flush()]
        streamed = np.concatenate(parts)
        assert len(streamed) == len(whole)
        assert np.allclose(streamed, whole, atol=1e-5)


def test_stream_at_equal_rates_passes_blocks_through() -> None:
    conv = StreamResampler(16000, 16000)
    block = np.linspace(-1, 1, 320)
    assert np.array_equal(conv.process(block), block.astype(np.float32))
    assert len(conv.flush()) == 0


def test_rates_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sample rates must be positive"):
        StreamResampler(0, 16000)
    with pytest.raises(ValueError, match="sample rates must be positive"):
        resample(np.zeros(10), 16000, -1)


def test_resample_pcm_lengths() -> None:
    assert len(resample_pcm(bytes(2 * 22050), 22050, 16000)) == 2 * 16000
    assert resample_pcm(b"\x01\x00" * 10, 16000, 16000) == b"\x01\x00" * 10


def test_write_then_read(tmp_path: Path) -> None:
    pcm = (np.arange(1600, dtype="<i2") * 7).tobytes()
    path = write_wav(tmp_path / "sub" / "a.wav", pcm, 16000)
    with wave.open(str(path)) as w:  # a plain 16-bit PCM wav that any reader takes
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 16000, 1600)
    samples, rate = read_wav(path)
    assert rate == 16000 and samples.shape == (1600, 1) and samples.dtype == np.float32
    assert read_wav_16k_mono(path) == pcm
    assert read_pcm16(path) == (pcm, 16000)


@pytest.mark.parametrize("container", ["WAV", "WAVEX"])  # WAVEX: WAVE_FORMAT_EXTENSIBLE
@pytest.mark.parametrize(
    ("subtype", "tolerance"),
    [("PCM_U8", 1 / 128), ("PCM_16", 1 / 32768), ("PCM_24", 2**-23), ("PCM_32", 1e-7), ("FLOAT", 1e-7), ("DOUBLE", 1e-7)],
)
def test_reads_what_recorders_write(tmp_path: Path, container: str, subtype: str, tolerance: float) -> None:
    rate = 48000
    left = _tone(0.1, rate, 440, 0.5)
    path = tmp_path / f"{subtype}.wav"
    sf.write(path, np.stack([left, -left / 2], axis=1), rate, subtype=subtype, format=container)
    samples, got_rate = read_wav(path)
    assert got_rate == rate and samples.shape == (len(left), 2) and samples.dtype == np.float32
    assert np.abs(samples[:, 0] - left).max() <= tolerance
    assert np.abs(samples[:, 1] + left / 2).max() <= tolerance
    mono = np.frombuffer(read_wav_16k_mono(path), dtype="<i2") / 32768.0  # channels averaged: left / 4
    assert len(mono) == 1600
    assert np.abs(mono[200:-200] - _tone(0.1, 16000, 440, 0.125)[200:-200]).max() < 0.01


def test_24_bit_written_by_the_wave_module(tmp_path: Path) -> None:
    path = tmp_path / "24.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(3)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00\xc0" * 100)  # -0.5 in 24-bit
    samples, _ = read_wav(path)
    assert np.allclose(samples[:, 0], -0.5)


@pytest.mark.parametrize(
    ("name", "content"), [("notes.wav", b"hello, this is text" * 20), ("empty.wav", b""), ("song.flac", None)]
)
def test_a_file_that_is_not_a_wav_is_a_value_error_naming_it(tmp_path: Path, name: str, content: bytes | None) -> None:
    path = tmp_path / name
    if content is None:
        sf.write(path, np.zeros(160), 16000, format="FLAC")  # audio, but not a wav
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{name}: not a wav file") as caught:
        read_wav_16k_mono(path)
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.wav"):
        read_wav(tmp_path / "nope.wav")


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
