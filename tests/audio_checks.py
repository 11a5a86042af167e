"""Checks on audio files that several test suites make."""

from pathlib import Path

from speech.audio import read_pcm16, rms


def wav_rms(path: Path) -> float:
    """Loudness of a wav file, as a fraction of full scale."""
    pcm, _rate = read_pcm16(path)
    return rms(pcm)
