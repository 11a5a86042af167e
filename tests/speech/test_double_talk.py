"""A quiet customer under the robot's own voice (issue 26, item 5): the front end as the robot
builds it stops for them, and still not for the robot's own voice.

Real components: espeak-ng says the robot's reply, WebRTC's canceller takes its echo (back
at -6 dB, 50 ms late) out of the microphone, webrtcvad and Silero listen; the customer is a
recorded sentence said at -40 dBFS, 12 dB under the echo. Frames are fed at once, the
loudspeaker's block for each microphone frame just before it, as a sound card plays its queue."""

from __future__ import annotations

from typing import Iterator

import pytest

from config.schema import BargeInSettings, Settings, SttSettings
from robot.app.runtime import _front_end
from speech import echo_linear
from speech.double_talk import DoubleTalk
from speech.stt import Transcriber
from tests.hearing_tools import (BARGE_IN_AT_S, LONG_SPEECH, at_level, echo_microphone, first_cut, read_clip,
                                 robot_says, voice_onset, warm_up, wer, words_after_cut)
from tests.shared_data import shared_data

CUSTOMER_AT_S = BARGE_IN_AT_S  # as in the words after the cut


@pytest.fixture(scope="module")
def robot_voice() -> bytes:
    return robot_says(*LONG_SPEECH.split(". "))


def cut_at(robot: bytes, customer: bytes | None, quiet_voice: bool = True) -> float | None:
    """Stream seconds where the front end as the robot builds it first confirms speech while
    the robot speaks (its voice back at -6 dB, 50 ms late; the customer from 1.5 s)."""
    front_end = _front_end(Settings(barge_in=BargeInSettings(quiet_voice=quiet_voice)))
    return first_cut(front_end, robot, echo_microphone(robot, customer=customer, customer_at_s=CUSTOMER_AT_S))


def test_a_quiet_customer_under_the_robots_voice_stops_it(robot_voice):
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0008_16k.wav")), -40.0)
    onset = CUSTOMER_AT_S + voice_onset(customer)
    cut = cut_at(robot_voice, customer)
    assert cut is not None and onset - 0.1 <= cut <= onset + 1.0, (cut, onset)
    # the barge-in bar alone (Silero 0.8, 6 dB of double talk) never hears them: measured, never cut
    alone = cut_at(robot_voice, customer, quiet_voice=False)
    assert alone is None or alone > onset + 1.0, (alone, onset)


@pytest.fixture(scope="module")
def transcriber() -> Iterator[Transcriber]:
    t = Transcriber(SttSettings())
    t.load()
    yield t
    t.close()


@pytest.fixture(scope="module")
def earlier_reply() -> bytes:
    return robot_says("Hello and welcome! I can help you plan a trip to Japan", "Where would you like to go, and when?",
                      "Tell me your budget, and I will find the best offers for you.")


def warm_cut_at(robot: bytes, earlier: bytes, customer: bytes | None, linear_echo_ms: int,
                quick_start: bool = True) -> float | None:
    """As ``cut_at``, on a front end that heard ``earlier`` first (any reply after the first)."""
    front_end = _front_end(Settings(barge_in=BargeInSettings(linear_echo_ms=linear_echo_ms,
                                                             linear_echo_quick_start=quick_start)))
    assert warm_up(front_end, earlier)
    return first_cut(front_end, robot, echo_microphone(robot, customer=customer, customer_at_s=CUSTOMER_AT_S))


@pytest.mark.skipif(not echo_linear.available(), reason="libspeexdsp1 is not installed")
def test_after_a_reply_the_linear_filter_hears_a_quiet_customer_sooner(robot_voice, earlier_reply):
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0002_16k.wav")), -40.0)
    onset = CUSTOMER_AT_S + voice_onset(customer)
    cut = warm_cut_at(robot_voice, earlier_reply, customer, 200)
    assert cut is not None and onset - 0.1 <= cut <= onset + 0.6, (cut, onset)
    # the canceller alone, its suppressor taking 18 dB of them: only where the robot pauses
    alone = warm_cut_at(robot_voice, earlier_reply, customer, 0)
    assert alone is None or alone > cut + 0.3, (alone, cut)
    # and the robot's own voice after that earlier reply is still not a customer
    assert warm_cut_at(robot_voice, earlier_reply, None, 200) is None


@pytest.mark.skipif(not echo_linear.available(), reason="libspeexdsp1 is not installed")
def test_after_a_reply_a_customer_with_a_soft_first_word_is_caught_at_once(robot_voice, earlier_reply):
    # "And it is worth mention ...": Silero scores the soft "And" 0.2-0.4, then 0.6-0.8. Given the
    # canceller's frames and the linear filter's in turns (the front end heard the latter on soft
    # double-talk frames), it scored both under 0.45 and the robot stopped 0.8 s in.
    # After one reply the filter has learnt only part of the echo there (Speex alone, from speech).
    customer = read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0006_16k.wav"))
    onset = CUSTOMER_AT_S + voice_onset(customer)
    cut = warm_cut_at(robot_voice, earlier_reply, customer, 200, quick_start=False)
    assert cut is not None and onset - 0.1 <= cut <= onset + 0.5, (cut, onset)
    # Learnt well (the quick start in that reply, or 25 s of the robot's voice without it), the
    # filter's frames are near silence until the customer speaks, and Silero, after seconds of
    # such frames, scored the soft "And" 0.35-0.47: caught at the next word, 0.65 s in. Its
    # twin stream now starts afresh where the filter's frames begin to be heard.
    cut = warm_cut_at(robot_voice, earlier_reply, customer, 200)
    assert cut is not None and onset - 0.1 <= cut <= onset + 0.5, (cut, onset)


@pytest.mark.skipif(not echo_linear.available(), reason="libspeexdsp1 is not installed")
def test_a_quiet_customer_who_cut_the_robot_is_heard_whole(robot_voice, earlier_reply, transcriber):
    # their first words are said under the robot's voice: the linear filter's frame keeps them
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0004_16k.wav")), -40.0)
    text = "produced the block books, which were the immediate predecessors of the true printed book,"
    heard = {}
    for linear_echo_ms in (200, 0):
        front_end = _front_end(Settings(barge_in=BargeInSettings(linear_echo_ms=linear_echo_ms)))
        assert warm_up(front_end, earlier_reply)
        heard[linear_echo_ms] = words_after_cut(front_end, robot_voice, customer, transcriber)
    assert wer(text, heard[200]) <= 0.15, heard
    # the canceller's frame alone: their first words lost ("which were the immediate ...")
    assert wer(text, heard[0]) >= wer(text, heard[200]) + 0.2, heard


@pytest.mark.parametrize("voice", ["en-us", "en-gb"])
def test_the_robots_own_voice_alone_does_not_stop_it(voice):
    reply = robot_says("Our Kyoto temple tour costs two hundred and forty dollars a person, with a guide and lunch.",
                       "It leaves every morning at nine from the station, and you will be back by five.",
                       voice=voice, rate=170)
    assert cut_at(reply, None) is None


def test_loud_music_under_the_robots_voice_seldom_stops_it(robot_voice):
    # a piano 7 dB under the robot's echo passes the canceller (it is not the robot's voice);
    # in real time, before the loud-room bound, the soft bar cut 2 of 3 such replies. A known
    # edge: at one moment of the clip (3.14 s) it still crosses the soft bar at some levels
    # for some renderings of the voice (this one at -35 dBFS; pyttsx3's, which differs run to
    # run, at -33 or none), so the guard is on how many levels cut, not on one level
    piano = read_clip(shared_data("audio", "noise", "ibm_piano_16k.wav"))
    cuts = {db: first_cut(_front_end(Settings()), robot_voice, echo_microphone(robot_voice, noise=piano, noise_dbfs=db))
            for db in (-33.0, -35.0, -37.0, -40.0)}
    assert sum(cut is not None for cut in cuts.values()) <= 1, cuts


def test_soft_double_talk_waits_for_the_residue_and_stands_over_it():
    talk = DoubleTalk()
    t = 0.0
    for _ in range(20):  # 0.4 s of the robot's voice: the residue is not known yet
        talk.hear(t, -20.0, -45.0)
        t += 0.02
    assert talk.soft_s(0.0) == 0.0
    for _ in range(30):  # the canceller's usual residue: -60 dBFS, 35 dB taken out
        talk.hear(t, -35.0, -60.0)
        t += 0.02
    talk.hear(t, -21.0, -49.0)  # a quiet voice: 11 dB over the residue, -21 dB kept
    talk.hear(t + 0.02, -30.0, -49.0)  # kept too little: the echo, louder
    talk.hear(t + 0.04, -21.0, -55.0)  # only 5 dB over the residue
    talk.hear(t + 0.06, None, -40.0)  # nothing plays: no double talk
    assert talk.soft_s(t) == pytest.approx(0.02)
    assert talk.loud_s(0.0) == 0.0


def test_no_soft_double_talk_in_a_loud_room():
    talk = DoubleTalk()
    for i in range(50):  # what passes the canceller is the room's noise, at -45 dBFS
        talk.hear(i * 0.02, -20.0, -45.0)
    talk.hear(1.0, -10.0, -34.0)  # 11 dB over it: in a quiet room, a voice
    assert talk.soft_s(0.0) == 0.0


def test_soft_double_talk_reads_the_linear_filter_once_it_is_heard():
    talk = DoubleTalk()
    t = 0.0
    for _ in range(30):  # the linear filter's usual residue: -65 dBFS, 35 dB taken out
        talk.hear(t, -40.0, -70.0, -35.0, -65.0)
        t += 0.02
    # a quiet voice: the canceller's suppressor took it (-40 dB kept, at its residue), the
    # linear filter kept it whole (-12 dB kept, 25 dB over its residue)
    talk.hear(t, -40.0, -70.0, -12.0, -40.0)
    talk.hear(t + 0.02, -40.0, -70.0, -28.0, -50.0)  # kept too little there: the echo
    talk.hear(t + 0.04, -40.0, -70.0)  # the filter not heard (a new reply): the canceller's figures
    assert talk.soft_s(t) == pytest.approx(0.02)


@pytest.mark.parametrize("usually_kept, soft", [(-35.0, True), (-20.0, False)])
def test_the_linear_filters_kept_bar_follows_how_well_it_has_learnt(usually_kept, soft):
    # A voice under a loud stretch of the robot's keeps little of the frame (-22 dB): that is a
    # voice where the filter usually keeps -35 dB of the robot's, and its echo where it keeps -20.
    talk = DoubleTalk()
    t = 0.0
    for _ in range(30):
        talk.hear(t, -40.0, -70.0, usually_kept, -65.0)
        t += 0.02
    talk.hear(t, -40.0, -70.0, -22.0, -45.0)
    assert talk.soft_s(t) == pytest.approx(0.02 if soft else 0.0)


def test_a_filter_that_has_only_just_learnt_the_echo_does_not_take_its_echo_for_a_voice():
    # The PulseAudio virtual card's loopback resamples: a filter that has just learnt its echo
    # keeps -20 to -26 dB of it at the median, and a quarter of the frames 8 dB more. Its echo
    # then keeps -15 dB in a loud stretch: over -18 dB, which once passed for a quiet voice
    # and cut the robot's own greeting. The bar rises by that spread.
    talk = DoubleTalk()
    t = 0.0
    for i in range(40):
        talk.hear(t, -40.0, -70.0, (-28.0, -28.0, -20.0, -12.0)[i % 4], -65.0)
        t += 0.02
    talk.hear(t, -40.0, -70.0, -15.0, -40.0)  # the echo in a loud stretch
    assert talk.soft_s(t) == 0.0
    talk.hear(t + 0.02, -40.0, -70.0, -6.0, -35.0)  # a voice over it keeps more than the echo's spread
    assert talk.soft_s(t) == pytest.approx(0.02)
