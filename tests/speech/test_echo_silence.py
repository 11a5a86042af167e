"""The echo canceller after the robot was cut: a quiet customer's voice passes it whole.

WebRTC's canceller is built for a loudspeaker stream that never stops; the robot's stops
between replies and, in mid-word, when a customer cuts it. Given no loudspeaker frames then,
the canceller went on suppressing as if the last ones still played: a customer at -40 dBFS
after a cut came out 5-15 dB down for seconds (20-40 dB in the front end's bench), Silero
heard no speech, and the turn of a quiet customer who had just stopped the robot was dropped.
The loudspeaker's silence is now given as silence.

Real components: espeak-ng says the robot's reply, its echo comes back at -6 dB, 50 ms late;
the customer is a recorded sentence at -40 dBFS, spoken after the robot stopped."""

from __future__ import annotations

import math

import numpy as np

from speech.echo import EchoCanceller
from speech.tts import Synthesizer
from speech.types import SAMPLE_RATE
from tests.hearing_tools import LONG_SPEECH, at_level, echo_microphone, read_clip
from tests.shared_data import shared_data

FRAME = 640  # 20 ms


def level_dbfs(pcm: bytes) -> float:
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    return 10 * math.log10(max(float(np.mean(x * x)), 1e-3) / 32768.0 ** 2)


def test_a_quiet_customer_after_the_robot_was_cut_passes_the_canceller():
    synth = Synthesizer(voice="en-us", rate=150)
    reply = b"".join(synth.synthesize_sync(text, sample_rate=SAMPLE_RATE).pcm for text in LONG_SPEECH.split(". "))
    reply = reply[: int(1.3 * SAMPLE_RATE) * 2 // FRAME * FRAME]  # cut 1.3 s in, in mid-word
    canceller = EchoCanceller(50, linear_ms=0)
    canceller.near(bytes(FRAME))  # the microphone opens before the robot speaks
    mic = echo_microphone(reply)
    for i in range(len(reply) // FRAME):  # the robot's reply, its echo only
        canceller.far(reply[i * FRAME:(i + 1) * FRAME], SAMPLE_RATE)
        canceller.near(mic[i * FRAME:(i + 1) * FRAME])
    for i in range(5):  # the echo's tail, 100 ms
        canceller.near(mic[len(reply) + i * FRAME: len(reply) + (i + 1) * FRAME])
    customer = at_level(read_clip(shared_data("audio", "speech", "ljspeech", "LJ001-0004_16k.wav")), -40.0)
    customer = customer[: len(customer) // FRAME * FRAME]
    window, span = SAMPLE_RATE // 5 * 2, int(1.6 * SAMPLE_RATE) * 2  # 200 ms windows over their first 1.6 s
    out = b"".join(canceller.near(customer[i:i + FRAME]) for i in range(0, span, FRAME))
    assert canceller.kept_db is None  # nothing plays
    lost = [level_dbfs(out[i:i + window]) - level_dbfs(customer[i:i + window]) for i in range(0, span, window)]
    # whole: their voice within 2 dB at the median (before: 6 dB taken, up to 14 dB in a window)
    assert sorted(lost)[len(lost) // 2] >= -2.0, [round(x) for x in lost]
