"""Where the customer's voice ended (speech/voice_end.py): an utterance's wait is counted
from its last sound, not from webrtcvad's last voiced frame (about 100 ms later), for a
file source as for a sound card (issue 26, item 7).

Real components: the front end as tests build it (webrtcvad, Silero), espeak-ng speech and
read speech from ../shared (cmu_arctic), followed by digital silence or under low room
noise (an office, -50 dBFS). The true end is the clip's last sample above -40 dBFS."""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

from speech.audio import QueueSource, mix_under, pcm_to_float, read_wav_16k_mono, rms, silence
from speech.types import Utterance
from speech.voice_end import SEARCH_S, VoiceEnd
from tests.hearing_tools import front_end
from tests.speech.conftest import padded_speech, speech_extent
from tests.shared_data import shared_data

ROOM_DBFS = -50.0  # a quiet room's noise under the customer's voice


async def heard(pcm: bytes) -> list[tuple[Utterance, float]]:
    """Each utterance of a file source, and where the voice ended by its wait: the stream
    time the front end decided, less ``hangover_s``."""
    fe, source = front_end(), QueueSource()
    source.push(pcm)
    source.close()
    return [(e, fe.endpointer.stream_time - e.hangover_s) async for e in fe.events(source) if isinstance(e, Utterance)]


def in_room(pcm: bytes) -> bytes:
    noise = pcm_to_float(read_wav_16k_mono(shared_data("audio", "noise", "office-ambience-24000-mono_16k.wav")))
    return mix_under(pcm, noise, 10 ** (ROOM_DBFS / 20) / rms(_pcm(noise)))


def _pcm(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


@pytest.mark.asyncio
@pytest.mark.parametrize("room", [False, True])
@pytest.mark.parametrize("text", ["Hello, my name is Ken and I would like to visit Kyoto in April.",
                                  "What temples should we see there?"])
async def test_the_wait_counts_from_the_last_sound(text: str, room: bool) -> None:
    spoken = padded_speech(text, before_s=0.5, after_s=1.5, rate=150)
    [(utterance, voice_end)] = await heard(in_room(spoken.pcm) if room else spoken.pcm)
    assert utterance.t_end > spoken.speech_end  # webrtcvad's last voiced frame: later (19-111 ms seen)
    assert abs(voice_end - spoken.speech_end) <= 0.03, (voice_end, spoken.speech_end)
    assert utterance.overhang_s == pytest.approx(utterance.t_end - voice_end, abs=0.001)


@pytest.mark.asyncio
@pytest.mark.parametrize("room", [False, True])
async def test_read_speech_ends_where_its_last_sound_does(room: bool) -> None:
    clips = sorted(glob.glob(str(shared_data("audio", "speech", "cmu_arctic") / "*.wav")))
    if not clips:
        pytest.skip("no cmu_arctic clips")
    errors, vad_errors = [], []
    for path in clips:
        clip = read_wav_16k_mono(path)
        pcm = silence(0.5) + clip + silence(1.5)
        [(utterance, voice_end)] = await heard(in_room(pcm) if room else pcm)
        true_end = 0.5 + speech_extent(clip)[1]
        errors.append(round(voice_end - true_end, 3))
        vad_errors.append(round(utterance.t_end - true_end, 3))
        assert voice_end <= utterance.t_end + 1e-6  # never later than the VAD said
        assert voice_end >= utterance.t_end - SEARCH_S - 1e-6  # nor more than the search before
    # (two of the six clips end in a click or a breath above -40 dBFS after the voice: off by 120-200 ms)
    assert float(np.median(np.abs(errors))) <= 0.03, errors
    assert float(np.median(np.abs(vad_errors))) > 0.05, vad_errors  # what it was without


def test_a_quiet_stretch_the_vad_called_voiced_is_not_taken_from_the_wait() -> None:
    """Quieter than -50 dBFS for longer than the search: left where webrtcvad ended it."""
    voice = VoiceEnd()
    loud, quiet = _pcm(np.full(320, 0.1)), _pcm(np.full(320, 0.001))
    frames = [loud] * 20 + [quiet] * 15 + [bytes(640)] * 50  # the VAD's last voiced frame: the 35th
    for index, frame in enumerate(frames):
        voice.hear(frame, (index + 1) * 0.02)
    assert voice.find(0.7) == pytest.approx(0.7)
    assert voice.find(0.5) == pytest.approx(0.4)  # the loud part ends 100 ms before


def test_a_cut_utterance_is_left_as_it_was() -> None:
    voice = VoiceEnd()
    for index in range(50):
        voice.hear(_pcm(np.full(320, 0.1 if index < 20 else 0.0)), (index + 1) * 0.02)
    cut = Utterance(audio=b"", t_start=0.0, t_end=0.5, ended_at=1.0, truncated=True)
    assert voice.correct(cut) == cut
    ended = Utterance(audio=b"", t_start=0.0, t_end=0.5, ended_at=1.0, hangover_s=0.5)
    assert (voice.correct(ended).hangover_s, voice.correct(ended).overhang_s) == (0.6, 0.1)


def test_numpy_ma_is_loaded_with_the_module_not_at_the_first_utterance():
    """``np.median`` imports numpy.ma on its first call: 150 ms on the event loop at the first
    visitor's first utterance (seen live: the loop fell behind and the turn waited longer)."""
    import subprocess
    import sys

    probe = "import sys, speech.voice_end; print('numpy.ma' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "True"
