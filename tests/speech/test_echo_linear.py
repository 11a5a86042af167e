"""The linear echo filter beside WebRTC's canceller (speech/echo_linear.py): it learns the
robot's echo, keeps a quiet customer whole where the canceller's suppressor does not, and is
judged afresh at each reply.

Real components: espeak-ng says the robot's reply, libspeexdsp's filter and WebRTC's canceller
take its echo (back at -6 dB, 50 ms late) out; the customer is a recorded sentence at -40 dBFS."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speech import echo_linear
from speech.echo import EchoCanceller
from speech.echo_linear import FRAME_BYTES, LinearEcho
from speech.types import SAMPLE_RATE
from tests.hearing_tools import LONG_SPEECH, at_level, echo_microphone, read_clip, robot_says
from tests.shared_data import shared_data

pytestmark = pytest.mark.skipif(not echo_linear.available(), reason="libspeexdsp1 is not installed")


@pytest.fixture(scope="module")
def robot_voice() -> bytes:
    # espeak-ng's command line, byte for byte the same each run: pyttsx3's renderings differ by a
    # few hundred samples run to run, and Speex alone (no quick start) then heard the filter's
    # frames for 308 of 703 frames of this reply in one suite run, over half in others
    return robot_says(*LONG_SPEECH.split(". "), voice="en-us", rate=150)


def level_dbfs(pcm: bytes) -> float:
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    return 10 * math.log10(max(float(np.mean(x * x)), 1e-3) / 32768.0 ** 2)


def run(filter_: LinearEcho, mic: bytes, far: bytes) -> bytes:
    """The filter over ``mic``, with ``far`` (what the loudspeaker played with each frame)."""
    frames = min(len(mic), len(far)) // FRAME_BYTES
    return b"".join(filter_.cancel(mic[i * FRAME_BYTES:(i + 1) * FRAME_BYTES], far[i * FRAME_BYTES:(i + 1) * FRAME_BYTES])
                    for i in range(frames))


def test_it_learns_the_echo_and_keeps_a_quiet_voice_whole(robot_voice):
    half = len(robot_voice) // 2 // FRAME_BYTES * FRAME_BYTES
    first, second = robot_voice[:half], robot_voice[half:]
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0004_16k.wav")), -40.0)
    customer = customer[: min(len(customer), len(second)) // FRAME_BYTES * FRAME_BYTES]
    echo_only = echo_microphone(second)[: len(second)]
    mic = echo_microphone(second, customer=customer, customer_at_s=0.0)[: len(second)]
    learnt = _learnt(first)  # the echo alone, for the reply's first half
    assert learnt.converged
    # what is left of the echo alone is 20 dB or more under it ...
    assert level_dbfs(run(learnt, echo_only, second)) <= level_dbfs(echo_only) - 20
    # ... and the customer comes through within a few dB of their own level (WebRTC's
    # canceller, its suppressor, takes about 18 dB of them)
    out = run(_learnt(first), mic, second)[: len(customer)]
    assert level_dbfs(out) >= level_dbfs(customer) - 4


def _learnt(voice: bytes) -> LinearEcho:
    filter_ = LinearEcho(200)
    run(filter_, echo_microphone(voice)[: len(voice)], voice)
    return filter_


def test_it_is_judged_afresh_at_each_reply(robot_voice):
    filter_ = _learnt(robot_voice)
    assert filter_.converged
    silence = bytes(FRAME_BYTES)
    for _ in range(20):  # the robot fell silent for 200 ms, the filter's length: it hears that silence
        assert filter_.cancel(silence, None) is not None
    assert filter_.cancel(silence, None) is None  # then nothing more to hear, nothing computed
    next_reply = robot_voice[: SAMPLE_RATE // 2 * 2]  # its next reply's first 0.5 s
    run(filter_, echo_microphone(next_reply)[: len(next_reply)], next_reply)
    assert not filter_.converged  # under a second of this reply: not heard yet


def linear_heard(robot_voice: bytes, quick_start: bool) -> list[bool]:
    """Whether the canceller gave the linear filter's frame, for each 20 ms microphone frame of
    the robot's first reply after start-up."""
    canceller = EchoCanceller(50, linear_ms=200, quick_start=quick_start)
    mic = echo_microphone(robot_voice)
    frame, heard = 640, []
    canceller.near(bytes(frame))  # the microphone opens before the robot speaks
    for i in range(len(robot_voice) // frame):
        canceller.far(robot_voice[i * frame:(i + 1) * frame], SAMPLE_RATE)
        canceller.near(mic[i * frame:(i + 1) * frame])
        heard.append(canceller.linear is not None)
    return heard


def test_the_canceller_gives_the_linear_frame_only_once_learnt(robot_voice):
    heard = linear_heard(robot_voice, quick_start=False)
    assert not any(heard[:50])  # its first second: the filter has not earned its say
    assert sum(heard) > len(heard) // 2  # later, mostly heard
    assert EchoCanceller(50, linear_ms=0).linear is None
    # with the echo path solved from the reply's first 0.6 s and checked on the next 0.2 s
    # (speech/echo_path.py): heard from then on, not before
    quick = linear_heard(robot_voice, quick_start=True)
    assert not any(quick[:38]) and all(quick[45:100]), quick[:100].index(True)
