"""The simulated customer's voice: real espeak-ng, the same bytes for the same text."""

import numpy as np

from speech.espeak_cli import EspeakCliSynthesizer

TEXT = "We are two adults, and we want to go in April."


async def test_same_text_same_audio():
    voice = EspeakCliSynthesizer("en-us", 140)
    first = await voice.synthesize(TEXT, sample_rate=16000)
    second = await voice.synthesize(TEXT, sample_rate=16000)
    assert first.pcm == second.pcm
    assert first.sample_rate == 16000
    assert 2.0 < first.duration_s < 5.0
    assert np.abs(np.frombuffer(first.pcm, dtype=np.int16)).max() > 3000  # not silent


async def test_rate_changes_duration():
    slow = await EspeakCliSynthesizer("en-us", 100).synthesize(TEXT)
    fast = await EspeakCliSynthesizer("en-us", 200).synthesize(TEXT)
    assert slow.duration_s > 1.5 * fast.duration_s


def test_unknown_voice_is_a_clear_error():
    import pytest

    with pytest.raises(ValueError, match="unknown TTS voice 'no-such-voice'"):
        EspeakCliSynthesizer("no-such-voice", 140)
