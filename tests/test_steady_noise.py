"""Steady background sound must not hold the customer's turn open (issue 26): once Silero has
confirmed a turn, Silero (with hysteresis) says where the speech stops, not webrtcvad's
energy. Real recordings from ../shared; bench/steady_noise.py prints the figures over every
noise clip. A Silero model that fails leaves webrtcvad's silence bound in charge."""

from __future__ import annotations

import numpy as np
import pytest

from speech.listen import FrontEnd, NotSpeech, SecondStage
from speech.silero import SileroStream
from speech.stt import Transcriber
from speech.types import Utterance
from speech.vad import Endpointer
from tests.hearing_tools import events_of, front_end, looped, read_clip, voice_onset, voiced_s, wer
from tests.shared_data import shared_data

SENTENCE = "cmu_arctic/cmu_arctic_us_aew_a0001_16k.wav"
WORDS = "Author of the danger trail, Philip Steels, etc."
ENDS_WITHIN_S = 1.5  # the target: the turn ends this soon after the last word


def sentence_in_noise(noise: str, seconds: float = 24.0) -> tuple[bytes, float, float]:
    """The sentence in the middle of ``noise`` looped to ``seconds``, both at their recorded
    level; with the stream times of the sentence's first and last loud 10 ms."""
    speech = read_clip(shared_data("audio", "speech", *SENTENCE.split("/")))
    s = np.frombuffer(speech, dtype=np.int16).astype(np.int32)
    x = np.frombuffer(looped(read_clip(shared_data("audio", "noise", noise)), seconds), dtype=np.int16).astype(np.int32)
    at = int(seconds / 2 * 16000) - len(s) // 2
    x[at: at + len(s)] += s
    start = at / 16000 + voice_onset(speech)
    return np.clip(x, -32768, 32767).astype(np.int16).tobytes(), start, start + voiced_s(speech)


@pytest.fixture(scope="module")
def transcriber():
    t = Transcriber()
    t.load()
    return t


async def test_rain_does_not_hold_the_turn_open(transcriber):
    pcm, start, last_word = sentence_in_noise("ibm_rain_16k.wav")
    events = await events_of(pcm, front_end(), silence_after_s=0.0)
    turns = [e for e in events if isinstance(e, Utterance)]
    assert len(turns) == 1, [(e.t_start, e.t_end) for e in turns]
    turn = turns[0]
    decided = turn.t_end + turn.hangover_s - turn.overhang_s  # stream time when the endpointer ended it
    print(f"speech {start:.2f}-{last_word:.2f} s; turn {turn.t_start:.2f}-{turn.t_end:.2f} s, "
          f"decided at {decided:.2f} s ({(decided - last_word) * 1000:.0f} ms after the last word)")
    assert not turn.truncated
    assert decided - last_word <= ENDS_WITHIN_S
    assert turn.t_start >= start - 1.0, "the turn began with the rain, not with the words"
    text = (await transcriber.transcribe(turn)).text
    assert wer(WORDS, text) <= 0.3, text
    # the rain around it is not speech: what else the front end closed was NotSpeech
    assert all(isinstance(e, NotSpeech) for e in events if isinstance(e, (Utterance, NotSpeech)) and e is not turn)


class BrokenSession:
    """A Silero model that raises on every call (a corrupt file, a runtime error)."""

    def run(self, *_args, **_kwargs):
        raise RuntimeError("onnxruntime: invalid model")


async def test_a_failing_silero_leaves_the_silence_bound_in_charge():
    speech = read_clip(shared_data("audio", "speech", *SENTENCE.split("/")))
    last_word = voice_onset(speech) + voiced_s(speech)
    broken = FrontEnd(Endpointer(), SecondStage(SileroStream(BrokenSession())))
    without = FrontEnd(Endpointer(), None)
    heard = [e for e in await events_of(speech, broken, silence_after_s=2.0) if isinstance(e, (Utterance, NotSpeech))]
    alone = [e for e in await events_of(speech, without, silence_after_s=2.0) if isinstance(e, Utterance)]
    assert broken.second is not None and broken.second.stream.failed is not None
    assert len(heard) == 1 and isinstance(heard[0], Utterance), heard  # heard, not dropped as noise
    turn = heard[0]
    assert (turn.t_start, turn.t_end, turn.audio) == (alone[0].t_start, alone[0].t_end, alone[0].audio)
    # ended by the silence bound (hangover_ms after webrtcvad's last voiced frame), not by the flush
    assert turn.ended_by == "silence"
    assert turn.hangover_s - turn.overhang_s == pytest.approx(Endpointer().settings.hangover_ms / 1000, abs=0.03)
    assert turn.t_end >= last_word - 0.25
