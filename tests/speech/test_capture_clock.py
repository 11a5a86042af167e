"""The capture clock (speech/audio/capture.py): on a sound card an utterance's wait is
counted from when its last sound was captured, not from when the loop heard it: the
listen loop's wait from the last sound (speech/voice_end.py) plus the input path.

Real webrtcvad and Silero (the front end as `robot run` builds it, without the echo
canceller) on espeak-ng speech; the frames are stamped as the sound card source stamps them."""

from __future__ import annotations

import time
from typing import AsyncIterator

import pytest

from config.schema import BargeInSettings, Settings
from robot.app.runtime import _front_end
from speech.audio import QueueSource, split_frames
from speech.audio.capture import CaptureClock
from speech.types import Utterance
from tests.speech.conftest import padded_speech

LOOP_LAG_S = 0.06  # input buffering and queueing: the loop hears a frame this long after capture


class _CardSource:
    """A sound card, fed at once: each frame stamped as captured ``LOOP_LAG_S`` before the
    loop hears it (the loop decides on a frame before the source yields the next one)."""

    def __init__(self, pcm: bytes) -> None:
        self.pcm, self.capture = pcm, CaptureClock()

    async def frames(self) -> AsyncIterator[bytes]:
        for frame in split_frames(self.pcm):
            self.capture.stamp(frame, time.monotonic() - LOOP_LAG_S)
            yield frame

    async def aclose(self) -> None:
        return None


async def _utterance(source: object) -> Utterance:
    front_end = _front_end(Settings(barge_in=BargeInSettings(echo_cancel=False)))
    found = [e async for e in front_end.events(source) if isinstance(e, Utterance)]  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.asyncio
@pytest.mark.parametrize("text", ["Hello, my name is Ken and I would like to visit Kyoto in April.",
                                  "What temples should we see there?"])
async def test_the_wait_counts_from_the_last_sound_and_the_input_path(text: str) -> None:
    spoken = padded_speech(text, before_s=0.5, after_s=1.5, rate=150)
    card = _CardSource(spoken.pcm)
    on_card = await _utterance(card)
    source = QueueSource()
    source.push(spoken.pcm)
    source.close()
    from_file = await _utterance(source)
    # webrtcvad calls frames voiced after the voice stops (19-111 ms seen: espeak-ng's ending
    # varies run to run by some milliseconds): not counted as voice
    assert on_card.t_end > spoken.speech_end and on_card.overhang_s > 0
    # the card adds the input path to the wait a file source counts, once
    assert (on_card.t_end, on_card.overhang_s) == (from_file.t_end, from_file.overhang_s)
    assert on_card.hangover_s - from_file.hangover_s == pytest.approx(LOOP_LAG_S, abs=0.015)


def test_without_stamps_an_utterance_is_left_as_it_was() -> None:
    utterance = Utterance(audio=b"", t_start=0.0, t_end=1.0, ended_at=5.0, hangover_s=1.0)
    assert CaptureClock().restamp(utterance) == utterance


def test_the_input_path_is_added_to_the_wait() -> None:
    clock = CaptureClock()
    clock.stamp(bytes(640), 4.93)  # the frame that ended the turn was captured 70 ms before the loop decided
    utterance = Utterance(audio=b"", t_start=0.0, t_end=1.0, ended_at=5.0, hangover_s=1.1, overhang_s=0.1)
    assert clock.restamp(utterance).hangover_s == pytest.approx(1.17)
