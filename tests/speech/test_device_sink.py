"""The speaker on a sound card, for real (a PulseAudio virtual card, speech/audio/virtual_card.py):
one output stream for the session, fed between replies with silence, and every block it
plays told to the echo canceller's reference in order, so the reference keeps the card's
clock from reply to reply (the robot's own first reply was cut when each reply had its own
stream). Run in a child process: PortAudio finds the virtual card's server from its
environment when it starts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from speech.audio.device_sink import SoundDeviceSink, _Player
from speech.audio.virtual_card import VirtualCard
from speech.types import AudioDeviceError

REPO = Path(__file__).resolve().parents[2]

_PLAY_TWO_REPLIES = r'''
import asyncio, json, time
import numpy as np
from speech.audio.device_sink import SoundDeviceSink
from speech.types import AudioDeviceError

class Reference:
    def __init__(self):
        self.told = []
    def far(self, pcm, rate):
        self.told.append(["voice", len(pcm) // 2, rate, bytes(pcm).hex(), time.monotonic()])
    def far_silence(self, samples, rate):
        self.told.append(["silence", samples, rate, "", time.monotonic()])
    def far_restart(self):
        self.told.append(["restart", 0, 0, "", time.monotonic()])

async def main():
    reference = Reference()
    sink = SoundDeviceSink(reference=reference)
    tone = (0.2 * 32767 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)).astype("<i2").tobytes()
    for reply in range(2):
        stream = await sink.open_stream(16000, f"reply {reply}")
        delay = sink.output_delay_s()  # what the card holds ahead of this reply's first block
        for i in range(0, len(tone), 640):
            await stream.write(tone[i: i + 640])
        await stream.drain()
        await asyncio.sleep(0.4)
    await sink.aclose()
    try:
        await sink.open_stream(16000, "after the end")
        refused = False
    except AudioDeviceError:
        refused = True
    print(json.dumps({"told": reference.told, "tone": tone.hex(), "refused": refused, "delay_s": delay}))

asyncio.run(main())
'''


@pytest.fixture
def card_env(tmp_path):
    assert shutil.which("pulseaudio"), "pulseaudio is missing: run `bash scripts/setup.sh --test`"
    with VirtualCard(tmp_path) as card:
        yield card.env


def test_the_card_plays_one_stream_and_tells_the_reference_every_block(card_env):
    run = subprocess.run([sys.executable, "-c", _PLAY_TWO_REPLIES], cwd=REPO, env=card_env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    told = result["told"]
    voice = "".join(hexed for kind, _, _, hexed, _ in told if kind == "voice")
    assert voice == result["tone"] * 2  # both replies, every sample, in order
    kinds = [kind for kind, *_ in told]
    first_voice, last_voice = kinds.index("voice"), len(kinds) - 1 - kinds[::-1].index("voice")
    between = [kind for kind in kinds[first_voice: last_voice] if kind != "voice"]
    assert between and set(between) == {"silence"}  # the card played silence between them, and said so
    assert "restart" not in kinds  # it never ran dry
    # told as the card takes it: as much sound as time passed (the first block waits while the
    # card's server starts the stream, up to 2 s here; counted from the tenth block)
    told_s = sum(n / rate for kind, n, rate, _, _ in told[10:-1])
    elapsed_s = told[-1][4] - told[10][4]
    assert elapsed_s > 1.5 and abs(told_s - elapsed_s) <= 0.06, (told_s, elapsed_s)
    assert 0.0 < result["delay_s"] < 0.5  # the first sample is stamped when it plays (the card's buffer)
    assert result["refused"]  # closed at the runtime's end: a reply still going gets no new stream


class _UnpluggedStream:
    """An output whose device is gone (PortAudio raises on write): a fault no real card here shows."""

    latency = 0.01

    def write(self, data: bytes) -> bool:
        raise OSError("device unavailable")

    def abort(self) -> None:
        return None

    def close(self) -> None:
        return None


class _PlayingStream(_UnpluggedStream):
    def write(self, data: bytes) -> bool:
        time.sleep(len(data) / 2 / 16000)
        return False


async def test_an_output_that_failed_is_told_to_the_reply_and_opened_again():
    failed = _Player(_UnpluggedStream(), 16000, None)
    failed._thread.join(2)
    with pytest.raises(AudioDeviceError):  # the reply playing learns it (the speaker apologises)
        failed.queue(bytes(640))
    sink = object.__new__(SoundDeviceSink)  # no sound card here: the opening is what is tested
    sink._player, sink._opening, sink._closed, sink.reference = failed, threading.Lock(), False, None
    sink._open = lambda rate: _Player(_PlayingStream(), rate, None)
    stream = await sink.open_stream(16000, "the next reply")
    await stream.write(bytes(640))
    await stream.drain()
    assert sink._player is not failed and sink._player.alive
    await sink.aclose()
