"""The turn state machine: hear an utterance, transcribe it, reply, remember.

States: idle -> listening (speech started) -> thinking (utterance ended) -> speaking -> idle;
speaking -> listening when the customer interrupts (barge-in, robot/hearing.py).

The controller only sequences the stages; each stage is its own object: the listen loop
(speech.listen.FrontEnd, routed by robot.hearing), the transcriber, memory, the reply
(robot.reply) and the speaker (robot.speaker), which renders, plays, publishes speech and
gesture events, and cancels.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import TYPE_CHECKING, AsyncIterator, Callable, Protocol

from config.schema import Persona
from memory.base import DialogueMemory, Message, Remark
from config.schema import BargeInSettings
from robot.barge_in import Interruption, aiter_of, speak_through_interruptions
from robot.events import (ErrorEvent, EventPublisher, ForgottenEvent, GestureEvent, HandoverEvent, IgnoredEvent,
                          RobotState, StateEvent, TranscriptEvent, TurnEvent)
from robot.forget_request import Forget, ForgetRequests, ForgetWords
from robot.gesture_planner import GesturePlanner
from robot.hearing import Hearing
from robot.more import YesWords, continuation_messages
from robot.preemptive import PreemptiveLLM
from robot.reply import Reply, ReplyLLM, ReplyRules, Sentence, split_text
from robot.reply_timing import ReplyDeadlines
from robot.redact import redact
from robot.speaker import Speaker
from robot.spoken import SpokenReply
from robot.turns import TurnResult, TurnTimings, turn_log
from speech.listen import FrontEnd
from speech.types import AudioSource, Transcript, Utterance

if TYPE_CHECKING:
    from robot.dialogue.knowledge import KnowledgePlan, ShopKnowledge
    from robot.prompt_warmer import PromptWarmer
    from robot.sessions import Sessions

log = logging.getLogger(__name__)


class Transcribing(Protocol):
    async def transcribe(self, utterance: Utterance, vocabulary: list[str]) -> Transcript: ...

    def listen_for(self, language: str) -> None:
        """Hear this language from now on (ValueError when the model cannot)."""
        ...


class DialogueController:
    def __init__(self, *, persona: Persona, memory: DialogueMemory, llm: ReplyLLM, speaker: Speaker,
                 events: EventPublisher, front_end: FrontEnd | None = None,
                 transcriber: Transcribing | None = None, reply_deadlines: ReplyDeadlines = ReplyDeadlines(),
                 barge_in: BargeInSettings = BargeInSettings(), tts_rate: int = 150,
                 start_at_pause: bool = False) -> None:
        self.persona = persona
        self.tts_rate = tts_rate  # words per minute when the persona sets none: spoken-length estimates
        self._held: list[str] = []  # what the last reply held back at its budget, until the next turn
        self._forget = ForgetRequests()  # whether the robot asked "Shall I forget ...?"
        self.reply_deadlines = reply_deadlines
        self.memory = memory
        self.llm = llm
        # Replies go through it: a request started at the customer's pause is taken when the
        # turn ends with the same words (robot/preemptive.py).
        self.preemptive = PreemptiveLLM(llm)
        self.start_at_pause = start_at_pause
        self._thinking_ahead: asyncio.Task[None] | None = None
        self.speaker = speaker
        self.events = events
        self.front_end = front_end
        self.transcriber = transcriber
        self.barge_in = barge_in
        self.state = RobotState.IDLE
        self.muted = False
        self.results: asyncio.Queue[TurnResult] = asyncio.Queue()
        self._turn_ids = itertools.count(1)
        self._say_ids = itertools.count(1)
        self._turn_task: asyncio.Task[TurnResult | None] | None = None
        self._speaking = asyncio.Lock()  # one reply (or said text) at a time
        self._interruption: Interruption | None = None  # a barge-in that cut the reply speaking now
        self.sessions: Sessions | None = None  # visitor sessions (robot/runtime.py sets them)
        # Reads a rewritten role prompt ahead while the robot is idle (robot/runtime.py sets it).
        self.warmer: PromptWarmer | None = None
        self._planner: tuple[Persona, GesturePlanner] | None = None  # built once per persona
        self.knowledge: ShopKnowledge | None = None  # the persona's knowledge (robot/runtime.py sets it)

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
        message = redact(message)  # an error text may quote a server that echoed the API key
        log.warning("%s error: %s", source, message)
        self.events.publish(ErrorEvent(source=source, message=message, turn_id=turn_id))

    def announce(self) -> None:
        """Publish the current state (at start, and for hooks that reconnect)."""
        self.events.publish(StateEvent(state=self.state))

    # --- listening -------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._turn_task is not None and not self._turn_task.done() or self._speaking.locked()

    @property
    def idle(self) -> bool:
        """Nothing is being answered or said: background LLM work may run (a customer who
        talks meanwhile needs the LLM only at their pause)."""
        return not self.busy

    async def _llm_needed(self) -> None:
        """A reply is coming: a read of its prompt in progress finishes first (robot/prompt_warmer.py)."""
        if self.warmer is not None:
            await self.warmer.settle()

    def speech_started(self) -> None:
        if self.state == RobotState.IDLE:
            self._set_state(RobotState.LISTENING)

    async def listen(self, source: AudioSource) -> None:
        """Run turns from a microphone (or any source) until it ends."""
        if self.front_end is None or self.transcriber is None:
            raise RuntimeError("listening needs a front end and a transcriber")
        await Hearing(self, self.front_end, self.barge_in).run(source)
        await self.wait_turn()

    def think_ahead(self, transcript: asyncio.Future[Transcript]) -> None:
        """The customer paused and speech to text started on what they said: once its words
        are known, start the reply's LLM request, ahead of the end of the turn. Nothing is
        spoken or stored until the turn ends and takes it."""
        if not self.start_at_pause:
            return
        if self._thinking_ahead is not None:
            self._thinking_ahead.cancel()
        self.preemptive.cancel()
        self._thinking_ahead = asyncio.create_task(self._start_early(transcript))

    def resumed(self) -> None:
        """The customer went on after the pause: what was started on it is out of date."""
        if self._thinking_ahead is not None:
            self._thinking_ahead.cancel()
            self._thinking_ahead = None
        self.preemptive.cancel()

    async def _start_early(self, transcript: asyncio.Future[Transcript]) -> None:
        try:
            text = (await asyncio.shield(transcript)).text.strip()
        except Exception:  # noqa: BLE001 - the turn transcribes again and reports it
            return
        if not text or self.busy:
            return
        if self.sessions is not None and not self.sessions.open:
            # A visitor's first words: their session opens now, as their turn would, so its
            # memory is loaded and its role prompt read by the LLM while the endpointer waits.
            # Shielded: a customer who goes on cancels the early reply, not a half-opened session.
            try:
                await asyncio.shield(self.sessions.open_early())
            except Exception:  # noqa: BLE001 - the turn opens it again and reports what fails
                log.warning("opening the session at the customer's pause failed", exc_info=True)
                return
            if self.busy:
                return
        await self._llm_needed()
        plan = self._knowledge_plan(text)
        if plan is not None and (plan.handover or plan.opening):
            return  # the robot itself speaks first: no request of these messages will be taken
        messages = await self.memory.build_messages(text, **({"knowledge": plan.notes} if plan and plan.notes else {}))
        if not self.busy:  # the turn may have ended meanwhile and built its own request
            self.preemptive.start(messages)

    def start_turn(self, utterance: Utterance, transcript: Transcript | None = None) -> None:
        self._turn_task = asyncio.create_task(self.handle_utterance(utterance, transcript))
        self._turn_task.add_done_callback(lambda _: self.warmer and self.warmer.idle_again())

    async def wait_turn(self) -> None:
        if self._turn_task is not None:
            await asyncio.gather(self._turn_task, return_exceptions=True)

    def interrupt(self, interruption: Interruption) -> None:
        """Barge-in: stop speaking now; the turn speaking waits for the verdict on it."""
        self._interruption = interruption
        self.speaker.cancel()
        self._set_state(RobotState.LISTENING)

    async def transcribe(self, utterance: Utterance,
                         judge: Callable[[Transcript], Transcript] = lambda t: t) -> Transcript | None:
        """The utterance's words (``judge`` may revise the guard's verdict); None when
        speech-to-text failed (reported). One with no words is reported as ignored."""
        try:
            transcript = judge(await self.transcriber.transcribe(utterance, self.turn_vocabulary()))  # type: ignore[union-attr]
        except Exception as exc:  # a broken model must not end the conversation
            self._error("stt", f"transcription failed: {type(exc).__name__}: {exc}")
            return None
        if not transcript.text:
            why = transcript.rejected or "no words"
            log.info("utterance of %.2fs ignored: %s (heard %r)", utterance.duration_s, why, transcript.heard)
            self.events.publish(IgnoredEvent(reason=why, audio_s=round(transcript.audio_s, 3)))
        return transcript

    # --- a turn ----------------------------------------------------------------------

    async def handle_utterance(self, utterance: Utterance, transcript: Transcript | None = None) -> TurnResult | None:
        turn_id = f"t{next(self._turn_ids)}"
        timings = TurnTimings(end_of_speech=utterance.ended_at, hangover_s=utterance.hangover_s)
        self._set_state(RobotState.THINKING, turn_id)
        transcript = transcript or await self.transcribe(utterance)
        timings.transcript_ready = time.monotonic()
        if transcript is None or not transcript.text.strip():
            self.preemptive.cancel()  # nothing to answer
            self._set_state(RobotState.IDLE, turn_id)
            errors = [] if transcript is not None else ["stt: no transcript"]
            stats = (transcript.audio_s, transcript.stt_s) if transcript is not None else (0.0, 0.0)
            return self._finish(TurnResult(turn_id, "", "", timings, *stats, errors=errors))
        text = transcript.text.strip()
        self.events.publish(TranscriptEvent(text=text, audio_s=transcript.audio_s, turn_id=turn_id))
        result = TurnResult(turn_id, text, "", timings, transcript.audio_s, transcript.stt_s)
        return self._finish(await self._converse_safely(result))

    async def handle_text(self, text: str) -> TurnResult:
        """A typed turn (``robot chat``): the same path without audio."""
        turn_id = f"t{next(self._turn_ids)}"
        now = time.monotonic()
        self._set_state(RobotState.THINKING, turn_id)
        self.events.publish(TranscriptEvent(text=text, turn_id=turn_id))
        result = TurnResult(turn_id, text, "", TurnTimings(end_of_speech=now, transcript_ready=now))
        return self._finish(await self._converse_safely(result))

    def _finish(self, result: TurnResult) -> TurnResult:
        result.timings.done = result.timings.done or time.monotonic()
        if result.user_text:
            turn_log.info(result.log_line())
            self.events.publish(TurnEvent(turn_id=result.turn_id, user_text=result.user_text,
                                          reply_text=result.reply_text, timings=result.timings.relative(),
                                          interrupted=result.interrupted))
        self.results.put_nowait(result)
        return result

    async def _converse_safely(self, result: TurnResult) -> TurnResult:
        """A turn that fails in an unexpected place (the memory store, a bug) is reported and
        the robot goes back to listening: one bad turn never ends the conversation."""
        try:
            await self._converse(result)
        except Exception as exc:
            log.exception("turn %s failed", result.turn_id)
            self._error("robot", f"turn failed: {type(exc).__name__}: {exc}", result.turn_id)
            result.errors.append(f"robot: {exc}")
        self._set_state(RobotState.IDLE, result.turn_id)
        if self.sessions is not None:
            self.sessions.touch()  # idle time counts from the end of the reply
        return result

    async def _converse(self, result: TurnResult) -> None:
        turn_id = result.turn_id
        async with self._speaking:
            await self._llm_needed()
            if self.sessions is not None:
                await self.sessions.turn()  # the first turn after idle opens a visitor's session
            if await self._forget_turn(result):
                return  # nothing of it is stored
            plan = self._knowledge_plan(result.user_text)
            knowledge = {"knowledge": plan.notes} if plan and plan.notes else {}
            messages = await self.memory.build_messages(result.user_text, **knowledge)
            # Recorded while the reply starts (a store's write never delays it), and always
            # awaited: if the LLM fails, the customer's words still stay.
            recording = asyncio.create_task(self.memory.record(Remark("user", result.user_text, turn_id=turn_id)))
            try:
                remembered = await self._answer(result, messages, plan)
            finally:
                await recording
            if remembered:
                await self.memory.record(Remark("assistant", remembered, turn_id=turn_id))

    async def _answer(self, result: TurnResult, messages: list[Message], plan: KnowledgePlan | None = None) -> str:
        """Speak the reply to ``messages``; what of it is to be remembered."""
        turn_id, timings = result.turn_id, result.timings
        held, self._held = self._held, []
        prefix = held if held and YesWords.of(self.persona.more_yes).match(result.user_text) else []
        opening = [] if prefix else self._recap(result.user_text)
        if plan is not None and plan.handover and not (prefix or opening):  # nothing in the knowledge: staff
            self.events.publish(HandoverEvent(question=result.user_text, turn_id=turn_id))
            self.preemptive.cancel()
            prefix = [plan.handover]
            messages = []
        elif plan is not None and plan.opening and not (prefix or opening):
            # An answered question: the robot says the entry's sentence that answers it, whole, and
            # the rest of the entry within the budget (then offers more), before the LLM goes on.
            self.preemptive.cancel()
            opening, prefix = list(plan.opening[:1]), list(plan.opening[1:])
        if messages and (prefix or opening):  # a yes to "Shall I tell you more?", a recap, an entry: the LLM goes on
            messages = continuation_messages(messages, [*opening, *prefix])
        guard = plan.guard(messages) if plan is not None and messages else None
        reply = Reply(self.preemptive if messages else _NO_LLM, messages, self._rules(),
                      on_error=lambda reason: self._error("llm", reason, turn_id), deadlines=self.reply_deadlines,
                      prefix=prefix, opening=opening, guard=guard, fallback=plan.fallback if plan else ())
        timings.reply_started = time.monotonic()
        spoken = await self._speak(reply.sentences(), turn_id, turn_id)
        timings.first_token, timings.first_audio = reply.first_token_at, spoken.first_audio_at
        timings.first_sentence, timings.first_render_s = spoken.first_sentence_at, spoken.first_render_s
        result.errors += reply.errors
        result.reply_text, result.gestures, result.interrupted = spoken.text, spoken.gestures, spoken.interrupted
        self._held = [] if spoken.interrupted else reply.held
        if self.knowledge is not None:
            self.knowledge.topic = spoken.text  # its names are heard best in the next turn
        return _as_remembered(spoken, without=reply.filler)

    def _knowledge_plan(self, user_text: str) -> KnowledgePlan | None:
        """What the shop's knowledge holds for these words (robot/dialogue/knowledge.py)."""
        if self.knowledge is None:
            return None
        return self.knowledge.plan(user_text, self._places())

    def _places(self) -> list[str]:
        profile = getattr(self.memory, "profile", None) or {}
        return [v for values in profile.values() for v in values]

    def turn_vocabulary(self) -> list[str]:
        """The names speech recognition listens for in this turn (the persona's, or a short list
        of the knowledge's by the visitor's places and the topic: robot/dialogue/knowledge.py)."""
        if self.knowledge is None:
            return self.persona.vocabulary
        return list(self.knowledge.turn_vocabulary(self._places()))

    async def _forget_turn(self, result: TurnResult) -> bool:
        """The customer asks to be forgotten, or answers the robot's question about it
        (``robot/forget_request.py``): True when this turn was that."""
        lines, forget = self.persona.forget, getattr(self.memory, "forget_user", None)
        if lines is None or forget is None:
            return False
        visitor = getattr(self.memory, "visitor", None) or getattr(self.memory, "user", None)
        heard = self._forget.hear(result.user_text, ForgetWords.of(lines.words, lines.yes, lines.no), visitor)
        if heard is Forget.NONE:
            return False
        self.preemptive.cancel()  # a reply started early to these words is not wanted
        self._held = []
        line = {Forget.ASK: lines.confirm, Forget.KEPT: lines.kept, Forget.CONFIRMED: lines.done}[heard]
        if heard is Forget.CONFIRMED:
            try:
                log.info("the visitor asked to be forgotten: %s", await forget(visitor))
                who = self.sessions.visitor if self.sessions is not None else str(visitor or "anonymous")
                self.events.publish(ForgottenEvent(visitor=who, by="visitor"))  # the body forgets too
            except Exception as exc:  # noqa: BLE001 - the customer hears an apology; the operator is told
                self._error("robot", f"the visitor asked to be forgotten and it failed: {exc}", result.turn_id)
                result.errors.append(f"robot: forget failed: {exc}")
                line = self.persona.apology
        result.timings.reply_started = time.monotonic()
        spoken = await self._speak_text(line, result.turn_id, result.turn_id)
        result.reply_text, result.timings.first_audio = spoken.text, spoken.first_audio_at
        return True

    def _recap(self, user_text: str) -> list[str]:
        """The persona's recap with the visitor's profile, when they ask for one: said by the
        robot itself, since the embedded model named three of the plan's facts in 3 of 16 runs
        of the sample scenario (docs/memory.md)."""
        recap = getattr(self.memory, "recap", None)
        if not self.persona.recap or recap is None:
            return []
        profile = recap(user_text)
        return [self.persona.recap.replace("{profile}", profile)] if profile else []

    def _rules(self) -> ReplyRules:
        p = self.persona
        return ReplyRules(gestures=p.gestures, max_sentences=p.max_sentences, apology=p.apology, filler=p.filler,
                          max_reply_s=p.max_reply_s, words_per_minute=p.rate or self.tts_rate, more_offer=p.more_offer)

    # --- robot-initiated speech and what a body or an operator may ask --------------------

    async def say(self, text: str, *, record: bool = True) -> str:
        """Speak a given text (greeting, an operator's ``say``); it is remembered as said."""
        async with self._speaking:
            spoken = await self._speak_text(text, f"say{next(self._say_ids)}")
            if record and spoken.text:
                await self.memory.record(Remark("assistant", _as_remembered(spoken)))
        self._set_state(RobotState.IDLE)
        if self.warmer is not None:
            self.warmer.idle_again()
        return spoken.text

    async def _speak_text(self, text: str, label: str, turn_id: str | None = None) -> SpokenReply:
        """Speak a fixed text (not the LLM's), sentence by sentence, its gesture tags obeyed."""
        return await self._speak(aiter_of(split_text(text, self.persona.gestures)), label, turn_id)

    async def _speak(self, sentences: AsyncIterator[Sentence], label: str, turn_id: str | None = None) -> SpokenReply:
        """Speak, with the persona's planned gestures on sentences the LLM tagged none; a
        barge-in's verdict is awaited, and a false alarm resumed (robot.barge_in)."""
        self._interruption = None
        on_audio = lambda: self._set_state(RobotState.SPEAKING, turn_id)  # noqa: E731
        return await speak_through_interruptions(self.speaker, self.gesture_planner().annotated(sentences),
                                                 self._take_interruption, self.barge_in,
                                                 label=label, turn_id=turn_id, on_audio=on_audio)

    def gesture_planner(self) -> GesturePlanner:
        """The current persona's planner (a persona switch or reload brings a new one)."""
        if self._planner is None or self._planner[0] is not self.persona:
            p = self.persona
            self._planner = (p, GesturePlanner(p.gesture_rules, p.vocabulary))
        return self._planner[1]

    def _take_interruption(self) -> Interruption | None:
        interruption, self._interruption = self._interruption, None
        return interruption

    async def greet(self) -> None:
        if self.persona.greeting:
            await self.say(self.persona.greeting)

    async def stop_speaking(self) -> None:
        self.speaker.cancel()

    def mute(self) -> None:
        self.muted = True

    def unmute(self) -> None:
        self.muted = False


class _NoLLM:
    """The LLM of a reply that needs none (a handover: the robot says its no_answer line)."""

    async def stream(self, messages: list[Message]) -> AsyncIterator[str]:
        return
        yield  # an async generator that yields nothing


_NO_LLM = _NoLLM()


def _as_remembered(spoken: SpokenReply, without: str | None = None) -> str:
    """What memory keeps of a reply: what was said, marked when the customer cut it. A
    filler (``without``: "Let me check that for you.") was said but holds nothing to
    remember; kept, it would also make the next prompts differ with the machine's load."""
    sentences = list(spoken.sentences)
    if without and sentences and sentences[0] == without:
        sentences = sentences[1:]
    text = " ".join(sentences + ([spoken.partial] if spoken.partial else []))
    return f"{text} [interrupted]" if spoken.by_customer and text else text
