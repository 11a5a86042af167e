"""robot/speaking/speaker.py with real espeak-ng speech: one stream per reply, events in order, and a
cancel that lands within one audio block and reports what was actually said."""

import asyncio
import time

import pytest

from config.schema import GestureRule
from robot.core.events import EventBus, GestureEvent, RecordingPublisher, SpeechEvent
from robot.gestures.planner import GesturePlanner
from robot.gestures.sentence import Sentence
from robot.speaking.speaker import AudioSpeaker
from speech.audio import NullSink, WavSink
from speech.tts import Synthesizer
from speech.types import AudioDeviceError

LONG = ("Kyoto has more than one thousand temples, and the most famous of them stand on the "
        "eastern hills, where the maple trees turn red and gold every autumn.")


def make_speaker(sink):
    recorder = RecordingPublisher()
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, "en-us", 150, EventBus(recorder))
    return speaker, recorder


async def sentences(*items):
    for item in items:
        yield item


async def test_a_reply_plays_on_one_stream_with_events_before_each_sentence(tmp_path):
    sink = WavSink(tmp_path)
    speaker, recorder = make_speaker(sink)
    spoken = await speaker.speak(sentences(Sentence("Welcome!", ("bow",)), Sentence("Kyoto is lovely.")),
                                 label="t1", turn_id="t1")
    assert spoken.text == "Welcome! Kyoto is lovely." and not spoken.interrupted
    assert spoken.gestures == ["bow"]
    assert [p.name for p in sink.written] == ["t1.wav"]  # one file (one stream) for the reply
    kinds = [(type(e).__name__, getattr(e, "index", getattr(e, "sentence_index", None))) for e in recorder.events]
    assert kinds == [("SpeechEvent", 0), ("GestureEvent", 0), ("SpeechEvent", 1)]
    durations = [e.duration_s for e in recorder.of(SpeechEvent)]
    assert all(d > 0.3 for d in durations)


async def test_cancel_mid_sentence_stops_within_one_block_and_reports_the_spoken_prefix():
    sink = NullSink(realtime=True)  # takes audio at playback speed, like a sound card
    speaker, recorder = make_speaker(sink)
    task = asyncio.create_task(speaker.speak(sentences(Sentence("Hello."), Sentence(LONG)), label="t1"))
    while not sink.streams or sink.streams[0].written_s < 1.6:
        await asyncio.sleep(0.005)  # "Hello." is about 0.5 s; then the long sentence plays
    loop = asyncio.get_running_loop()
    cancelled_at = loop.time()
    speaker.cancel()
    spoken = await task
    stream = sink.streams[0]
    after = [t for t in stream.write_times if t > cancelled_at]
    assert len(after) == 0 or (len(after) == 1 and after[0] - cancelled_at < 0.05)
    assert stream.aborted and spoken.interrupted
    assert spoken.sentences == ["Hello."]
    assert spoken.partial and LONG.startswith(spoken.partial) and len(spoken.partial) < len(LONG) / 2
    assert spoken.text == f"Hello. {spoken.partial}"
    assert not speaker.speaking


async def test_cancel_while_waiting_for_the_llm_returns_at_once_and_closes_the_stream():
    closed = asyncio.Event()

    async def slow_llm_sentences():
        try:
            yield Sentence("First.")
            await asyncio.sleep(30)  # the LLM stalls
            yield Sentence("Never said.")
        finally:
            closed.set()

    sink = NullSink(realtime=True)
    speaker, recorder = make_speaker(sink)
    task = asyncio.create_task(speaker.speak(slow_llm_sentences(), label="t1"))
    while not recorder.of(SpeechEvent):
        await asyncio.sleep(0.005)
    duration = recorder.of(SpeechEvent)[0].duration_s
    while sink.streams[0].written_s < duration - 0.001:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.1)  # "First." has played; the speaker waits for the next sentence
    speaker.cancel()
    spoken = await asyncio.wait_for(task, 1.0)
    assert spoken.text == "First." and closed.is_set()


@pytest.mark.parametrize("broken", ["render", "open", "write"])
async def test_a_broken_voice_or_speaker_is_reported_and_the_reply_goes_on(tmp_path, broken):
    sink = WavSink(tmp_path)
    speaker, recorder = make_speaker(sink)
    if broken == "render":
        real = speaker.render

        async def render(sentence):
            if sentence.text == "Bad.":
                raise RuntimeError("espeak crashed")
            return await real(sentence)

        speaker.render = render
        spoken = await speaker.speak(sentences(Sentence("Bad."), Sentence("Good.")), label="t1")
        assert spoken.text == "Good."
    elif broken == "open":
        async def open_stream(rate, label):
            raise AudioDeviceError("cannot open audio output 'default' at 22050 Hz: device busy")

        sink.open_stream = open_stream
        spoken = await speaker.speak(sentences(Sentence("Bad."), Sentence("Good.")), label="t1")
        assert spoken.text == ""
    else:
        async def open_stream(rate, label):
            class Broken:
                sample_rate = rate

                async def write(self, pcm):
                    raise OSError("device unplugged")

                async def drain(self):
                    return None

                abort = drain
            return Broken()

        sink.open_stream = open_stream
        spoken = await speaker.speak(sentences(Sentence("Bad."), Sentence("Good.")), label="t1")
        assert spoken.text == ""  # nothing was heard
    errors = [e for e in recorder.events if type(e).__name__ == "ErrorEvent"]
    assert errors and errors[0].source == ("tts" if broken == "render" else "audio")
    assert len(recorder.of(GestureEvent)) == 0


class AudioPosition:
    """Notes how much of the reply's audio had been played when each gesture went out."""

    def __init__(self, sink):
        self.sink, self.at = sink, []

    def publish(self, event):
        if isinstance(event, GestureEvent):
            self.at.append(self.sink.streams[-1].written_s if self.sink.streams else 0.0)


PLANNER = GesturePlanner([GestureRule(gesture="bow", words=["hello"]),
                          GestureRule(gesture="point_right", when="vocabulary")], ["Kyoto"])


async def test_a_planned_gesture_goes_out_as_its_word_is_said():
    sink = NullSink(realtime=True)
    recorder, position = RecordingPublisher(), AudioPosition(sink)
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, "en-us", 150,
                           EventBus(recorder, position))
    text = "Tomorrow morning we can take the fast train to Kyoto."
    planned = PLANNER.annotate(Sentence(text))
    spoken = await speaker.speak(sentences(planned), label="t1", turn_id="t1")
    [speech], [gesture] = recorder.of(SpeechEvent), recorder.of(GestureEvent)
    assert spoken.gestures == ["point_right"]
    assert (gesture.name, gesture.planned, gesture.reason, gesture.sentence_index) == ("point_right", True, "reply", 0)
    assert gesture.word_index == 9  # "Kyoto."
    share = text.index("Kyoto") / len(text)
    assert gesture.at_s == pytest.approx(share * speech.duration_s, abs=0.002) and gesture.at_s > 1.0
    # published when playback got there (within one 20 ms block), not as the sentence started
    # (judged on the playback position, not on the events' clock: a busy machine stretches that one)
    assert position.at[0] == pytest.approx(gesture.at_s, abs=0.021)
    assert recorder.events.index(speech) < recorder.events.index(gesture)


async def test_an_llm_tag_goes_out_as_its_sentence_starts():
    sink = NullSink()
    recorder, position = RecordingPublisher(), AudioPosition(sink)
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, "en-us", 150,
                           EventBus(recorder, position))
    await speaker.speak(sentences(Sentence("We go to Kyoto.", ("show_map",))), label="t1")
    [gesture] = recorder.of(GestureEvent)
    assert (gesture.name, gesture.planned, gesture.word_index, gesture.at_s) == ("show_map", False, None, 0.0)
    assert position.at == [0.0]  # before any audio


async def test_a_cut_drops_the_planned_gesture_its_word_never_reached():
    sink = NullSink(realtime=True)
    speaker, recorder = make_speaker(sink)
    late = ("The most famous temples stand on the eastern hills, where the maple trees turn red and "
            "gold every autumn, just outside Kyoto.")  # the place is the sentence's last word
    task = asyncio.create_task(speaker.speak(
        sentences(PLANNER.annotate(Sentence("Hello there.")), PLANNER.annotate(Sentence(late))), label="t1"))
    while not sink.streams or sink.streams[0].written_s < 2.0:
        await asyncio.sleep(0.005)  # "Hello there." is said; the long sentence has begun
    speaker.cancel()  # barge-in
    spoken = await task
    await asyncio.sleep(0.2)  # nothing goes out late either
    assert spoken.interrupted
    assert [(e.name, e.sentence_index) for e in recorder.of(GestureEvent)] == [("bow", 0)]
    assert spoken.gestures == ["bow"]


class _CardLikeSink(NullSink):
    """A sink that holds a buffer ahead of what is written, as a sound card kept open does."""

    def output_delay_s(self) -> float:
        return 0.25


async def test_the_first_audio_is_stamped_when_the_output_plays_it():
    speaker, _ = make_speaker(_CardLikeSink())
    before = time.monotonic()
    spoken = await speaker.speak(sentences(Sentence("Hello.")), label="t1")
    assert spoken.first_audio_at is not None and spoken.first_audio_at - before >= 0.25
