"""The echo path solved for at once from the robot's first words (speech/echo_path.py), and the
linear filter's quick start on it (speech/echo_linear.py).

Real components: espeak-ng says the robot's reply, libspeexdsp's filter learns what the estimate
missed; the echo is the reply through a room's path (a 50 ms delay at -6 dB, and where said a
reverberant tail of 250 ms); the customers are recorded sentences from ../shared."""

from __future__ import annotations

import numpy as np
import pytest

from speech import echo_linear, echo_path
from speech.echo_linear import FRAME, FRAME_BYTES, LinearEcho
from speech.types import SAMPLE_RATE
from tests.hearing_tools import LONG_SPEECH, at_level, read_clip, robot_says
from tests.shared_data import shared_data

pytestmark = pytest.mark.skipif(not echo_linear.available(), reason="libspeexdsp1 is not installed")
TAPS = SAMPLE_RATE // 5  # the filter's 200 ms


@pytest.fixture(scope="module")
def robot_voice() -> np.ndarray:
    return np.frombuffer(robot_says(*LONG_SPEECH.split(". ")), dtype=np.int16).astype(np.float64)


def room_path(reverberant: bool) -> np.ndarray:
    """A loudspeaker heard 50 ms late at -6 dB, and with ``reverberant`` a decaying tail (RT60
    250 ms) of reflections behind it."""
    h = np.zeros(TAPS)
    h[800] = 10 ** (-6 / 20)
    if reverberant:
        t = np.arange(TAPS - 810)
        h[810:] += np.random.default_rng(7).normal(0, 1, len(t)) * np.exp(-t / SAMPLE_RATE * 6.9 / 0.25) * 0.08
    return h


def microphone(far: np.ndarray, path: np.ndarray, customer: bytes | None = None, at_s: float = 0.0) -> np.ndarray:
    mic = echo_path.convolve(far, path)
    if customer is not None:
        voice = np.frombuffer(customer, dtype=np.int16).astype(np.float64)
        start = int(at_s * SAMPLE_RATE)
        voice = voice[: len(mic) - start]
        mic[start: start + len(voice)] += voice
    return np.clip(mic, -32768, 32767)


def level_db(x: np.ndarray) -> float:
    return 10 * float(np.log10(max(float(np.mean(x * x)), 1e-3) / 32768.0 ** 2))


def frames(x: np.ndarray, i: int) -> bytes:
    return np.rint(x[i * FRAME:(i + 1) * FRAME]).astype(np.int16).tobytes()


def frame_samples(x: np.ndarray, i: int) -> np.ndarray:
    """Frame ``i`` as the filter gets it: int16 samples, as floats."""
    return np.frombuffer(frames(x, i), dtype=np.int16).astype(np.float64)


@pytest.mark.parametrize("reverberant", [False, True])
def test_the_path_is_solved_from_under_a_second_of_the_robots_voice(robot_voice, reverberant):
    path = room_path(reverberant)
    mic = microphone(robot_voice, path)
    learn = echo_path.LEARN_FRAMES * FRAME
    h = echo_path.estimate(robot_voice[:learn], mic[:learn], TAPS)
    # on the next two seconds, which the fit never saw, the echo is 20 dB down or more
    later = slice(learn, learn + 2 * SAMPLE_RATE)
    rest = mic[later] - echo_path.convolve(robot_voice, h)[later]
    assert level_db(rest) <= level_db(mic[later]) - 20


def test_the_fixed_filter_plays_the_path_frame_by_frame():
    rng = np.random.default_rng(0)
    far, h = rng.normal(0, 1000, SAMPLE_RATE), rng.normal(0, 0.01, TAPS)
    whole = echo_path.convolve(far, h)
    half = SAMPLE_RATE // 2
    fixed = echo_path.FixedEcho(h, FRAME, far[:half])  # taken up half way, with what played before
    by_frame = np.concatenate([fixed.predict(far[i:i + FRAME]) for i in range(half, SAMPLE_RATE, FRAME)])
    assert np.allclose(by_frame, whole[half:], atol=1e-6)


def run_quick_start(far: np.ndarray, mic: np.ndarray, seconds: float) -> tuple[echo_path.QuickStart, list]:
    quick, found = echo_path.QuickStart(TAPS, FRAME), []
    for i in range(int(seconds * 100)):
        if (fit := quick.offer(frame_samples(mic, i), frame_samples(far, i))) is not None and fit.taken:
            found.append((i, fit))
    return quick, found


def test_an_estimate_is_taken_only_where_it_removes_the_echo_on_frames_it_had_not_seen(robot_voice):
    # the echo alone: accepted at its first check, 0.8 s into the reply
    quick, found = run_quick_start(robot_voice, microphone(robot_voice, room_path(True)), 3.0)
    assert [i for i, _ in found] == [echo_path.LEARN_FRAMES + echo_path.CHECK_FRAMES - 1]
    assert found[0][1].kept_db <= -20
    # a customer at their own level talks through the check: that fit is not taken
    customer = read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0002_16k.wav"))
    check_s = echo_path.LEARN_FRAMES / 100
    quick, found = run_quick_start(robot_voice, microphone(robot_voice, room_path(True), customer, check_s), 1.0)
    assert found == [] and quick.tries == 1
    # a microphone that does not hear the loudspeaker (a headset): nothing to take, and the
    # fits stop after MAX_TRIES (each costs 50-100 ms of a core)
    quick, found = run_quick_start(robot_voice, np.zeros_like(robot_voice), 6.0)
    assert found == [] and quick.tries == echo_path.MAX_TRIES and quick.done


def test_the_first_reply_learns_the_echo_within_a_second(robot_voice):
    path = room_path(True)
    mic = microphone(robot_voice, path)
    heard_from = {}
    for quick in (True, False):
        linear = LinearEcho(200, quick_start=quick)
        for i in range(len(robot_voice) // FRAME):
            linear.cancel(frames(mic, i), frames(robot_voice, i))
            if linear.converged:
                heard_from[quick] = i / 100
                break
    assert heard_from[True] <= 1.0, heard_from
    # Speex alone, learning from speech: not in the reply's first five seconds
    assert heard_from.get(False, 99.0) > 5.0, heard_from


def test_a_quiet_customer_over_the_first_reply_comes_through_whole(robot_voice):
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0004_16k.wav")), -40.0)
    at_s = 1.5
    mic = microphone(robot_voice, room_path(True), customer, at_s)
    echo_only = microphone(robot_voice, room_path(True))
    linear = LinearEcho(200)
    out = np.concatenate([np.frombuffer(linear.cancel(frames(mic, i), frames(robot_voice, i)), dtype=np.int16)
                          for i in range(len(robot_voice) // FRAME)]).astype(np.float64)
    assert linear.quick_started
    span = slice(int(at_s * SAMPLE_RATE), int(at_s * SAMPLE_RATE) + len(customer) // 2)
    voice = np.frombuffer(customer, dtype=np.int16).astype(np.float64)[: span.stop - span.start]
    # the customer's sentence, said from 1.5 s into the robot's first reply, comes out within
    # 4 dB of its level, and what is left beside it is 10 dB or more under it
    assert abs(level_db(out[span]) - level_db(voice)) <= 4
    assert level_db(out[span] - voice[: len(out[span])]) <= level_db(voice) - 10
    assert level_db(echo_only[span]) >= level_db(voice) + 10  # where the echo stood 10 dB over them


def test_a_path_that_moves_after_the_estimate_is_learnt_by_speex(robot_voice):
    # the estimate is taken on one path; the next reply plays on another (the loudspeaker 10 ms
    # further, louder): the filter is not heard on its past record, and Speex learns the change
    linear = LinearEcho(200)
    first = microphone(robot_voice, room_path(True))
    for i in range(300):
        linear.cancel(frames(first, i), frames(robot_voice, i))
    assert linear.quick_started and linear.converged
    for _ in range(20):
        linear.cancel(bytes(FRAME_BYTES), None)  # the robot fell silent: its tail
    moved = np.roll(room_path(True), 160) * 1.4
    second = microphone(robot_voice, moved)
    heard = []
    for i in range(len(robot_voice) // FRAME):
        linear.cancel(frames(second, i), frames(robot_voice, i))
        heard.append(linear.converged)
    assert not any(heard[:100])  # the reply's first second judges it afresh: not heard
    assert any(heard[:1200]), "Speex did not learn the moved path within 12 s"


def test_a_fit_whose_reply_ends_during_its_check_is_dropped(robot_voice):
    mic = microphone(robot_voice, room_path(False))
    quick = echo_path.QuickStart(TAPS, FRAME)
    for i in range(echo_path.LEARN_FRAMES + 5):  # the reply ends 50 ms into the check
        assert quick.offer(frame_samples(mic, i), frame_samples(robot_voice, i)) is None
    quick.restart()  # the next reply (from the voice's third second): its frames do not follow the fit's
    far = robot_voice[300 * FRAME:]
    mic = microphone(far, room_path(False))
    found = [i for i in range(100)
             if (fit := quick.offer(frame_samples(mic, i), frame_samples(far, i))) is not None and fit.taken]
    assert found == [echo_path.LEARN_FRAMES + echo_path.CHECK_FRAMES - 1] and quick.tries == 1
