"""Endpointer with webrtcvad on synthesized and recorded speech."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from config.schema import VadSettings
from speech.audio import QueueSource, read_wav, read_wav_16k_mono, silence, split_frames
from speech.types import Utterance
from speech.listen import FrontEnd, utterances
from speech.vad import Endpointer
from tests.shared_data import missing
from tests.speech.conftest import Spoken, mix, padded_speech, run

TOLERANCE_S = 0.25  # endpoint error allowed against the speech's true extent
SENTENCE = "I would like to plan a trip to the mountains and the sea next spring."


@pytest.fixture(scope="module")
def spoken() -> Spoken:
    return padded_speech(SENTENCE)


def assert_one_turn_on_boundaries(found: list[tuple[Utterance, float]], spoken: Spoken) -> None:
    assert len(found) == 1, [(u.t_start, u.t_end) for u, _ in found]
    utterance = found[0][0]
    assert utterance.t_start == pytest.approx(spoken.speech_start, abs=TOLERANCE_S)
    assert utterance.t_end == pytest.approx(spoken.speech_end, abs=TOLERANCE_S)
    assert not utterance.truncated
    # pre-roll kept before the onset, and the whole speech is inside the audio
    assert utterance.duration_s >= spoken.speech_end - spoken.speech_start + 0.2


def test_clean_speech_boundaries(spoken: Spoken) -> None:
    assert_one_turn_on_boundaries(run(Endpointer(VadSettings()), spoken.pcm), spoken)


def test_speech_in_white_noise(spoken: Spoken) -> None:
    noise = np.random.default_rng(7).standard_normal(16000 * 5)
    noisy = mix(spoken.pcm, noise, 0.01)  # -40 dBFS hiss
    assert_one_turn_on_boundaries(run(Endpointer(VadSettings()), noisy), spoken)


def test_speech_in_recorded_rain(spoken: Spoken, shared_audio: Path) -> None:
    rain_file = shared_audio / "noise" / "ibm_rain_16k.wav"
    if not rain_file.is_file():
        missing(rain_file)
    rain, _ = read_wav(rain_file)
    rain = rain[:, 0] / np.sqrt(np.mean(rain[:, 0] ** 2))
    # rain at -50 dBFS; at -40 dBFS webrtcvad opens the turn on the rain alone (measured)
    noisy = mix(spoken.pcm, rain, 0.003)
    assert_one_turn_on_boundaries(run(Endpointer(VadSettings()), noisy), spoken)


def test_hangover_decides_when_the_turn_ends(spoken: Spoken) -> None:
    for hangover_ms in (400, 1000):
        [(utterance, decided_at)] = run(Endpointer(VadSettings(hangover_ms=hangover_ms)), spoken.pcm)
        assert decided_at - utterance.t_end == pytest.approx(hangover_ms / 1000, abs=0.03)
        assert utterance.ended_at == decided_at  # `now` stamps the decision
        # what the customer's wait is measured from: the decision less the silence waited
        assert utterance.ended_at - utterance.hangover_s == pytest.approx(utterance.t_end, abs=0.001)


def test_pause_shorter_than_hangover_keeps_one_turn() -> None:
    first = padded_speech("Two tickets please.", 1.0, 0.0)
    second = padded_speech("For tomorrow morning.", 0.0, 1.5)
    for gap_s, expected in ((0.3, 1), (1.2, 2)):
        pcm = first.pcm + silence(gap_s) + second.pcm
        found = run(Endpointer(VadSettings(hangover_ms=700)), pcm)
        assert len(found) == expected, (gap_s, [(u.t_start, u.t_end) for u, _ in found])


def test_short_burst_is_not_a_turn(spoken: Spoken) -> None:
    start = int(spoken.speech_start * 16000 + 8000) * 2  # 100 ms from the middle of a word
    burst = spoken.pcm[start : start + 3200]
    pcm = silence(1.0) + burst + silence(1.5)
    # with a low start threshold the burst opens a turn; min_speech_ms must drop it
    assert run(Endpointer(VadSettings(start_ms=40, min_speech_ms=250)), pcm) == []
    assert run(Endpointer(VadSettings()), pcm) == []
    assert len(run(Endpointer(VadSettings(start_ms=40, min_speech_ms=0)), pcm)) == 1


def test_max_length_cuts_and_marks_truncated(spoken: Spoken) -> None:
    found = run(Endpointer(VadSettings(max_utterance_s=2.0)), spoken.pcm)
    first = found[0][0]
    assert first.truncated
    # the audio Whisper gets, pre-roll included, is the maximum: it fits the model's window
    assert first.duration_s == pytest.approx(2.0, abs=0.03)
    assert first.t_end - first.t_start < 2.0
    assert found[-1][0].t_end == pytest.approx(spoken.speech_end, abs=TOLERANCE_S)
    assert not found[-1][0].truncated


def test_any_chunk_size_and_30ms_vad_frames(spoken: Spoken) -> None:
    endpointer = Endpointer(VadSettings(frame_ms=30))
    chunks = [spoken.pcm[i : i + 1000] for i in range(0, len(spoken.pcm), 1000)]
    found = [u for chunk in chunks if (u := endpointer.feed(chunk, now=0.0))]
    assert len(found) == 1
    assert found[0].t_start == pytest.approx(spoken.speech_start, abs=TOLERANCE_S)


def test_in_speech_and_reset(spoken: Spoken) -> None:
    endpointer = Endpointer(VadSettings())
    frames = split_frames(spoken.pcm)
    middle = int((spoken.speech_start + 1.0) / 0.02)
    for frame in frames[:middle]:
        endpointer.feed(frame)
    assert endpointer.in_speech
    assert endpointer.speech_started_at == pytest.approx(spoken.speech_start, abs=TOLERANCE_S)
    endpointer.reset()
    assert not endpointer.in_speech and endpointer.speech_started_at is None
    assert endpointer.stream_time == pytest.approx(middle * 0.02)


@pytest.mark.asyncio
async def test_utterances_helper_closes_a_turn_at_end_of_stream() -> None:
    spoken = padded_speech("Hello there.", 0.5, 0.1)
    source = QueueSource()
    source.push(spoken.pcm)
    source.close()
    found = [u async for u in utterances(source, FrontEnd(Endpointer(VadSettings())))]
    assert len(found) == 1


def test_recorded_tap_is_not_a_turn(shared_audio: Path) -> None:
    # (the laptop tap and iPhone rub recordings do pass as 0.4-0.6 s turns: webrtcvad
    # limits, documented in docs/speech.md)
    path = shared_audio / "noise" / "audiomentations_tap_16k.wav"
    if not path.is_file():
        missing(path)
    pcm = silence(0.5) + read_wav_16k_mono(path) + silence(1.0)
    assert run(Endpointer(VadSettings()), pcm) == []


def test_recorded_speech_with_labels(shared_audio: Path) -> None:
    """cobra_sample: four labeled phrases about 1.4 s apart -> four turns covering them."""
    wav = shared_audio / "speech" / "vad_labeled" / "cobra_sample_16k.wav"
    labels = shared_audio / "speech" / "vad_labeled" / "cobra_sample.vad.txt"
    if not (wav.is_file() and labels.is_file()):
        missing(wav if not wav.is_file() else labels)
    lines = [line for line in labels.read_text().splitlines() if line and line[0].isdigit()]
    segments = [tuple(map(float, line.split()[:2])) for line in lines]
    # 700 ms: the phrases are 1.3-1.4 s apart, and the default 1000 ms hangover (with the
    # recording's noise voiced in the gaps) joins two of them into one turn.
    found = [u for u, _ in run(Endpointer(VadSettings(aggressiveness=3, hangover_ms=700)), read_wav_16k_mono(wav))]
    assert len(found) == len(segments) == 4
    for utterance, (start, end) in zip(found, segments):
        assert utterance.t_start <= start + 0.1 and utterance.t_end >= end - 0.1  # nothing clipped
        assert utterance.t_end == pytest.approx(end, abs=TOLERANCE_S)


def test_a_turn_held_open_waits_out_a_longer_pause() -> None:
    """Barge-in: "Sorry to interrupt. [breath] How much is..." stays one turn."""
    first = padded_speech("Sorry to interrupt.", 1.0, 0.0)
    second = padded_speech("How much is the train?", 0.0, 1.5)
    edges = len(first.pcm) / 32000 - first.speech_end + second.speech_start  # espeak's own silence
    pause = 1.0 - edges  # between the words: longer than the usual hangover, shorter than the held one
    assert pause > 0
    pcm = first.pcm + silence(pause) + second.pcm
    endpointer = Endpointer(VadSettings(hangover_ms=700))
    found = []
    for index, frame in enumerate(split_frames(pcm)):
        utterance = endpointer.feed(frame, now=(index + 1) * 0.02)
        if endpointer.in_speech:
            endpointer.hold_open(1200)  # what the front end does when speech cuts the robot
        if utterance is not None:
            found.append(utterance)
    assert len(found) == 1 and found[0].t_end > first.speech_end + 1.0
    assert len(run(Endpointer(VadSettings(hangover_ms=700)), pcm)) == 2  # the usual hangover splits it


def test_moving_the_onset_drops_what_came_before_but_the_preroll() -> None:
    """A turn webrtcvad opened on the robot's echo starts where the customer's speech did."""
    spoken = padded_speech("How much is the train?", 0.0, 1.5)
    echo = padded_speech("Kyoto has many temples and shrines.", 0.0, 0.0)  # the turn opens on it
    pcm = echo.pcm + spoken.pcm
    endpointer = Endpointer(VadSettings(hangover_ms=700, preroll_ms=300))
    found = []
    for frame in split_frames(pcm):
        if (u := endpointer.feed(frame)) is not None:
            found.append(u)
        onset = len(echo.pcm) / 32000 + spoken.speech_start
        if endpointer.in_speech and endpointer.stream_time >= onset + 0.2:
            endpointer.move_onset(onset)
    [utterance] = found
    assert utterance.t_start == pytest.approx(len(echo.pcm) / 32000 + spoken.speech_start, abs=0.02)
    assert len(utterance.audio) / 32000 == pytest.approx(utterance.t_end + 0.2 - utterance.t_start + 0.3, abs=0.05)


def test_a_speech_model_that_hears_no_speech_ends_the_turn(spoken: Spoken) -> None:
    """Inside a turn a frame is voiced only if the speech model agrees (``speech=``): a
    model that stops hearing speech 1 s into the sentence ends the turn a hangover later,
    while webrtcvad alone holds it to the end of the sentence."""
    settings = VadSettings()
    stops = spoken.speech_start + 1.0

    def first_turn(model: bool) -> tuple[Utterance, float]:
        endpointer = Endpointer(settings)
        for index, frame in enumerate(split_frames(spoken.pcm)):
            verdict = (index * 0.02 < stops) if model else None
            utterance = endpointer.feed(frame, now=(index + 1) * 0.02, speech=verdict)
            if utterance is not None:
                return utterance, (index + 1) * 0.02
        raise AssertionError("no turn")

    alone, _ = first_turn(False)
    cut, decided = first_turn(True)
    assert alone.t_end == pytest.approx(spoken.speech_end, abs=TOLERANCE_S)
    assert cut.t_start == alone.t_start  # opened by webrtcvad as before
    assert cut.t_end == pytest.approx(stops, abs=0.1) and cut.t_end < spoken.speech_end - 1.0
    assert decided == pytest.approx(cut.t_end + settings.hangover_ms / 1000, abs=0.05)
