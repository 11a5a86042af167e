"""What the robot does with what it hears: the front end's events routed to the turn
state machine, and barge-in.

While the robot thinks it is deaf (a customer's second sentence would start a second
turn on top of the first), except in a turn's yield window: for ``yield_window_ms`` after a
turn ended on a pause it listens, and speech the second stage confirms there is the customer
going on after a pause taken for their turn's end (robot/dialogue/yielding.py): the robot
stops the turn it began and answers both parts as one. After the window, while it speaks it
listens when barge-in is on: speech the second stage confirms cuts the speaker at once; the
utterance is then transcribed, and the interrupted turn decides from the transcript whether
it was the customer (the robot answers them) or a false alarm (the robot says the rest of
its sentence).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import zlib
from typing import Any, Callable, Protocol

from config.schema import BargeInSettings
from robot.core.events import EventPublisher, IgnoredEvent, InterruptionEvent, RobotState
from robot.dialogue.barge_in import Interruption
from robot.dialogue.yielding import MAX_YIELDS, YieldWindow
from speech.listen import Dropped, FrontEnd, NotSpeech, Paused, Resumed, SpeechConfirmed, SpeechStarted
from speech.stt_guard import normal, rejection
from speech.types import AudioSource, Transcript, Utterance

log = logging.getLogger(__name__)

NO_WORDS = Transcript(text="", audio_s=0.0, stt_s=0.0)  # a continuation that brought none
# The robot's voice still sounds this long after it was told to stop: the speaker's last
# block, the sound card's queue, the room's echo. After it, the customer talks alone.
ECHO_TAIL_S = 0.25
MIN_SECOND_READING_S = 0.5  # less than this after the cut is too little to read alone
MIN_UNSURE_WORDS = 3  # an interruption Whisper is unsure of still counts from this many words
# Whisper's own bar for a decoding stuck in a loop (its compression_ratio_threshold): double
# talk once came back as one clause said twenty times. A spoken sentence compresses 1.0-1.6.
LOOP_COMPRESSION = 2.4


class Listener(Protocol):
    """What hearing needs of the turn state machine (``robot.dialogue.controller``): whether
    it is busy or muted, its speaker and events, and the calls that start or cut a turn."""

    muted: bool
    state: RobotState
    speaker: Any  # its ``speaking`` says whether the robot talks now
    transcriber: Any  # may offer ``transcribe_early`` (speech to text at the customer's pause)
    events: EventPublisher

    @property
    def busy(self) -> bool: ...
    def turn_vocabulary(self) -> list[str]: ...  # the names speech to text listens for now
    def speech_started(self) -> None: ...
    def nothing_heard(self) -> None: ...
    def interrupt(self, interruption: Interruption) -> None: ...
    def yield_turn(self, window: YieldWindow) -> str | None: ...
    def think_ahead(self, transcript: asyncio.Future[Transcript]) -> None: ...
    def resumed(self) -> None: ...
    def start_turn(self, utterance: Utterance, transcript: Transcript | None = None, *,
                   window: YieldWindow | None = None, after: YieldWindow | None = None,
                   judge: Callable[[Transcript], Transcript] | None = None) -> None: ...
    async def wait_turn(self) -> None: ...
    async def transcribe(self, utterance: Utterance,
                         judge: Callable[[Transcript], Transcript] = ...) -> Transcript | None: ...


class Hearing:
    def __init__(self, controller: Listener, front_end: FrontEnd, settings: BargeInSettings) -> None:
        self.controller, self.front_end, self.settings = controller, front_end, settings
        self.interruption: Interruption | None = None  # a cut whose utterance is still going
        self.window: YieldWindow | None = None  # the last turn's yield window, while it is open
        self.continuing: YieldWindow | None = None  # a turn yielded, its continuation still going
        self._tasks: set[asyncio.Task[None]] = set()
        self._heard_speaking = False  # the robot spoke at the last frame heard

    async def run(self, source: AudioSource) -> None:
        async for event in self.front_end.events(source, deaf=self._deaf, strict=self._strict):
            if isinstance(event, SpeechStarted):
                self.controller.speech_started()
            elif isinstance(event, SpeechConfirmed):
                self._confirmed(event)
            elif isinstance(event, NotSpeech):
                self._not_speech(event)
            elif isinstance(event, Dropped):
                self._nothing_came()
            elif isinstance(event, Paused):
                self._paused(event)
            elif isinstance(event, Resumed):
                self.controller.resumed()  # the customer goes on: a reply started at the pause is out of date
            else:
                self._utterance(event)
        if (after := self.continuing) is not None:  # the source ended during the continuation
            self.continuing = None
            self._first_part_alone(after)
        await asyncio.gather(*self._tasks)

    def _deaf(self) -> bool:
        c = self.controller
        if c.muted:
            return True
        if self.interruption is not None or self.continuing is not None:
            return False  # the customer is talking over the robot, or going on: hear them out
        if self._window_open():
            return False  # the customer may go on after their pause
        if self.settings.enabled and c.speaker.speaking:
            return False  # listen for a barge-in
        return c.busy

    def _window_open(self) -> bool:
        """The last turn's yield window is open (closed here once its time passed with no
        speech begun in it); while the robot speaks, only where barge-in may listen."""
        w, endpointer = self.window, self.front_end.endpointer
        if w is None:
            return False
        onset = endpointer.speech_started_at
        if w.settled or endpointer.stream_time >= w.closes_at and (onset is None or onset > w.closes_at):
            w.stand()  # a turn that outlived its window stands: its words are recorded
            self.window = None
            return False
        return self.settings.enabled or not self.controller.speaker.speaking

    def _open_window(self, utterance: Utterance, after: YieldWindow | None = None,
                     ended: float | None = None) -> YieldWindow | None:
        """A turn that ended on a pause (not cut at the maximum length) may be yielded;
        ``ended``: stream time of the endpointer's decision (None: now)."""
        merged = after.yields + 1 if after is not None else 0
        if self.settings.yield_window_ms <= 0 or utterance.truncated or merged >= MAX_YIELDS:
            return None
        ended = self.front_end.endpointer.stream_time if ended is None else ended
        closes_at = ended + self.settings.yield_window_ms / 1000
        self.window = YieldWindow(closes_at, utterance, yields=merged)
        return self.window

    def _strict(self) -> bool:
        speaking = self.controller.speaker.speaking
        if speaking and (w := self.window) is not None and not self._heard_speaking:
            w.robot_speaks(self.front_end.endpointer.stream_time)  # the customer's grace to go on
        self._heard_speaking = speaking
        return speaking and self.interruption is None

    def _confirmed(self, event: SpeechConfirmed) -> None:
        c = self.controller
        if (w := self.window) is not None and self.interruption is None and event.t <= w.closes_at and c.busy:
            if c.speaker.speaking:  # its words decide, as for a barge-in: the robot's own echo is no yield
                self._cut_in_window(w, event)
            else:
                self._yield(w, event)
            return
        if not (self.settings.enabled and c.speaker.speaking and self.interruption is None):
            return
        self.interruption = Interruption(event.t, cut_s=event.at)
        c.interrupt(self.interruption)
        c.events.publish(InterruptionEvent(verdict="cut", detect_s=round(event.at - event.t, 3)))
        log.info("barge-in: speech %.0f ms after its onset; the robot stopped", (event.at - event.t) * 1000)

    def _cut_in_window(self, window: YieldWindow, event: SpeechConfirmed) -> None:
        """The customer goes on while the robot speaks its answer: it stops now, and the
        continuation's transcript decides (``Interruption.decide``): their words, a yield;
        the robot's own echo, a false alarm (the reply resumes)."""
        stage = "speaking" if self.controller.state == RobotState.SPEAKING else "thinking"
        self.window = None  # the cut's now: it stays open until the verdict, however long speech to text takes
        self.interruption = Interruption(event.t, window=window, stage=stage, cut_s=event.at)
        self.controller.interrupt(self.interruption)
        self.controller.events.publish(InterruptionEvent(verdict="cut", detect_s=round(event.at - event.t, 3)))
        log.info("yield: speech %.0f ms after its onset in the yield window; the robot stopped",
                 (event.at - event.t) * 1000)

    def _yield(self, window: YieldWindow, event: SpeechConfirmed) -> None:
        """The customer goes on within the window: the turn in progress stops, and waits for
        the continuation's words to be answered with them."""
        self.window = None
        stage = self.controller.yield_turn(window)
        if stage is None:
            return  # the turn already stood: what follows is a turn of its own
        self.continuing = window
        self.controller.events.publish(InterruptionEvent(verdict="yielded", detect_s=round(event.at - event.t, 3),
                                                         stage=stage))
        log.info("yield: the customer went on while the robot was %s; it stopped", stage)

    def _first_part_alone(self, after: YieldWindow) -> None:
        """No continuation came after all (not speech, the source ended): the yielded turn's
        words are answered alone, never dropped."""
        self.continuing = None
        self.controller.start_turn(after.utterance, NO_WORDS, after=after)

    def _paused(self, event: Paused) -> None:
        """The customer paused: speech to text starts now on what they said, while the
        endpointer waits out its hangover, and then the reply's LLM request (the controller's
        ``think_ahead``); if the turn ends there, that work is reused."""
        c = self.controller
        early = getattr(c.transcriber, "transcribe_early", None)
        if early is not None and self.interruption is None and self.continuing is None and not c.busy \
                and not c.speaker.speaking:  # (a continuation's own words alone are not the turn's)
            transcript = early(event.audio, c.turn_vocabulary())
            heard = self.front_end.heard_words  # the words judge the end of turn too
            transcript.add_done_callback(
                lambda done: heard(event.t, done.result().text, event.unheard_s(done.result().words_end_s))
                if not done.cancelled() and done.exception() is None else None)
            c.think_ahead(transcript)

    def _not_speech(self, event: NotSpeech) -> None:
        self.controller.events.publish(IgnoredEvent(reason="not speech (second stage)",
                                                    audio_s=round(event.utterance.duration_s, 3)))
        self._nothing_came()

    def _nothing_came(self) -> None:
        """The turn in progress brought no utterance: a cut waiting on its words is a false
        alarm (without this, the robot stayed silent for the verdict's 60 s timeout when the
        endpointer dropped the echo that cut it as too short), a yielded turn is answered alone."""
        if (interruption := self.interruption) is not None:
            self.interruption = None
            interruption.heard("")
            self._spawn(self._verdict_without_words(interruption))
        if (after := self.continuing) is not None:  # what went on was not speech after all
            self.continuing = None
            self._first_part_alone(after)
        self.controller.nothing_heard()

    def _utterance(self, utterance: Utterance) -> None:
        interruption, self.interruption = self.interruption, None
        after, self.continuing = self.continuing, None
        if interruption is not None:
            self._spawn(self._interrupting(utterance, interruption, self.front_end.endpointer.stream_time))
        elif after is not None:  # the continuation of a yielded turn: both parts, one turn
            self.controller.start_turn(utterance, window=self._open_window(utterance, after), after=after,
                                       judge=_words_of_a_barge_in)
        elif self.controller.busy:
            log.info("an utterance of %.1fs while the robot was busy and not cut: ignored", utterance.duration_s)
        else:
            self.controller.start_turn(utterance, window=self._open_window(utterance))

    async def _interrupting(self, utterance: Utterance, interruption: Interruption, ended: float) -> None:
        """Transcribe what cut the robot; the interrupted turn decides; if it was the
        customer, their words are the next turn (after the cut turn's own words, when the
        cut was in its yield window)."""
        transcript = await self.controller.transcribe(utterance, judge=_words_of_a_barge_in)
        interruption.reread = lambda: self._second_reading(utterance, interruption.cut_s)
        interruption.heard(transcript.text if transcript is not None else "")
        real = await interruption.real
        transcript = interruption.second_reading or transcript  # the customer's words alone, if read again
        if (after := interruption.window) is not None and real:
            self.controller.events.publish(InterruptionEvent(verdict="yielded", stage=interruption.stage))
            self.controller.start_turn(utterance, transcript or NO_WORDS, after=after,
                                       window=self._open_window(utterance, after, ended))
            return
        self.controller.events.publish(InterruptionEvent(verdict="customer" if real else "false_alarm"))
        if real and transcript is not None:
            await self.controller.wait_turn()
            # A turn like any other: the customer may pause in it and go on (a visitor who spoke
            # over the greeting was heard as interrupting the answer to their own first words)
            self.controller.start_turn(utterance, transcript, window=self._open_window(utterance, ended=ended))

    async def _verdict_without_words(self, interruption: Interruption) -> None:
        real = await interruption.real  # the interrupted turn decides (it may not need words)
        self.controller.events.publish(InterruptionEvent(verdict="customer" if real else "false_alarm"))

    async def _second_reading(self, utterance: Utterance, cut_s: float | None) -> Transcript | None:
        """The words of the utterance after the robot fell silent (the interrupted turn asks
        before it calls a cut a false alarm); None when too little is left to read."""
        rest = utterance.after(cut_s + ECHO_TAIL_S) if cut_s is not None else None
        if rest is None or rest.duration_s < MIN_SECOND_READING_S:
            return None
        return await self.controller.transcribe(rest, judge=_words_of_a_barge_in)

    def _spawn(self, coro: object) -> None:
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _words_of_a_barge_in(transcript: Transcript) -> Transcript:
    """What cut the robot already passed Silero's strict bar, and its first words overlap
    the robot's fading voice, which makes Whisper unsure of all of it (1 in 5 real
    interruptions in the room tests came back "low confidence"). So the confidence rule is
    waived here for a few words or more; the text rules still hold (no words, a known
    hallucination). One or two unsure words ("Okay.", "Ciao.") are what the robot's own
    echo turns into: those stay rejected, and so does a decoding stuck in a loop (double talk
    once came back as "Inari, inari, ..." seventy times). A continuation after a yield is
    judged the same way: it passed Silero too, and it begins in the middle of a sentence,
    which makes Whisper unsure of it ("Kyoto in April with the two of us" came back low
    confidence)."""
    heard = transcript.heard
    if _looping(heard):  # never the customer's words, however sure Whisper was
        return dataclasses.replace(transcript, text="", rejected="a decoding loop")
    if transcript.text or rejection(heard) or len(normal(heard).split()) < MIN_UNSURE_WORDS:
        return transcript
    return dataclasses.replace(transcript, text=transcript.heard, rejected=None)


def _looping(text: str) -> bool:
    data = text.encode()
    return len(data) / max(1, len(zlib.compress(data))) > LOOP_COMPRESSION
