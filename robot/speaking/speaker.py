"""The robot's mouth: render each sentence, play the reply on one output stream, publish
speech events as each sentence starts and gesture events as playback reaches them, and
stop at once when cancelled.

While one sentence plays the next is rendered (two ahead at most). ``cancel()`` stops
playback within one audio block and closes the sentence stream (so the LLM stops too);
``speak`` then reports what the customer actually heard: the whole sentences and the
spoken start of the one that was cut. A gesture goes out when playback reaches it: the
LLM's tags as their sentence starts, a planned gesture (robot/gestures/planner.py) as its
word is said; one whose audio was cut never goes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from abc import ABC, abstractmethod
from typing import Any, AsyncIterable, Callable

from robot.core.events import ErrorEvent, EventPublisher, GestureEvent, SpeechEvent
from robot.gestures.sentence import PlannedGesture, Sentence
from robot.speaking.length import spoken_seconds
from robot.speaking.spoken import Rendered, SpokenReply
from speech.audio.resample import resample_pcm
from speech.types import AudioSink, AudioStream, SpeechAudio

log = logging.getLogger(__name__)

BLOCK_S = 0.02  # the unit of playback, and so of how fast a cancel lands
RENDER_AHEAD = 2


class Speaker(ABC):
    """Speaks replies; subclasses say how a sentence is rendered and played."""

    def __init__(self, events: EventPublisher) -> None:
        self._events = events
        self._cancelled = asyncio.Event()
        self._speaking = False

    @property
    def speaking(self) -> bool:
        return self._speaking

    def cancel(self) -> None:
        """Stop the reply being spoken (barge-in, the stop command)."""
        if self._speaking:
            self._cancelled.set()

    async def speak(self, sentences: AsyncIterable[Sentence], *, label: str, turn_id: str | None = None,
                    on_audio: Callable[[], None] | None = None) -> SpokenReply:
        """Speak the sentences as they come; ``on_audio`` runs once, as the first starts."""
        self._cancelled.clear()
        self._speaking = True
        spoken = SpokenReply()
        ready: asyncio.Queue[Rendered | None] = asyncio.Queue(maxsize=RENDER_AHEAD)
        renderer = asyncio.create_task(self._render_ahead(sentences, ready, turn_id))
        stream: Any = None
        try:
            index = 0
            while (item := await self._next(ready)) is not None:
                if not item.silent:
                    if spoken.first_audio_at is None:
                        spoken.first_audio_at = time.monotonic() + self._output_delay_s()
                        spoken.first_sentence_at, spoken.first_render_s = item.sentence.ready_at, item.render_s
                        if on_audio is not None:
                            on_audio()
                    self._events.publish(SpeechEvent(text=item.sentence.text, index=index,
                                                     duration_s=round(item.duration_s, 3), turn_id=turn_id))
                gestures = SentenceGestures(item, index, turn_id, lambda e: self._gesture(e, spoken))
                gestures.reached(0.0)
                if not item.silent:
                    stream, fraction = await self._play_safely(stream, label, item, turn_id, gestures.reached)
                    if fraction >= 1.0:
                        gestures.reached(1.0)
                    spoken.heard(item.sentence.text, fraction)
                index += 1
            spoken.interrupted = self._cancelled.is_set()
            if spoken.interrupted:
                spoken.unsaid += _drain(ready)
        finally:
            renderer.cancel()
            await asyncio.gather(renderer, return_exceptions=True)
            await self._close(stream, spoken.interrupted, turn_id)
            self._speaking = False
        return spoken

    # --- what a subclass provides -------------------------------------------------------

    @abstractmethod
    async def render(self, sentence: Sentence) -> Rendered: ...

    @abstractmethod
    async def _open(self, label: str, first: Rendered) -> Any: ...

    @abstractmethod
    async def _play(self, stream: Any, item: Rendered, reached: Callable[[float], None]) -> float:
        """Play one sentence; return the fraction played (1.0 unless cancelled). Call
        ``reached(fraction)`` as playback gets there: it publishes the gestures due by then."""

    async def _close(self, stream: Any, interrupted: bool, turn_id: str | None) -> None:
        return None

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        return None

    async def aclose(self) -> None:
        """Let go of the audio output (a sound card's stream), at the runtime's end."""
        return None

    def _output_delay_s(self) -> float:
        """How long after it is written a block is heard (what the output holds ahead of it)."""
        return 0.0

    # --- the shared loop ------------------------------------------------------------------

    async def _render_ahead(self, sentences: AsyncIterable[Sentence], ready: asyncio.Queue[Rendered | None],
                            turn_id: str | None) -> None:
        try:
            async with contextlib.aclosing(aiter(sentences)) as stream:  # type: ignore[type-var]
                async for sentence in stream:
                    await ready.put(await self._render_safely(sentence, turn_id))
        except Exception as exc:  # noqa: BLE001 - what was rendered is still spoken
            self._error("robot", f"the reply stream failed: {type(exc).__name__}: {exc}", turn_id)
        await ready.put(None)  # cancelled (the speaker stopped): nobody waits for this

    async def _render_safely(self, sentence: Sentence, turn_id: str | None) -> Rendered:
        if not sentence.text:
            return Rendered(sentence, 0.0, silent=True)
        started = time.monotonic()
        try:
            rendered = await self.render(sentence)
            return dataclasses.replace(rendered, render_s=time.monotonic() - started)
        except Exception as exc:  # noqa: BLE001 - a sentence that cannot be said is skipped
            self._error("tts", f"could not synthesize a sentence: {exc}", turn_id)
            return Rendered(sentence, 0.0, silent=True)

    async def _next(self, ready: asyncio.Queue[Rendered | None]) -> Rendered | None:
        """The next rendered sentence, or None when the reply ended or was cancelled."""
        if self._cancelled.is_set():
            return None
        getter = asyncio.ensure_future(ready.get())
        cancelled = asyncio.ensure_future(self._cancelled.wait())
        await asyncio.wait({getter, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        cancelled.cancel()
        if self._cancelled.is_set():
            getter.cancel()  # a sentence rendered meanwhile is not announced: it will not play
            return None
        return getter.result()

    async def _play_safely(self, stream: Any, label: str, item: Rendered, turn_id: str | None,
                           reached: Callable[[float], None]) -> tuple[Any, float]:
        """Open the reply's stream at its first sentence, play; (stream, fraction played)."""
        try:
            stream = stream or await self._open(label, item)
            return stream, await self._play(stream, item, reached)
        except Exception as exc:  # noqa: BLE001 - a broken speaker must not stop the dialogue
            self._error("audio", f"playback failed: {exc}", turn_id)
            return stream, 0.0

    def _gesture(self, event: GestureEvent, spoken: SpokenReply) -> None:
        self._events.publish(event)
        spoken.gestures.append(event.name)

    def _error(self, source: str, message: str, turn_id: str | None) -> None:
        self._events.publish(ErrorEvent(source=source, message=message, turn_id=turn_id))


class AudioSpeaker(Speaker):
    """TTS into an audio sink (sound card, wav files, nothing): one stream per reply."""

    def __init__(self, make_synthesizer: Callable[[str | None, int], Any], sink: AudioSink,
                 voice: str | None, rate: int, events: EventPublisher,
                 tap: Callable[[bytes, int], None] | None = None) -> None:
        super().__init__(events)
        self._make, self._sink, self._rate = make_synthesizer, sink, rate
        self._synth = make_synthesizer(voice, rate)
        self._tap = tap  # sees every block as it is written: the echo canceller's reference

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        self._synth = self._make(voice, rate or self._rate)

    async def aclose(self) -> None:
        await self._sink.aclose()

    def _output_delay_s(self) -> float:
        # a sound card kept open plays what it holds first (SoundDeviceSink.output_delay_s)
        delay = getattr(self._sink, "output_delay_s", None)
        return delay() if delay is not None else 0.0

    async def render(self, sentence: Sentence) -> Rendered:
        # pyttsx3 now and then hands back an empty file or none (seen under load): once more,
        # since a sentence left out is a gap in what the customer hears.
        try:
            audio: SpeechAudio = await self._synth.synthesize(sentence.text)
        except Exception:
            log.warning("TTS failed on %r; trying once more", sentence.text[:40], exc_info=True)
            audio = SpeechAudio(b"", 0, sentence.text)
        if not audio.pcm:
            audio = await self._synth.synthesize(sentence.text)
        if not audio.pcm:
            raise RuntimeError(f"the TTS gave no audio for {sentence.text[:40]!r}")
        return Rendered(sentence, audio.duration_s, audio)

    async def _open(self, label: str, first: Rendered) -> AudioStream:
        assert first.audio is not None
        return await self._sink.open_stream(first.audio.sample_rate, label)

    async def _play(self, stream: AudioStream, item: Rendered, reached: Callable[[float], None]) -> float:
        assert item.audio is not None
        pcm = resample_pcm(item.audio.pcm, item.audio.sample_rate, stream.sample_rate)
        block = 2 * max(1, int(stream.sample_rate * BLOCK_S))
        for pos in range(0, len(pcm), block):
            if self._cancelled.is_set():
                return pos / len(pcm)
            reached(pos / len(pcm))  # a gesture due in this block goes out as it starts playing
            if self._tap is not None:  # before the write: the canceller needs it ahead of the echo
                self._tap(pcm[pos: pos + block], stream.sample_rate)
            await stream.write(pcm[pos: pos + block])
        return 1.0

    async def _close(self, stream: AudioStream | None, interrupted: bool, turn_id: str | None) -> None:
        if stream is None:
            return
        try:
            await (stream.abort() if interrupted else stream.drain())
        except Exception as exc:  # noqa: BLE001
            self._error("audio", f"closing the output failed: {exc}", turn_id)


class TextSpeaker(Speaker):
    """``robot chat``: sentences are printed at once; duration is what the TTS would take
    (the same estimate the spoken-length budget uses)."""

    def __init__(self, name: str, events: EventPublisher, write: Callable[[str], None] = print,
                 words_per_minute: int = 150) -> None:
        super().__init__(events)
        self._name, self._write, self._wpm = name, write, words_per_minute

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        self._wpm = rate or self._wpm

    async def render(self, sentence: Sentence) -> Rendered:
        return Rendered(sentence, spoken_seconds(sentence.text, self._wpm))

    async def _open(self, label: str, first: Rendered) -> None:
        return None

    async def _play(self, stream: None, item: Rendered, reached: Callable[[float], None]) -> float:
        self._write(f"{self._name}: {item.sentence.text}")
        await asyncio.sleep(0)
        return 1.0


# A gesture of a sentence: an LLM tag's name (at the start), or the planner's (at its word).
_Cue = str | PlannedGesture


class SentenceGestures:
    """One sentence's gestures, in the order its playback reaches them. ``reached(fraction)``
    publishes those due by then, each with the time it was meant for (``at_s``, estimated
    from the word's place in the text and the audio's duration); what playback never
    reaches (the customer cut in) is never published. A sentence not spoken (no text, or
    the TTS failed) keeps the LLM's tags, not the planned gestures: their words are not said."""

    def __init__(self, item: Rendered, index: int, turn_id: str | None,
                 publish: Callable[[GestureEvent], None]) -> None:
        sentence = item.sentence
        cues: list[tuple[float, _Cue]] = [(0.0, name) for name in sentence.gestures]
        if not item.silent:
            cues += [(p.fraction(sentence.text), p) for p in sentence.planned]
        self._pending = sorted(cues, key=lambda cue: cue[0])  # stable: tags stay in their order
        self._index, self._turn_id, self._duration_s, self._publish = index, turn_id, item.duration_s, publish

    def reached(self, fraction: float) -> None:
        while self._pending and self._pending[0][0] <= fraction:
            self._publish(self._event(*self._pending.pop(0)))

    def _event(self, fraction: float, cue: _Cue) -> GestureEvent:
        # made now, so its ts is the moment it goes out
        if isinstance(cue, str):
            return GestureEvent(name=cue, sentence_index=self._index, turn_id=self._turn_id)
        return GestureEvent(name=cue.name, sentence_index=self._index, turn_id=self._turn_id, planned=True,
                            word_index=cue.word_index, at_s=round(fraction * self._duration_s, 3))


def _drain(ready: asyncio.Queue[Rendered | None]) -> list[Sentence]:
    """Sentences rendered but not played when a reply was cut (what a resume would say)."""
    left = []
    while not ready.empty():
        item = ready.get_nowait()
        if item is not None and not item.silent:
            left.append(item.sentence)
    return left
