"""The dialogue loop: hear a customer, think with the LLM, speak, remember.

States: idle -> listening (speech started) -> thinking (turn ended) -> speaking -> idle.
Half-duplex: while the robot thinks or speaks, microphone frames are dropped, so its own
voice or the customer talking over it never starts a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable, Protocol

from config.loader import load_persona
from config.schema import Persona
from memory.base import DialogueMemory, Turn
from robot.events import (
    ErrorEvent,
    EventBus,
    GestureEvent,
    RobotState,
    SpeechEvent,
    StateEvent,
    TranscriptEvent,
    TurnEvent,
)
from robot.gestures import Sentence, gesture_instructions, parse_sentence
from robot.llm.client import LLMError
from robot.sentences import SentenceSplitter
from robot.speaker import Rendered, Speaker
from robot.turns import TurnResult, TurnTimings, turn_log
from speech.types import AudioSource, Transcript, Utterance

log = logging.getLogger(__name__)


class ReplyLLM(Protocol):
    def stream(self, messages: list[dict[str, str]]) -> AsyncIterator[str]: ...


class Endpointing(Protocol):
    in_speech: bool

    def feed(self, frame: bytes) -> Utterance | None: ...

    def flush(self) -> Utterance | None: ...

    def reset(self) -> None: ...


class Transcribing(Protocol):
    async def transcribe(self, utterance: Utterance) -> Transcript: ...


def persona_prompt(persona: Persona) -> str:
    """The persona's part of the role prompt: its role text plus the gestures it may use."""
    extra = gesture_instructions(persona.gestures)
    return persona.role_prompt.strip() + (f"\n\n{extra}" if extra else "")


class DialogueController:
    def __init__(
        self,
        *,
        persona: Persona,
        memory: DialogueMemory,
        llm: ReplyLLM,
        speaker: Speaker,
        events: EventBus,
        persona_path: Path | None = None,
        endpointer: Endpointing | None = None,
        transcriber: Transcribing | None = None,
        forget_user: Callable[[str], Awaitable[str]] | None = None,
    ) -> None:
        self.persona = persona
        self.persona_path = persona_path
        self.memory = memory
        self.llm = llm
        self.speaker = speaker
        self.events = events
        self.endpointer = endpointer
        self.transcriber = transcriber
        self._forget_user = forget_user
        self.state = RobotState.IDLE
        self.muted = False
        self.results: asyncio.Queue[TurnResult] = asyncio.Queue()
        self._turn_ids = itertools.count(1)
        self._say_ids = itertools.count(1)
        self._turn_task: asyncio.Task[TurnResult | None] | None = None
        self._speaking = asyncio.Lock()  # one reply (or say) speaks at a time
        self._stop_requested = False

    # --- states and events -----------------------------------------------------------

    def _set_state(self, state: RobotState, turn_id: str | None = None) -> None:
        if state == self.state:
            return
        self.state = state
        self.events.publish(StateEvent(state=state, turn_id=turn_id))
        gesture = self.persona.state_gestures.get(state.value)
        if gesture:
            self.events.publish(GestureEvent(name=gesture, turn_id=turn_id, reason="state"))

    def _error(self, source: str, message: str, turn_id: str | None = None) -> None:
        log.warning("%s error: %s", source, message)
        self.events.publish(ErrorEvent(source=source, message=message, turn_id=turn_id))

    def announce(self) -> None:
        """Publish the current state (at start, and for hooks that reconnect)."""
        self.events.publish(StateEvent(state=self.state))

    # --- listening -------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._turn_task is not None and not self._turn_task.done()

    async def listen(self, source: AudioSource) -> None:
        """Run turns from microphone frames until the source ends."""
        if self.endpointer is None or self.transcriber is None:
            raise RuntimeError("listening needs an endpointer and a transcriber")
        deaf = False
        async for frame in source.frames():
            if self.muted or self.busy or self._speaking.locked():
                deaf = True
                continue  # half-duplex: nothing heard while the robot thinks or speaks
            if deaf:
                # Start clean at the first frame heard again: a fixed point in the stream, so
                # the pre-roll of the next turn never depends on task timing.
                self.endpointer.reset()
                deaf = False
            utterance = self.endpointer.feed(frame)
            if self.endpointer.in_speech and self.state == RobotState.IDLE:
                self._set_state(RobotState.LISTENING)
            if utterance is not None:
                self._turn_task = asyncio.create_task(self.handle_utterance(utterance))
        # The source ended (file, simulation): a turn still open is a turn.
        if not self.busy and (utterance := self.endpointer.flush()) is not None:
            self._turn_task = asyncio.create_task(self.handle_utterance(utterance))
        if self._turn_task is not None:
            await self._turn_task

    async def handle_utterance(self, utterance: Utterance) -> TurnResult | None:
        turn_id = f"t{next(self._turn_ids)}"
        timings = TurnTimings(end_of_speech=utterance.ended_at)
        self._set_state(RobotState.THINKING, turn_id)
        try:
            transcript = await self.transcriber.transcribe(utterance)  # type: ignore[union-attr]
        except Exception as exc:  # a broken model must not end the conversation
            self._error("stt", f"transcription failed: {exc}", turn_id)
            self._set_state(RobotState.IDLE, turn_id)
            return self._finish(TurnResult(turn_id, "", "", timings, errors=[f"stt: {exc}"]))
        timings.transcript_ready = time.monotonic()
        text = transcript.text.strip()
        if not text:
            log.info("utterance of %.2fs had no words; ignored", utterance.duration_s)
            self._set_state(RobotState.IDLE, turn_id)
            return self._finish(TurnResult(turn_id, "", "", timings, transcript.audio_s, transcript.stt_s))
        self.events.publish(TranscriptEvent(text=text, audio_s=transcript.audio_s, turn_id=turn_id))
        result = await self._converse_safely(turn_id, text, timings)
        result.audio_s, result.stt_s = transcript.audio_s, transcript.stt_s
        return self._finish(result)

    async def handle_text(self, text: str) -> TurnResult:
        """A typed turn (``robot chat``): the same path without audio."""
        turn_id = f"t{next(self._turn_ids)}"
        now = time.monotonic()
        timings = TurnTimings(end_of_speech=now, transcript_ready=now)
        self._set_state(RobotState.THINKING, turn_id)
        self.events.publish(TranscriptEvent(text=text, turn_id=turn_id))
        return self._finish(await self._converse_safely(turn_id, text, timings))

    def _finish(self, result: TurnResult) -> TurnResult:
        result.timings.done = result.timings.done or time.monotonic()
        if result.user_text:
            turn_log.info(result.log_line())
            self.events.publish(TurnEvent(
                turn_id=result.turn_id, user_text=result.user_text, reply_text=result.reply_text,
                timings=result.timings.relative(),
            ))
        self.results.put_nowait(result)
        return result

    # --- thinking and speaking -------------------------------------------------------

    async def _converse_safely(self, turn_id: str, text: str, timings: TurnTimings) -> TurnResult:
        """A turn that fails in an unexpected place (the memory store, a bug) is reported and
        the robot goes back to listening: one bad turn never ends the conversation."""
        try:
            return await self._converse(turn_id, text, timings)
        except Exception as exc:
            log.exception("turn %s failed", turn_id)
            self._error("robot", f"turn failed: {type(exc).__name__}: {exc}", turn_id)
            self._set_state(RobotState.IDLE, turn_id)
            return TurnResult(turn_id, text, "", timings, errors=[f"robot: {exc}"])

    async def _converse(self, turn_id: str, text: str, timings: TurnTimings) -> TurnResult:
        result = TurnResult(turn_id, text, "", timings)
        async with self._speaking:
            self._stop_requested = False
            messages = await self.memory.build_messages(text)
            # Recorded before the reply: if the LLM fails, the customer's words still stay.
            await self.memory.record(Turn("user", text, turn_id=turn_id))
            sentences: asyncio.Queue[Sentence | None] = asyncio.Queue()
            speaking = asyncio.create_task(self._speak(sentences, turn_id, timings, result))
            try:
                await self._think(messages, sentences, timings, result)
            finally:
                sentences.put_nowait(None)
                spoken = await speaking
            result.reply_text = " ".join(spoken)
            if result.reply_text:
                await self.memory.record(Turn("assistant", result.reply_text, turn_id=turn_id))
        self._set_state(RobotState.IDLE, turn_id)
        return result

    async def _think(self, messages: list[dict[str, str]], sentences: asyncio.Queue[Sentence | None],
                     timings: TurnTimings, result: TurnResult) -> None:
        queued = 0
        seen: set[str] = set()
        try:
            # aclosing: leaving early (sentence cap, stop) closes the request at once.
            async with contextlib.aclosing(self._raw_sentences(messages, timings)) as raw_sentences:
                async for raw in raw_sentences:
                    queued += self._queue_sentence(raw, sentences, seen)
                    if self._stop_requested or queued >= self.persona.max_sentences:
                        break
        except LLMError as exc:
            result.errors.append(f"llm: {exc}")
            self._error("llm", str(exc), result.turn_id)
        if not queued and not self._stop_requested:
            # Nothing usable came back: the persona apologizes and the robot listens on.
            self._queue_sentence(self.persona.apology, sentences)

    async def _raw_sentences(self, messages: list[dict[str, str]], timings: TurnTimings) -> AsyncIterator[str]:
        """The LLM's reply, sentence by sentence, as soon as each is complete."""
        splitter = SentenceSplitter()
        async with contextlib.aclosing(self.llm.stream(messages)) as deltas:
            async for delta in deltas:
                if timings.first_token is None:
                    timings.first_token = time.monotonic()
                for raw in splitter.feed(delta):
                    yield raw
        for raw in splitter.flush():
            yield raw

    def _queue_sentence(self, raw: str, sentences: asyncio.Queue[Sentence | None],
                        seen: set[str] | None = None) -> int:
        sentence = parse_sentence(raw, self.persona.gestures)
        if seen is not None and sentence.text:
            key = sentence.text.lower()
            if key in seen:  # a looping model: the same sentence is never said twice in a reply
                return 0
            seen.add(key)
        if not sentence.text and not sentence.gestures:
            return 0
        sentences.put_nowait(sentence)
        return 1 if sentence.text else 0

    async def _speak(self, sentences: asyncio.Queue[Sentence | None], turn_id: str | None,
                     timings: TurnTimings | None, result: TurnResult | None) -> list[str]:
        """Render each sentence while the previous one plays; publish speech and its gestures
        right before the sentence's audio starts. Returns the sentences actually spoken."""
        rendered: asyncio.Queue[tuple[Sentence, Rendered | None] | None] = asyncio.Queue(maxsize=2)
        renderer = asyncio.create_task(self._render_all(sentences, rendered, turn_id))
        spoken: list[str] = []
        index = 0
        self.speaker.begin(turn_id or f"say{next(self._say_ids)}")
        try:
            while (item := await rendered.get()) is not None:
                sentence, audio = item
                if self._stop_requested:
                    continue  # drain: the rest of this reply is not spoken
                if audio is not None:
                    self._set_state(RobotState.SPEAKING, turn_id)
                    self.events.publish(SpeechEvent(
                        text=sentence.text, index=index, duration_s=round(audio.duration_s, 3), turn_id=turn_id))
                for name in sentence.gestures:
                    self.events.publish(GestureEvent(name=name, sentence_index=index, turn_id=turn_id))
                    if result is not None:
                        result.gestures.append(name)
                if audio is not None:
                    if timings is not None and timings.first_audio is None:
                        timings.first_audio = time.monotonic()
                    spoken.append(sentence.text)
                    await self._play(audio, turn_id)
                index += 1
        finally:
            await renderer
            self.speaker.end()
        return spoken

    async def _render_all(self, sentences: asyncio.Queue[Sentence | None],
                          out: asyncio.Queue[tuple[Sentence, Rendered | None] | None], turn_id: str | None) -> None:
        while (sentence := await sentences.get()) is not None:
            audio = None
            if sentence.text and not self._stop_requested:
                try:
                    audio = await self.speaker.render(sentence.text)
                except Exception as exc:
                    self._error("tts", f"could not synthesize a sentence: {exc}", turn_id)
            await out.put((sentence, audio))
        await out.put(None)

    async def _play(self, audio: Rendered, turn_id: str | None) -> None:
        try:
            await self.speaker.play(audio)
        except Exception as exc:  # a speaker that fails must not stop the dialogue
            self._error("audio", f"playback failed: {exc}", turn_id)

    # --- robot-initiated speech and the body's commands (RobotControl) ------------------

    async def say(self, text: str, *, record: bool = True) -> str:
        """Speak a given text (greeting, an operator's ``say``); it is remembered as said."""
        async with self._speaking:
            self._stop_requested = False
            sentences: asyncio.Queue[Sentence | None] = asyncio.Queue()
            splitter = SentenceSplitter()
            for raw in splitter.feed(text) + splitter.flush():
                self._queue_sentence(raw, sentences)
            sentences.put_nowait(None)
            spoken = " ".join(await self._speak(sentences, None, None, None))
            if record and spoken:
                await self.memory.record(Turn("assistant", spoken))
        self._set_state(RobotState.IDLE)
        return spoken

    async def greet(self) -> None:
        if self.persona.greeting:
            await self.say(self.persona.greeting)

    async def stop_speaking(self) -> None:
        self._stop_requested = True
        await self.speaker.stop()

    def mute(self) -> None:
        self.muted = True
        if self.endpointer is not None:
            self.endpointer.reset()

    def unmute(self) -> None:
        self.muted = False

    async def switch_persona(self, path: Path) -> None:
        persona = load_persona(path)  # ConfigError leaves the current persona in place
        self.persona, self.persona_path = persona, Path(path)
        self.speaker.set_voice(persona.voice, persona.rate)
        await self.memory.set_persona_prompt(persona_prompt(persona))
        log.info("persona switched to %s (%s); memory kept", persona.name, path)

    async def reload(self) -> None:
        if self.persona_path is None:
            raise RuntimeError("this robot was not started from a persona file")
        await self.switch_persona(self.persona_path)

    async def forget(self, user: str) -> str:
        if self._forget_user is None:
            raise RuntimeError("this robot has no persistent memory to forget")
        return await self._forget_user(user)
