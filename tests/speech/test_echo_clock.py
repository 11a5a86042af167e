"""The echo canceller's clock at start-up (issue 26, item 6): what the robot played before
the microphone opened is not echo; what still plays when it opens is, from when it plays.

Real components: WebRTC's canceller, webrtcvad, Silero, faster-whisper, espeak-ng. The
microphone is a source with a capture clock, as the sound card source has, fed at once
(no pacing): the clock, not the pace, is what is tested."""

from __future__ import annotations

import time
from typing import AsyncIterator

import numpy as np
import pytest

from config.schema import Settings
from robot.app.runtime import _front_end
from speech.audio import split_frames
from speech.audio.capture import CaptureClock
from speech.echo import EchoCanceller
from speech.stt import Transcriber
from speech.types import FRAME_MS, SAMPLE_RATE, Utterance
from tests.speech.conftest import padded_speech

GREETING = "Hello and welcome! I'm Sakura, your travel consultant. Where would you like to go?"
CUSTOMER = "Hello, my name is Ken and I would like to visit Kyoto in April."
TONE = (0.3 * 32767 * np.sin(2 * np.pi * 440 * np.arange(SAMPLE_RATE) / SAMPLE_RATE)).astype("<i2").tobytes()


def test_what_played_before_the_microphone_opened_is_not_echo() -> None:
    echo = EchoCanceller()
    echo.far(TONE, SAMPLE_RATE)  # one second, playing from now
    echo.clock = lambda: time.monotonic() + 2.0  # the microphone's first frame: after it ended
    frame = bytes(2 * SAMPLE_RATE * FRAME_MS // 1000)
    for _ in range(10):
        echo.near(frame)
        assert echo.kept_db is None  # nothing plays on the microphone's clock


def test_what_still_plays_when_the_microphone_opens_is_echo_from_when_it_plays() -> None:
    echo = EchoCanceller()
    written = time.monotonic()
    echo.far(TONE, SAMPLE_RATE)  # plays from `written` to one second later
    echo.clock = lambda: written + 0.5  # the microphone opened half way through
    frame = bytes(2 * SAMPLE_RATE * FRAME_MS // 1000)
    playing = []
    for _ in range(50):
        echo.near(frame)
        playing.append(echo.kept_db is not None)
    # its last half second: the first 25 frames (of 20 ms), give or take one
    assert all(playing[:24]) and not any(playing[26:])


class _CardSource:
    """A microphone that opened at ``opened`` (time.monotonic()): each frame with its capture time."""

    def __init__(self, pcm: bytes, opened: float) -> None:
        self.pcm, self.opened = pcm, opened
        self.capture = CaptureClock()

    async def frames(self) -> AsyncIterator[bytes]:
        for index, frame in enumerate(split_frames(self.pcm)):
            self.capture.stamp(frame, self.opened + (index + 1) * FRAME_MS / 1000)
            yield frame

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def transcriber() -> Transcriber:
    t = Transcriber()
    t.load()
    return t


@pytest.mark.asyncio
async def test_the_first_words_after_the_greeting_are_heard_whole(transcriber) -> None:
    """`robot run` says its greeting, then opens the microphone; the customer speaks at once."""
    front_end = _front_end(Settings())  # as `robot run` builds it: the echo canceller on
    assert front_end.echo is not None
    greeting = padded_speech(GREETING, before_s=0.0, after_s=0.0, rate=150)
    front_end.echo.far(greeting.pcm, SAMPLE_RATE)  # the robot's speaker, as each block was written
    played = len(greeting.pcm) / 2 / SAMPLE_RATE
    customer = padded_speech(CUSTOMER, before_s=0.1, after_s=1.5)
    source = _CardSource(customer.pcm, opened=time.monotonic() + played + 0.2)
    heard = [e async for e in front_end.events(source) if isinstance(e, Utterance)]
    assert len(heard) == 1
    onset = heard[0].t_start
    assert abs(onset - customer.speech_start) <= 0.15, f"heard from {onset:.2f} s, spoken from {customer.speech_start:.2f} s"
    words = (await transcriber.transcribe(heard[0])).text.lower()
    for word in ("hello", "name", "ken", "visit"):  # tiny.en hears espeak's "Kyoto in April" as it likes
        assert word in words, words


def test_a_reply_after_the_silence_the_card_played_follows_it_to_the_sample() -> None:
    """A sound card that plays silence between replies says so (speech/audio/device_sink.py):
    the next reply is placed where it follows that silence, to the sample, and so at the same
    echo delay as the reply before it. Placed afresh where the listen loop was (one stream per
    reply), that place moved 5-33 ms on the PulseAudio card and the robot cut its own reply."""
    echo = EchoCanceller(linear_ms=0)
    echo.near(bytes(2 * SAMPLE_RATE * FRAME_MS // 1000))  # the microphone is open: its clock runs
    first, second = TONE[: 2 * 1000], TONE[2 * 3000: 2 * 4000]  # 1,000 samples each
    echo.far(first, SAMPLE_RATE)
    echo.far_silence(2 * 7003 + 1, 2 * SAMPLE_RATE)  # told at another rate: 7,003.5 samples at 16 kHz
    echo.far(second, SAMPLE_RATE)
    echo.far_silence(2 * 160, 2 * SAMPLE_RATE)
    frames = []
    while echo._far:  # what plays at each microphone frame from now, as the canceller will take it
        frames.append(echo._due())
    played = b"".join(far if far is not None else bytes(320) for far in frames)
    expected = first + bytes(2 * 7003) + second + bytes(2 * 160)
    assert len(played) >= len(first + bytes(2 * 7003) + second)
    assert played == expected[: len(played)]
    assert frames[0] is not None and frames[10] is None  # the silence is no voice: nothing to cancel


def test_blocks_converted_one_by_one_keep_the_cards_count() -> None:
    """espeak-ng's 22,050 Hz in blocks of 220 samples is 159.6 samples a block at 16 kHz; each
    block converted on its own is rounded, and the reference slid 4 ms a second off the echo.
    What the rounding took is made up in the silence after."""
    echo = EchoCanceller(linear_ms=0)
    echo.near(bytes(2 * SAMPLE_RATE * FRAME_MS // 1000))
    block = (np.ones(220) * 1000).astype("<i2").tobytes()
    for _ in range(100):
        echo.far(block, 22050)
    echo.far_silence(22050, 22050)  # one second
    placed = 160 * len(echo._far) + len(echo._far_rest) // 2
    assert abs(placed - (100 * 220 + 22050) * SAMPLE_RATE / 22050) <= 1
