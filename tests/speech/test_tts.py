"""Synthesizer: pyttsx3 + espeak-ng for real."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from speech.audio import pcm_to_float
from speech.tts import Synthesizer, available_voices


@pytest.mark.asyncio
async def test_synthesizes_plausible_speech() -> None:
    text = "Kyoto has many old temples and beautiful gardens."  # 8 words
    audio = await Synthesizer("en-us", 150).synthesize(text)
    assert audio.sample_rate == 22050 and audio.text == text
    assert 2.0 < audio.duration_s < 6.0  # ~150 words a minute
    assert np.sqrt(np.mean(pcm_to_float(audio.pcm) ** 2)) > 0.02


@pytest.mark.asyncio
async def test_rate_and_resampling() -> None:
    text = "Please tell me about the castle."
    slow = await Synthesizer("en-us", 100).synthesize(text)
    fast = await Synthesizer("en-us", 250).synthesize(text, sample_rate=16000)
    assert fast.sample_rate == 16000
    assert slow.duration_s > 1.5 * fast.duration_s


@pytest.mark.asyncio
async def test_concurrent_calls_are_serialized_safely() -> None:
    synth = Synthesizer("English (America)", 160)
    texts = [f"This is sentence number {n}." for n in range(6)]
    results = await asyncio.gather(*(synth.synthesize(t) for t in texts))
    assert [r.text for r in results] == texts
    assert all(r.duration_s > 0.8 for r in results)


@pytest.mark.asyncio
async def test_empty_text_is_empty_audio() -> None:
    assert (await Synthesizer().synthesize("  ")).pcm == b""


def test_unknown_voice_lists_some_real_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown TTS voice 'no-such-voice'.*en-us"):
        Synthesizer("no-such-voice")
    assert any(vid.endswith("/en-us") for vid, _, _ in available_voices())
    assert Synthesizer("gmw/en-us").voice_id == Synthesizer("en-us").voice_id


def test_alternating_rates_and_voices_hold() -> None:
    """espeak-ng applies parameter changes asynchronously; each call must get its own rate."""
    text = "I would like to plan a trip to the mountains and the sea next spring."
    slow, fast = Synthesizer("en-us", 110), Synthesizer("en-gb-x-rp", 260)
    durations = {"slow": [], "fast": []}
    for _ in range(4):
        durations["slow"].append(slow.synthesize_sync(text).duration_s)
        durations["fast"].append(fast.synthesize_sync(text).duration_s)
    for name, values in durations.items():
        assert max(values) - min(values) < 0.05, (name, values)
    assert min(durations["slow"]) > 1.6 * max(durations["fast"])
