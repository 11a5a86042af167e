"""Speech to text started at the customer's pause is reused when the turn ends with the
same audio, and dropped when they go on (real faster-whisper, real speech)."""

from __future__ import annotations

import asyncio

import pytest

from speech.audio import read_wav_16k_mono
from speech.stt import Transcriber
from tests.shared_data import shared_data

CLIP = ("audio", "speech", "ljspeech", "LJ001-0002_16k.wav")  # "in being comparatively modern."


@pytest.fixture(scope="module")
def transcriber() -> Transcriber:
    stt = Transcriber()
    yield stt
    stt.close()


async def test_the_early_transcript_is_the_turns_when_the_audio_is_the_same(transcriber: Transcriber):
    pcm = read_wav_16k_mono(shared_data(*CLIP))
    transcriber.transcribe_early(pcm, ["Kyoto"])
    early = transcriber._early[1]  # noqa: SLF001 - the running job, to compare with what the turn gets
    await asyncio.sleep(0)
    transcript = await transcriber.transcribe(pcm, ["Kyoto"])
    assert transcript is early.result() and "modern" in transcript.text.lower()  # one run, not two


async def test_other_audio_is_transcribed_afresh(transcriber: Transcriber):
    pcm = read_wav_16k_mono(shared_data(*CLIP))
    transcriber.transcribe_early(pcm[: len(pcm) // 2 // 2 * 2], [])  # they went on after this pause
    early = transcriber._early[1]  # noqa: SLF001
    whole = await transcriber.transcribe(pcm, [])
    assert whole is not early.result() and "modern" in whole.text.lower()
    assert transcriber._early is None  # noqa: SLF001 - the dropped early job is forgotten


async def test_the_early_transcript_places_its_last_word(transcriber: Transcriber):
    # the end-of-turn policy asks whether the words reach the end of the voice: "modern"
    # ends about 1.7 s into the clip, whose voice ends about 1.8 s in (its last 0.1 s is quiet)
    pcm = read_wav_16k_mono(shared_data(*CLIP))
    early = await transcriber.transcribe_early(pcm, [])
    assert early.words_end_s is not None and 1.4 < early.words_end_s < 1.9
    later = await transcriber.transcribe(pcm[: len(pcm) // 2 // 2 * 2], [])  # a turn's own transcript: not placed
    assert later.words_end_s is None
