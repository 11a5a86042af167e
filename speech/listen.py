"""The one listen loop: microphone frames in, typed events out.

Each frame is cleaned of the robot's own voice (``EchoCanceller``, when there is one),
then goes to webrtcvad's endpointer (cheap, quick to open a turn) and to Silero (robust
to noise). A turn webrtcvad opens is *confirmed* once Silero has heard ``confirm_ms`` of
speech in it; an utterance that ends unconfirmed was noise and comes out as ``NotSpeech``.
Once a turn is confirmed, Silero (with hysteresis, ``SpeechGate``) also decides where its
speech stops: a frame counts as voiced for the hangover only if webrtcvad and Silero both
say voice (``vad.speech_end``), so steady noise cannot hold the turn open. An unconfirmed
turn in which Silero hears nothing like speech for ``vad.unconfirmed_quiet_ms`` is closed as
``NotSpeech``, so noise cannot hold one open until a sentence lands in it. Without a
working Silero (none, or a model that raised) webrtcvad alone decides, as before.

An utterance's wait (``Utterance.hangover_s``) is counted from the customer's last sound
(``VoiceEnd``), not from webrtcvad's last voiced frame, which comes about 100 ms later; on
a source with a capture clock (a sound card: ``capture``, speech/audio/capture.py) it also
counts the input path, and the echo canceller's far end starts when the first frame was
captured. Voice to voice is then what the customer lived, for every source.

Events, in stream order:
- ``SpeechStarted``: webrtcvad opened a turn (the robot shows it is listening);
- ``SpeechConfirmed``: the second stage agrees it is speech (what barge-in acts on);
- ``Paused``: the customer stopped, the utterance's audio is final if nothing follows;
- ``Resumed``: they spoke again after a ``Paused``, in the same turn;
- ``Utterance``: a confirmed utterance ended (``speech.types``);
- ``NotSpeech``: an utterance ended that the second stage did not confirm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AsyncIterator, Callable, Union

from speech.double_talk import DoubleTalk
from speech.echo import EchoCanceller
from speech.turn_end import EndOfTurn, UnfinishedHold, unheard_s
from speech.silero import CHUNK_S, SileroStream, SpeechGate
from speech.types import FRAME_MS, SAMPLE_RATE, AudioSource, Utterance
from speech.vad import Endpointer
from speech.voice_end import VoiceEnd


@dataclass(frozen=True)
class SpeechStarted:
    t: float  # stream seconds of the onset


@dataclass(frozen=True)
class SpeechConfirmed:
    t: float  # stream seconds of the onset
    at: float  # stream seconds when the second stage had heard enough


@dataclass(frozen=True)
class NotSpeech:
    utterance: Utterance
    speech_s: float  # what Silero heard as speech in it


# A customer who cuts in often pauses after the first words ("Sorry to interrupt." takes a
# breath before the question): their turn waits this long for more, not the usual hangover
# (the room test lost "How much is the train to Nara?" after a 0.7 s pause). It costs the
# answer to an interruption about half a second more.
BARGE_IN_HANGOVER_MS = 1200
# A turn confirmed this long after webrtcvad opened it opened on noise (rain, a hum): its
# words start where Silero first heard speech (less the pre-roll). Shorter leads are a soft
# onset Silero was slow to trust, and stay whole.
NOISE_LEAD_S = 1.0
# Below this Silero hears nothing like speech. Through the echo canceller, windows of 1.5 s
# of everyday noise held a chunk at 0.2 or above 0-11 % of the time (rain, office), while a
# sentence under piano began at 0.17-0.43 for its first 300 ms: a higher bar closed that turn
# as noise in the middle of the customer's first word.
QUIET_P = 0.2
# The most a barge-in's onset is moved back to the rise of its first word (FrontEnd._rise_start).
STRICT_RISE_MAX_S = 0.5

@dataclass(frozen=True)
class Paused:
    """The customer stopped talking (the tail after the last word is heard) in a turn the
    second stage confirmed: ``audio`` is the utterance if nothing more is said. Speech to
    text may start on it while the endpointer still waits out its hangover."""

    audio: bytes
    t: float  # stream seconds of the end of the last word
    tail_s: float = 0.2  # ``audio`` goes on this long after its last voiced frame

    def unheard_s(self, words_end_s: float | None) -> float:
        """Seconds of voice after the last word a transcript of ``audio`` placed at ``words_end_s``."""
        return unheard_s(self.audio, self.tail_s, words_end_s)


@dataclass(frozen=True)
class Resumed:
    """The customer spoke again after a ``Paused``, in the same turn: what was started on
    the paused audio (an early reply) is out of date."""

    t: float  # stream seconds


@dataclass(frozen=True)
class Dropped:
    """A turn the endpointer opened and let go without an utterance: under ``vad.min_speech_ms``
    of voice (a click, a cough, the robot's own voice cut at once). Whoever waits on a turn in
    progress (a barge-in's verdict, a yielded turn's continuation) learns nothing came."""

    t: float  # stream seconds of its onset


ListenEvent = Union[SpeechStarted, SpeechConfirmed, Paused, Resumed, Utterance, NotSpeech, Dropped]


@dataclass(frozen=True)
class SecondStage:
    """Silero's say on a turn: ``confirm_ms`` of chunks at ``threshold`` or above since the
    turn opened.

    While the robot speaks (``strict``) the bar is the barge-in one, and it must be met
    *recently*: ``strict_confirm_ms`` at ``strict_threshold`` within the last two
    ``strict_confirm_ms``. What is left of the robot's own voice after the echo canceller
    keeps webrtcvad's turn open for as long as the robot talks and scores up to 0.7 now
    and then (the customer's speech over it 0.9 and more); counted since that turn opened,
    those stray chunks add up to a cut, and the customer's words would be transcribed
    behind seconds of echo.

    A quiet customer under the robot's voice comes through the canceller's suppressor
    damaged: Silero scores 0.8 on a quarter of their chunks at best. The *soft* bar takes
    them: ``soft_confirm_ms`` at ``soft_threshold`` within the last ``soft_window_ms``, with
    as much soft double talk (``speech.double_talk``); None turns it off. Where the linear
    echo filter has learnt the echo, ``linear_confirm_ms`` on what Silero makes of its frames."""

    stream: SileroStream
    threshold: float = 0.5
    confirm_ms: int = 200
    strict_threshold: float = 0.8
    strict_confirm_ms: int = 150
    soft_threshold: float | None = 0.4
    soft_confirm_ms: int = 250
    # Once the linear echo filter is heard: as much speech as the bar in silence (confirm_ms).
    # Its frames keep a room's sound whole, so a loud room is told by its residue (the soft test
    # is off there); the canceller's suppressor squashes a piano under the robot's voice to a
    # "quiet" room from which each note stands out: 200 ms on its frames cut the robot on a piano
    # at -35 dBFS in 1 of 3 to 4 of 4 runs of tests/speech/test_double_talk.py (250: none of 5).
    linear_confirm_ms: int = 200
    soft_window_ms: int = 800

    @property
    def works(self) -> bool:
        """False once the model has raised: the front end goes on with webrtcvad alone."""
        return self.stream.failed is None

    def speech_onset(self, since: float, now: float, strict: bool) -> float | None:
        """Where the speech that meets the bar began (stream seconds), or None: not yet."""
        if not strict:
            heard, first = self.stream.speech_since(since, self.threshold)
            return first if heard * 1000 >= self.confirm_ms else None
        heard, first = self.stream.speech_since(max(since, now - 2 * self.strict_confirm_ms / 1000),
                                                self.strict_threshold)
        return first if heard * 1000 >= self.strict_confirm_ms else None

    def soft_ms(self, linear: bool) -> int:
        """How much speech (and soft double talk) the soft bar asks for: on the linear echo
        filter's frames, or on the canceller's."""
        return self.linear_confirm_ms if linear else self.soft_confirm_ms

    def soft_onset(self, since: float, now: float, stream: SileroStream, linear: bool) -> float | None:
        """The soft bar while the robot speaks (a quiet voice), read on ``stream`` (Silero on the
        frames the bar is judged on): where its speech began, or None."""
        if self.soft_threshold is None:
            return None
        heard, first = stream.speech_since(max(since, now - self.soft_window_ms / 1000), self.soft_threshold)
        return first if heard * 1000 >= self.soft_ms(linear) else None


class FrontEnd:
    """Echo cancelling, endpointing and the second stage over one audio source."""

    def __init__(self, endpointer: Endpointer, second: SecondStage | None = None,
                 echo: EchoCanceller | None = None, turn_end: EndOfTurn | None = None,
                 hold: UnfinishedHold | None = None) -> None:
        self.endpointer, self.second, self.echo, self.turn_end, self.hold = endpointer, second, echo, turn_end, hold
        v = endpointer.settings
        self._gate = SpeechGate(v.speech_on_threshold, v.speech_off_threshold)
        self._confirmed = False
        self._strict_until = 0.0  # stream time where the robot last spoke (strict ended)
        self._double_talk = DoubleTalk()
        # Silero on the linear echo filter's frames (the canceller's while it has not learnt the echo)
        self._soft_stream = second.stream.twin() if second is not None and echo is not None else None
        self._linear_heard = False
        self._paused_after: int | None = None  # the last word a Paused event was given for
        self._pause_open = False  # a Paused was given and no word since
        self._voice = VoiceEnd()
        self._samples_heard = 0  # samples the endpointer was fed (its clock, part-frames included)

    async def events(self, source: AudioSource, *, deaf: Callable[[], bool] = lambda: False,
                     strict: Callable[[], bool] = lambda: False) -> AsyncIterator[ListenEvent]:
        """While ``deaf()`` is true (the robot thinks, or is muted) frames are dropped; the
        endpointer starts clean at the first frame heard again, a fixed point in the stream,
        so the pre-roll of the next utterance never depends on task timing. While
        ``strict()`` is true (the robot speaks) a turn needs the barge-in bar to be
        confirmed. A turn still open when the source ends is closed and yielded."""
        capture = getattr(source, "capture", None)  # a sound card's CaptureClock, or None
        if capture is not None and self.echo is not None:
            self.echo.clock = capture.frame_start
        async for event in self._heard(source, deaf, strict):
            yield capture.restamp(event) if capture is not None and isinstance(event, Utterance) else event

    async def _heard(self, source: AudioSource, deaf: Callable[[], bool],
                     strict: Callable[[], bool]) -> AsyncIterator[ListenEvent]:
        was_deaf = False
        async for frame in source.frames():
            if deaf():
                was_deaf = True  # dropped frames: no detector's clock moves
                if self.echo is not None:
                    self.echo.skip(frame)  # the loudspeaker's clock does
                continue
            if was_deaf:
                self.endpointer.reset()
                if self.second is not None:
                    self.second.stream.reset()
                if self._soft_stream is not None:
                    self._soft_stream.reset()
                self._gate.speaking = False
                self._confirmed = was_deaf = False
            for event in self.hear(frame, strict()):
                yield event
            if self.hold is not None:
                await self.hold.apply(self.endpointer)
            if self.turn_end is not None and self.turn_end.due(self.endpointer):
                if await self.turn_end.finished(self.endpointer):  # the customer finished: no more waiting
                    if (utterance := self.endpointer.end_now()) is not None:
                        yield self._verdict(utterance, strict())
        if not deaf() and (last := self.endpointer.flush()) is not None:
            yield self._verdict(last)

    def heard_words(self, t: float, text: str, unheard: float = 0.0) -> None:
        """The early transcript of the turn up to the pause ending at ``t`` (``Paused.t``), with
        the seconds of voice after its last word (``Paused.unheard_s``): the end-of-turn policy
        and the unfinished-words hold judge it."""
        for judge in (self.turn_end, self.hold):
            if judge is not None:
                judge.heard(t, text, unheard)

    def hear(self, frame: bytes, strict: bool = False) -> list[ListenEvent]:
        """One frame's events (synchronous: microseconds of webrtcvad, ~0.1 ms of Silero)."""
        linear = None
        if (e := self.echo) is not None:
            frame = e.near(frame)
            self._double_talk.hear(self.endpointer.stream_time, e.kept_db, e.out_dbfs, e.linear_kept_db, e.linear_dbfs)
            linear = e.linear
        if self.second is not None:
            # Silero hears one signal each: the canceller's frames, and (for the soft bar) the
            # linear filter's where it has learnt the echo. Fed a frame of one and the next of
            # the other, it heard neither: a voice at its own level scored 0.3 where each
            # alone scored 0.8 (its state runs across frames), and was caught 0.5 s late.
            for _, p in self.second.stream.feed(frame):
                self._gate.step(p)
            if self._soft_stream is not None:
                if linear is not None and not self._linear_heard:
                    # a new signal: its state after seconds of the canceller's frames or of the
                    # filter's near silence scored a soft first word 0.35-0.47 (fresh: 0.8)
                    self._soft_stream.reset()
                self._linear_heard = linear is not None
                self._soft_stream.feed(linear if linear is not None else frame)
        if linear is not None and self._double_talk.soft_now:
            # a quiet voice over the robot's, by the linear filter: webrtcvad and the utterance
            # hear that filter's frame, where the voice is whole; the canceller's suppressor takes
            # 18 dB of it, and webrtcvad did not open the turn, nor Whisper hear its first words.
            frame = linear
        if strict:
            self._strict_until = self.endpointer.stream_time + len(frame) / 2 / SAMPLE_RATE
        opened = self.endpointer.in_speech
        onset_before = self.endpointer.speech_started_at
        self._samples_heard += len(frame) // 2
        self._voice.hear(frame, self._samples_heard / SAMPLE_RATE)
        utterance = self.endpointer.feed(frame, speech=self._speech_verdict())
        events: list[ListenEvent] = []
        onset = self.endpointer.speech_started_at
        if onset is not None and not opened:
            self._confirmed = False
            events.append(SpeechStarted(onset))
        if onset is not None and not self._confirmed and (speech := self._speech_onset(onset, strict)) is not None:
            self._confirmed = True
            # the turn opened on the robot's echo, or on steady noise: the customer's words start here
            start = speech if speech > onset and (strict or speech - onset >= NOISE_LEAD_S) else onset
            if start > onset and (second := self._working_second()) is not None:
                start = max(onset, self._rise_start(second, start, strict))  # its first soft chunk
            if start > onset:
                self.endpointer.move_onset(start)
            if strict:  # "Sorry to interrupt. [pause] How much is...": heard whole, not in halves
                self.endpointer.hold_open(BARGE_IN_HANGOVER_MS)
            events.append(SpeechConfirmed(start, self.endpointer.stream_time))
        if utterance is None and onset is not None and not self._confirmed and not strict and self._quiet(onset):
            utterance = self.endpointer.restart()  # noise held it open: a later sentence starts afresh
        if utterance is not None:
            self._pause_open = False
            events.append(self._verdict(utterance, strict))
        elif opened and not self.endpointer.in_speech:  # closed on too little voice: no utterance
            self._pause_open = self._confirmed = False
            events.append(Dropped(self.endpointer.stream_time if onset_before is None else onset_before))
        elif self._confirmed and (paused := self._pause()) is not None:
            self._pause_open = True
            events.append(paused)
        elif self._pause_open and self._spoke_again():
            self._pause_open = False
            events.append(Resumed(self.endpointer.stream_time))
        return events

    @staticmethod
    def _rise_start(second: SecondStage, speech: float, strict: bool) -> float:
        """Where the first word's soft start began, before the chunk that met the bar at
        ``speech``. Over the robot's voice the barge-in bar is met 150-350 ms into the first word,
        and the pre-roll alone left it clipped: an utterance that began 20 ms after "Excuse me"
        did, and Whisper (with the persona's names as hints) heard only the second sentence. Not
        further back than ``STRICT_RISE_MAX_S`` there: the robot's echo may keep the run going."""
        rise = second.stream.rise_start(speech + CHUNK_S, QUIET_P)
        return max(min(rise, speech), speech - STRICT_RISE_MAX_S) if strict else rise

    def _working_second(self) -> SecondStage | None:
        return self.second if self.second is not None and self.second.works else None

    def _speech_verdict(self) -> bool | None:
        """Silero's say on this frame for the endpointer's hangover: only in a confirmed
        turn (webrtcvad's alone before, and without a working Silero)."""
        if not self._confirmed or self.endpointer.settings.speech_end != "silero" or self._working_second() is None:
            return None
        return self._gate.speaking

    def _quiet(self, onset: float) -> bool:
        """The unconfirmed open turn has had no speech from Silero for ``unconfirmed_quiet_ms``."""
        limit_ms, second = self.endpointer.settings.unconfirmed_quiet_ms, self._working_second()
        if not limit_ms or second is None:
            return False
        since = max(onset - 0.1, self._strict_until)
        last = second.stream.last_speech_end(QUIET_P)
        quiet_from = since if last is None else max(since, last)
        return (self.endpointer.stream_time - quiet_from) * 1000 >= limit_ms

    def _spoke_again(self) -> bool:
        pause = self.endpointer.pause
        return self.endpointer.in_speech and (pause is None or pause[0] != self._paused_after)

    def _pause(self) -> Paused | None:
        """A Paused event, once per pause, as soon as the utterance's tail is all heard."""
        pause = self.endpointer.pause
        if pause is None or pause[0] == self._paused_after:
            return None
        audio = self.endpointer.audio_if_ended_now()
        if audio is None:
            return None
        self._paused_after = pause[0]
        return Paused(audio, (pause[0] + 1) * self.endpointer.settings.frame_ms / 1000, self.endpointer.tail_s)

    def _speech_onset(self, onset: float, strict: bool = False) -> float | None:
        second = self._working_second()
        if second is None:
            return onset
        # Chunks heard while the robot spoke are its echo unless the strict bar took them.
        since = max(onset - 0.1, 0.0 if strict else self._strict_until)
        if not strict:
            return second.speech_onset(since, self.endpointer.stream_time, strict)
        loud = self._loud_onset(second, since)
        return loud if loud is not None else self._soft_onset(second, since)

    def _loud_onset(self, second: SecondStage, since: float) -> float | None:
        """Speech over the robot's voice at the barge-in bar, in loud double talk."""
        now = self.endpointer.stream_time
        window_s = 2 * second.strict_confirm_ms / 1000
        if self.echo is None or self._double_talk.loud_s(now - window_s) * 1000 >= second.strict_confirm_ms:
            return second.speech_onset(since, now, True)
        return None

    def _soft_onset(self, second: SecondStage, since: float) -> float | None:
        """A quiet voice under the robot's: the soft bar, in soft double talk (a canceller's only),
        on what Silero made of the linear filter's frames where it had learnt the echo."""
        now = self.endpointer.stream_time
        if self.echo is None or self._soft_stream is None:
            return None
        linear = self.echo.linear is not None
        if self._double_talk.soft_s(now - second.soft_window_ms / 1000) * 1000 < second.soft_ms(linear):
            return None
        return second.soft_onset(since, now, self._soft_stream, linear)

    def _verdict(self, utterance: Utterance, strict: bool = False) -> Utterance | NotSpeech:
        utterance = self._voice.correct(utterance)  # its wait counted from its last sound
        confirmed = self._confirmed or self._speech_onset(utterance.t_start, strict) is not None
        self._confirmed = False
        if confirmed:  # always, without a second stage
            return utterance
        s = self.second
        assert s is not None
        return NotSpeech(utterance, s.stream.speech_s_since(utterance.t_start - 0.1, s.threshold))


async def utterances(source: AudioSource, front_end: FrontEnd) -> AsyncIterator[Utterance]:
    """Only the utterances of a source (tools, tests): the front end's other events dropped."""
    async for event in front_end.events(source):
        if isinstance(event, Utterance):
            yield event
