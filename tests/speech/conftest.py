"""Shared helpers for the speech tests: synthesized speech with known boundaries, and the
path of ../shared/data/audio (see tests/shared_data.py: a failure under CI when it is
missing, a skip elsewhere)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from speech.audio import mix_under, pcm_to_float, silence, split_frames
from speech.tts import Synthesizer
from speech.types import SAMPLE_RATE, Utterance
from speech.vad import Endpointer
from tests.shared_data import shared_data


@pytest.fixture
def shared_audio() -> Path:
    """../shared/data/audio; a missing file under it goes to ``tests.shared_data.missing``."""
    return shared_data("audio")


@dataclass
class Spoken:
    pcm: bytes  # 16 kHz mono int16, silence included
    speech_start: float  # seconds: first/last sample louder than -40 dBFS
    speech_end: float


def speech_extent(pcm: bytes, threshold: float = 0.01) -> tuple[float, float]:
    """Where the non-silent audio starts and ends, in seconds."""
    loud = np.flatnonzero(np.abs(pcm_to_float(pcm)) > threshold)
    return loud[0] / SAMPLE_RATE, (loud[-1] + 1) / SAMPLE_RATE


def padded_speech(text: str, before_s: float = 1.5, after_s: float = 1.5, rate: int = 140) -> Spoken:
    """espeak-ng speech at 16 kHz with silence around it, and its true boundaries."""
    audio = Synthesizer("en-us", rate).synthesize_sync(text, sample_rate=SAMPLE_RATE)
    start, end = speech_extent(audio.pcm)
    pcm = silence(before_s) + audio.pcm + silence(after_s)
    return Spoken(pcm, before_s + start, before_s + end)


def mix(pcm: bytes, noise: np.ndarray, gain: float) -> bytes:
    """Add noise (float, looped to length) under int16 PCM."""
    return mix_under(pcm, noise, gain)


def run(endpointer: Endpointer, pcm: bytes) -> list[tuple[Utterance, float]]:
    """Each utterance and the stream time at which feed() returned it."""
    found = []
    for index, frame in enumerate(split_frames(pcm)):
        now = (index + 1) * 0.02
        utterance = endpointer.feed(frame, now=now)
        if utterance is not None:
            found.append((utterance, now))
    last = endpointer.flush(now=len(pcm) / 32000)
    if last is not None:
        found.append((last, len(pcm) / 32000))
    return found
