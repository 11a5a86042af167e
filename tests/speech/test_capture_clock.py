"""The capture clock (speech/audio/capture.py): an utterance's wait is counted from when its
last sound was captured, not from when the loop heard webrtcvad's last voiced frame.

Real webrtcvad (the endpointer as `robot run` builds it) on espeak-ng speech and on read
speech from ../shared; the frames are stamped as the sound card source stamps them."""

from __future__ import annotations

import glob

import numpy as np
import pytest

from config.schema import Settings
from speech.audio import pcm_to_float, read_wav_16k_mono, silence, split_frames
from speech.audio.capture import CaptureClock
from speech.types import FRAME_MS, Utterance
from speech.vad import Endpointer
from tests.speech.conftest import padded_speech

OPENED = 1000.0  # time.monotonic() of the first frame's capture
LOOP_LAG_S = 0.06  # input buffering and queueing: the loop hears a frame this long after capture


def ends(pcm: bytes) -> tuple[Utterance, float]:
    """The first utterance in ``pcm`` (as the endpointer ended it) and when its voice ended
    by the capture clock (time.monotonic())."""
    clock, endpointer = CaptureClock(), Endpointer(Settings().vad)
    for index, frame in enumerate(split_frames(pcm)):
        end = OPENED + (index + 1) * FRAME_MS / 1000
        clock.stamp(frame, end)
        if (utterance := endpointer.feed(frame, now=end + LOOP_LAG_S)) is not None:
            stamped = clock.restamp(utterance)
            return utterance, stamped.ended_at - stamped.hangover_s
    raise AssertionError("no utterance")


def last_sound(pcm: bytes, threshold: float = 0.01) -> float:
    """Seconds into ``pcm`` of its last sample louder than ``threshold`` (bench/live_latency.py's)."""
    return (np.flatnonzero(np.abs(pcm_to_float(pcm)) > threshold)[-1] + 1) / 16000


@pytest.mark.parametrize("text", ["Hello, my name is Ken and I would like to visit Kyoto in April.",
                                  "What temples should we see there?"])
def test_the_wait_counts_from_the_last_sound_and_the_input_path(text: str) -> None:
    spoken = padded_speech(text, before_s=0.5, after_s=1.5, rate=150)
    utterance, voice_end = ends(spoken.pcm)
    # webrtcvad calls frames voiced for about 100 ms after the voice stops ...
    assert utterance.t_end - spoken.speech_end > 0.06
    # ... the stamp is within 30 ms of the real end, whatever the loop's lag
    assert abs(voice_end - (OPENED + spoken.speech_end)) <= 0.03
    assert utterance.hangover_s < 1.0 + 0.06 + 0.2  # the endpointer's wait + the lag + the overhang


def test_read_speech_ends_where_its_last_sound_does(shared_audio) -> None:
    clips = sorted(glob.glob(str(shared_audio / "speech/cmu_arctic/*.wav")))
    if not clips:
        pytest.skip("no cmu_arctic clips")
    errors, vad_errors = [], []
    for path in clips:
        pcm = silence(0.5) + read_wav_16k_mono(path) + silence(1.5)
        utterance, voice_end = ends(pcm)
        errors.append(voice_end - OPENED - last_sound(pcm))
        vad_errors.append(utterance.t_end - last_sound(pcm))
        assert voice_end - OPENED <= utterance.t_end + 1e-6  # never later than the VAD said
    assert float(np.median(np.abs(errors))) <= 0.02, errors
    assert float(np.median(np.abs(vad_errors))) > 0.05, vad_errors  # what it was without


def test_without_stamps_an_utterance_is_left_as_it_was() -> None:
    utterance = Utterance(audio=b"", t_start=0.0, t_end=1.0, ended_at=5.0, hangover_s=1.0)
    assert CaptureClock().restamp(utterance) == utterance
