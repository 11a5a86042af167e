"""The turn state machine: hear an utterance, transcribe it, reply, remember.

States: idle -> listening (speech started) -> thinking (utterance ended) -> speaking -> idle;
speaking -> listening when the customer interrupts (barge-in, robot/dialogue/hearing.py).

The controller only sequences the stages; each stage is its own object: the listen loop
(speech.listen.FrontEnd, routed by robot.dialogue.hearing), the transcriber, the shop's
knowledge (robot.dialogue.knowledge), the turn handlers asked before the LLM
(robot.dialogue.turn_handlers: forget, "more", recap, an entry or a handover), memory, the reply
(robot.reply.stream) and the speaker (robot.speaking.speaker), which renders, plays,
publishes speech and gesture events, and cancels.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import TYPE_CHECKING, AsyncIterator, Callable, Protocol

from config.schema import BargeInSettings, Persona
from memory.core.base import DialogueMemory, Message, Remark
from robot.core.events import (ErrorEvent, EventPublisher, GestureEvent, IgnoredEvent, RobotState, StateEvent,
                               TranscriptEvent, TurnEvent)
from robot.core.redact import redact
from robot.dialogue.barge_in import Interruption
from robot.dialogue.consult import ConsultSlot
from robot.dialogue.hearing import Hearing
from robot.dialogue.more import continuation_messages
from robot.dialogue.think_ahead import ThinkAhead
from robot.dialogue.turn_handlers import (Answered, Farewell, ForgetHandler, HeardTurn, KnowledgeAnswer, MoreOffer,
                                          Noted, Opening, Recap, TurnHandler, first_outcome, first_person,
                                          own_heads, stock_lines)
from robot.dialogue.turns import RecentResults, TurnResult, TurnTimings, turn_log
from robot.dialogue.yielding import YieldWindow
from robot.dialogue.voice import Voice
from robot.gestures.sentence import Sentence
from robot.reply.grounding import GroundingGuard
from robot.reply.preemptive import PreemptiveLLM
from robot.reply.stream import NO_LLM, Reply, ReplyLLM, ReplyRules
from robot.reply.timing import ReplyDeadlines
from robot.speaking.speaker import Speaker
from robot.speaking.spoken import SpokenReply
from speech.listen import FrontEnd
from speech.types import AudioSource, Transcript, Utterance

if TYPE_CHECKING:
    from robot.dialogue.knowledge import KnowledgePlan, ShopKnowledge
    from robot.dialogue.sessions import Sessions
    from robot.reply.prompt_warmer import PromptWarmer

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
                 start_at_pause: bool = False, first_clause: bool = False) -> None:
        self.persona = persona
        self.tts_rate = tts_rate  # words per minute when the persona sets none: spoken-length estimates
        self.first_clause = first_clause  # an LLM reply is said from its first clause (tts.first_chunk)
        # Asked in order before the LLM (robot/dialogue/turn_handlers.py); the first that decides wins.
        self.more = MoreOffer()  # what the last reply held back at its budget, until the next turn
        # The shop's consultation (robot/dialogue/consult.py): its ``consult`` is set with the knowledge
        # of a persona with offers (robot/app/runtime.py, a persona switch).
        self.consulting = ConsultSlot()
        self.handlers: list[TurnHandler] = [ForgetHandler(events, self._error), self.more, Farewell(),
                                            self.consulting, Recap(),
                                            KnowledgeAnswer(events, self.consulting.sheet_for_question), Noted()]
        self.reply_deadlines = reply_deadlines
        self.memory = memory
        self.llm = llm
        # Replies go through it: a request started at the customer's pause is taken when the
        # turn ends with the same words (robot/reply/preemptive.py).
        self.preemptive = PreemptiveLLM(llm)
        self.thinking = ThinkAhead(self.preemptive, enabled=start_at_pause, busy=lambda: self.busy,
                                   prompt=self._early_prompt, sessions=lambda: self.sessions)
        self.speaker = speaker
        self.voice = Voice(speaker, barge_in)  # speaks with gestures, through barge-ins
        self.events = events
        self.front_end = front_end
        self.transcriber = transcriber
        self.barge_in = barge_in
        self.state = RobotState.IDLE
        self.muted = False
        self.results: asyncio.Queue[TurnResult] = RecentResults()  # read by a simulation; live, by nobody
        self._turn_ids = itertools.count(1)
        self._say_ids = itertools.count(1)
        self._turn_task: asyncio.Task[TurnResult | None] | None = None
        self._yielded: set[asyncio.Task[TurnResult | None]] = set()  # turns the customer went on from, ending
        self._recording: set[str] = set()  # turns whose customer's words are being stored (``_converse``)
        self._speaking = asyncio.Lock()  # one reply (or said text) at a time
        self.sessions: Sessions | None = None  # visitor sessions (robot/app/runtime.py sets them)
        # Reads a rewritten role prompt ahead while the robot is idle (robot/app/runtime.py sets it).
        self.warmer: PromptWarmer | None = None
        self.knowledge: ShopKnowledge | None = None  # the persona's knowledge (robot/app/runtime.py sets it)

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
        """A reply is coming: a read of its prompt in progress finishes first (robot/reply/prompt_warmer.py)."""
        if self.warmer is not None:
            await self.warmer.settle()

    def speech_started(self) -> None:
        if self.state == RobotState.IDLE:
            self._set_state(RobotState.LISTENING)

    def nothing_heard(self) -> None:
        """What began as speech was not (a knock, a sound too short): a robot that answers
        nothing is idle again. It stayed "listening" until the next turn: a body showed it
        listening to nobody, and a summary waited to be swapped in (robot/reply/swap_hold.py)."""
        if self.state == RobotState.LISTENING and not self.busy:
            self._set_state(RobotState.IDLE)

    async def listen(self, source: AudioSource) -> None:
        """Run turns from a microphone (or any source) until it ends."""
        if self.front_end is None or self.transcriber is None:
            raise RuntimeError("listening needs a front end and a transcriber")
        await Hearing(self, self.front_end, self.barge_in).run(source)
        await self.wait_turn()

    def think_ahead(self, transcript: asyncio.Future[Transcript]) -> None:
        """The customer paused and speech to text started on their words: the reply's LLM
        request may start now (robot/dialogue/think_ahead.py)."""
        self.thinking.at_pause(transcript)

    def resumed(self) -> None:
        """The customer went on after the pause: what was started on it is out of date."""
        self.thinking.resumed()

    async def _early_prompt(self, text: str) -> list[Message] | None:
        """The prompt the turn would build for these words; None when the robot will speak
        first itself (an entry that answers, a handover): no early request would be taken."""
        await self._llm_needed()
        plan = await self._knowledge_plan(text)
        if plan is not None and (plan.handover or plan.opening):
            return None
        return await self._prompt(text, plan)

    async def _prompt(self, text: str, plan: KnowledgePlan | None) -> list[Message]:
        if plan is not None and plan.notes:  # the entries found share the retrieval room
            return await self.memory.build_messages(text, knowledge=plan.notes)
        return await self.memory.build_messages(text)

    def start_turn(self, utterance: Utterance, transcript: Transcript | None = None, *,
                   window: YieldWindow | None = None, after: YieldWindow | None = None,
                   judge: Callable[[Transcript], Transcript] | None = None) -> None:
        """``window``: the turn's yield window; ``after``: the window of the turn the customer
        went on from, whose words come first (robot/dialogue/yielding.py); ``judge``: see
        ``transcribe``."""
        if self._turn_task is not None and not self._turn_task.done():  # a yielded turn, stopping
            self._yielded.add(self._turn_task)
            self._turn_task.add_done_callback(self._yielded.discard)
        self._turn_task = asyncio.create_task(self.handle_utterance(utterance, transcript, window, after, judge))
        self._turn_task.add_done_callback(lambda _: self.warmer and self.warmer.idle_again())

    async def wait_turn(self) -> None:
        """Until the turn in flight (and those the customer went on from) ended. A wait that is
        cancelled leaves them running: asyncio.wait, not gather, which would cancel them too."""
        turns = self._turns_in_flight()
        if turns:
            await asyncio.wait(turns)

    async def finish(self, within_s: float) -> None:
        """Stopping (``robot run``'s exit, before the memory closes): the turn in flight gets
        ``within_s`` to end; then its reply is cut. Its customer's words are stored either way
        (``_converse``): a stop that closed the store under a turn still recording lost them."""
        turns = self._turns_in_flight()
        if not turns:
            return
        _, pending = await asyncio.wait(turns, timeout=within_s)
        if pending:
            log.info("stopping: %d turn(s) still in flight after %.1f s are cut, their words kept",
                     len(pending), within_s)
            self.speaker.cancel()
            for turn in pending:
                turn.cancel()
            await asyncio.wait(pending)

    def _turns_in_flight(self) -> list[asyncio.Task[TurnResult | None]]:
        return [t for t in (self._turn_task, *self._yielded) if t is not None and not t.done()]

    def yield_turn(self, window: YieldWindow) -> str | None:
        """The customer went on after the turn in progress ended on a pause: stop thinking
        and speaking on it now (the reply's LLM request closes with the speaker); the next turn
        answers both parts. The stage it stopped in, or None when the turn already stood."""
        stage = "speaking" if self.state == RobotState.SPEAKING else "thinking"
        if not window.yield_to_continuation(stage):
            return None
        self.speaker.cancel()  # within one 20 ms block
        self.thinking.resumed()  # an early request for the first part alone is out of date
        self._set_state(RobotState.LISTENING)
        return stage

    def interrupt(self, interruption: Interruption) -> None:
        """Barge-in: stop speaking now; the turn speaking waits for the verdict on it."""
        self.voice.interrupt(interruption)
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
            log.info("utterance of %.2fs ignored: %s (heard %d words)", utterance.duration_s, why,
                     len(transcript.heard.split()))  # no words in a log: they may be a visitor's
            self.events.publish(IgnoredEvent(reason=why, audio_s=round(transcript.audio_s, 3)))
        return transcript

    # --- a turn ----------------------------------------------------------------------

    async def handle_utterance(self, utterance: Utterance, transcript: Transcript | None = None,
                               window: YieldWindow | None = None, after: YieldWindow | None = None,
                               judge: Callable[[Transcript], Transcript] | None = None) -> TurnResult | None:
        """One turn; None when the customer went on and the next turn answers its words
        (``window``, ``after``, ``judge``: see ``start_turn``)."""
        try:
            return await self._handle_utterance(utterance, transcript, window, after, judge)
        finally:
            if window is not None:
                window.over()

    async def _handle_utterance(self, utterance: Utterance, transcript: Transcript | None, window: YieldWindow | None,
                                after: YieldWindow | None, judge: Callable[[Transcript], Transcript] | None,
                                ) -> TurnResult | None:
        if after is not None:
            await after.ended.wait()  # the turn yielded to this one is over: nothing of it said or stored
        turn_id = f"t{next(self._turn_ids)}"
        timings = TurnTimings(end_of_speech=utterance.ended_at, hangover_s=utterance.hangover_s)
        self._set_state(RobotState.THINKING, turn_id)
        transcript = transcript or await (self.transcribe(utterance, judge) if judge else self.transcribe(utterance))
        if after is not None:
            transcript = await after.joined(transcript)
        if window is not None:
            window.heard(transcript)
            if window.yielded:
                return None  # the customer went on: the next turn answers these words with theirs
        timings.transcript_ready = time.monotonic()
        if transcript is None or not transcript.text.strip():
            self.preemptive.cancel()  # nothing to answer
            result = TurnResult(turn_id, "", "", timings, *((transcript.audio_s, transcript.stt_s) if transcript
                                                            else (0.0, 0.0)), heard_until_s=utterance.t_end)
            if transcript is None:  # speech recognition failed: the visitor spoke and hears so, never silence
                result.errors.append("stt: no transcript")
                async with self._speaking:
                    await self._say_answer(result, Answered(self.persona.not_heard))
            self._set_state(RobotState.IDLE, turn_id)
            return self._finish(result)
        text = transcript.text.strip()
        self.events.publish(TranscriptEvent(text=text, audio_s=transcript.audio_s, turn_id=turn_id))
        result = TurnResult(turn_id, text, "", timings, transcript.audio_s, transcript.stt_s,
                            heard_until_s=utterance.t_end)
        if after is not None:
            result.yields, result.yield_stop_s = after.yields + 1, after.stop_s
        result = await self._converse_safely(result, window)
        return None if window is not None and window.yielded else self._finish(result)

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

    async def _converse_safely(self, result: TurnResult, window: YieldWindow | None = None) -> TurnResult:
        """A turn that fails in an unexpected place (the memory store, a bug) is reported and
        the robot goes back to listening: one bad turn never ends the conversation."""
        try:
            await self._converse(result, window)
        except Exception as exc:
            log.exception("turn %s failed", result.turn_id)
            self._error("robot", f"turn failed: {type(exc).__name__}: {exc}", result.turn_id)
            result.errors.append(f"robot: {exc}")
        yielded = window is not None and window.yielded  # the customer is still talking
        self._set_state(RobotState.LISTENING if yielded else RobotState.IDLE, result.turn_id)
        if self.sessions is not None:
            self.sessions.touch()  # idle time counts from the end of the reply
        return result

    async def _converse(self, result: TurnResult, window: YieldWindow | None = None) -> None:
        try:
            await self._converse_turn(result, window)
        except asyncio.CancelledError:  # the robot stops (``finish``) with this turn in flight
            if result.turn_id not in self._recording and not (window is not None and window.yielded):
                if window is not None:
                    window.reply_over()  # it stands: nothing follows it now
                await asyncio.shield(self._record_user(result, window))  # heard, so kept
            raise
        finally:
            self._recording.discard(result.turn_id)

    async def _converse_turn(self, result: TurnResult, window: YieldWindow | None) -> None:
        turn_id = result.turn_id

        def yielded() -> bool:  # checked before each stage that speaks or stores: the speaker
            return window is not None and window.yielded  # cuts only what it is already saying

        async with self._speaking:
            await self._llm_needed()
            if yielded():
                return
            if self.sessions is not None:
                await self.sessions.turn()  # the first turn after idle opens a visitor's session
            plan = await self._knowledge_plan(result.user_text)
            outcome = await first_outcome(self.handlers, self._heard(result, plan))
            if yielded():
                return
            if isinstance(outcome, Answered):
                return await self._say_answer(result, outcome)  # nothing of it is stored
            messages = await self._prompt(result.user_text, plan)
            if yielded():
                return
            # Recorded while the reply goes on (a store's write never delays it) once the turn
            # stands, and always awaited: if the LLM fails, the customer's words still stay.
            recording = asyncio.create_task(self._record_user(result, window))
            self._recording.add(turn_id)
            try:
                remembered = await self._answer(result, messages, outcome, plan)
            finally:
                if window is not None:
                    window.reply_over()  # the turn stands now unless the customer went on
                await recording
            if remembered and not yielded():  # a yielded reply's start is not remembered as said
                await self.memory.record(Remark("assistant", remembered, turn_id=turn_id))
                if outcome is not None and outcome.ends_visit and self.sessions is not None:
                    self.sessions.goodbye()  # a farewell said: the session ends soon unless they go on
                if outcome is not None and outcome.asks and not result.interrupted:
                    self.memory.asked(outcome.asks)  # type: ignore[attr-defined] - said: not again this visit

    async def _record_user(self, result: TurnResult, window: YieldWindow | None) -> None:
        """The customer's words, once their turn stands: its yield window passed or its reply
        is over. A turn the customer went on from leaves no entry: its words are the next turn's."""
        if window is not None and not await window.standing():
            return
        await self.memory.record(Remark("user", result.user_text, turn_id=result.turn_id))

    def _heard(self, result: TurnResult, plan: KnowledgePlan | None) -> HeardTurn:
        visitor = self.sessions.visitor if self.sessions is not None else None
        return HeardTurn(result.user_text, result.turn_id, self.persona, self.memory, visitor, plan)

    async def _answer(self, result: TurnResult, messages: list[Message], opening: Opening | None,
                      plan: KnowledgePlan | None = None) -> str:
        """Speak the reply to ``messages``, after the ``opening`` a turn handler gave it, every
        LLM sentence checked against the reply's sources when the persona has knowledge
        (robot/reply/grounding.py); what of it is to be remembered."""
        turn_id, timings = result.turn_id, result.timings
        opening = opening or Opening()
        llm: ReplyLLM = self.preemptive
        if not opening.llm:  # the robot's own line is the whole reply (a handover)
            self.preemptive.cancel()
            llm, messages = NO_LLM, []
        elif opening.sentences:  # a yes to "Shall I tell you more?", a recap, an entry: the LLM goes on after it
            messages = continuation_messages(messages, list(opening.sentences))
        instructions = [getattr(self.memory, "persona_prompt", "")]
        own = (self.persona.name, self.persona.greeting or "")  # who the robot is may always be said
        guard = (plan.guard(messages, instructions, own) if plan is not None else
                 GroundingGuard.instructions_only(instructions)) if messages else None
        reply = Reply(llm, messages, self._rules(),
                      on_error=lambda reason: self._error("llm", reason, turn_id), deadlines=self.reply_deadlines,
                      prefix=opening.within_budget, opening=opening.whole, guard=guard,
                      fallback=plan.fallback if plan is not None else ())
        timings.reply_started = time.monotonic()
        spoken = await self._speak(reply.sentences(), turn_id, turn_id)
        timings.first_token, timings.first_audio = reply.first_token_at, spoken.first_audio_at
        timings.first_sentence, timings.first_render_s = spoken.first_sentence_at, spoken.first_render_s
        result.errors += reply.errors
        result.reply_text, result.gestures, result.interrupted = spoken.text, spoken.gestures, spoken.interrupted
        self.more.offer([] if spoken.interrupted else reply.held, own=not opening.llm)
        if self.knowledge is not None:
            self.knowledge.said(spoken.text, plan)  # its names are heard best next, its entries are the topic
        return spoken.remembered(without=reply.filler)

    async def _knowledge_plan(self, user_text: str) -> KnowledgePlan | None:
        """What the shop's knowledge holds for these words (robot/dialogue/knowledge.py), in a
        thread: a shop of 100,000 entries searches for a second, which the loop must not wait."""
        if self.knowledge is None:
            return None
        return await asyncio.to_thread(self.knowledge.plan, user_text, self._places())

    def _places(self) -> list[str]:
        profile = getattr(self.memory, "profile", None) or {}
        return [v for values in profile.values() for v in values]

    def turn_vocabulary(self) -> list[str]:
        """The names speech recognition listens for in this turn: the persona's, or a short
        list of the knowledge's by the visitor's places and the topic (robot/dialogue/knowledge.py)."""
        if self.knowledge is None:
            return self.persona.vocabulary
        return list(self.knowledge.turn_vocabulary(self._places()))

    async def _say_answer(self, result: TurnResult, answered: Answered) -> None:
        """A turn a handler answered with a fixed line (a forget request): said, not stored."""
        self.preemptive.cancel()  # a reply started early to these words is not wanted
        self.more.offer([])
        result.errors += answered.errors
        result.timings.reply_started = time.monotonic()
        spoken = await self._speak_text(answered.line, result.turn_id, result.turn_id)
        result.reply_text, result.timings.first_audio = spoken.text, spoken.first_audio_at

    def _rules(self) -> ReplyRules:
        p = self.persona
        return ReplyRules(gestures=p.gestures, max_sentences=p.max_sentences, apology=p.apology, filler=p.filler,
                          max_reply_s=p.max_reply_s, words_per_minute=p.rate or self.tts_rate, more_offer=p.more_offer,
                          first_clause=self.first_clause, own_heads=own_heads(p), stock=stock_lines(p),
                          first_person=first_person(p))

    # --- robot-initiated speech and what a body or an operator may ask --------------------

    async def say(self, text: str, *, record: bool = True) -> str:
        """Speak a given text (greeting, an operator's ``say``); it is remembered as said."""
        async with self._speaking:
            spoken = await self._speak_text(text, f"say{next(self._say_ids)}")
            if record and spoken.text:
                await self.memory.record(Remark("assistant", spoken.remembered()))
        self._set_state(RobotState.IDLE)
        if self.warmer is not None:
            self.warmer.idle_again()
        return spoken.text

    async def _speak_text(self, text: str, label: str, turn_id: str | None = None) -> SpokenReply:
        return await self.voice.speak_text(text, self.persona, label=label, turn_id=turn_id,
                                           on_audio=self._on_audio(turn_id))

    async def _speak(self, sentences: AsyncIterator[Sentence], label: str, turn_id: str | None = None) -> SpokenReply:
        return await self.voice.speak(sentences, self.persona, label=label, turn_id=turn_id,
                                      on_audio=self._on_audio(turn_id))

    def _on_audio(self, turn_id: str | None) -> Callable[[], None]:
        return lambda: self._set_state(RobotState.SPEAKING, turn_id)

    async def greet(self) -> None:
        if self.persona.greeting:
            await self.say(self.persona.greeting)

    async def stop_speaking(self) -> None:
        self.speaker.cancel()

    def mute(self) -> None:
        self.muted = True

    def unmute(self) -> None:
        self.muted = False

