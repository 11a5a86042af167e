"""Barge-in: the customer talks while the robot speaks.

The front end confirms speech (Silero) while the robot speaks: the speaker is cut at once
(within one 20 ms block). Whether it was really the customer is known only later, from
the transcript of the whole utterance. An ``Interruption`` carries that verdict between
the two tasks involved: the listening side, which transcribes the utterance, and the
interrupted turn, which waits before it records what it said, and resumes the cut
sentence when the cut was a false alarm (no words, a known hallucination, or the robot's
own words coming back through the microphone). Before it calls a cut a false alarm, the turn
asks for a second reading of what came after the robot fell silent: the whole utterance
begins in double talk, which Whisper can turn into the robot's own words or a loop
("Inari, inari, ..."), while its rest is the customer alone.

A cut inside a turn's yield window (robot/dialogue/yielding.py) is judged the same way: the
customer's words make it a yield (nothing of the cut reply remembered, both parts answered as
one turn), the robot's own echo a false alarm that resumes the reply.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AsyncIterator, Awaitable, Callable, Iterable

from memory.core.words import share_of_words_in
from robot.dialogue.yielding import YieldWindow
from robot.gestures.sentence import Sentence
from robot.speaking.spoken import SpokenReply
from speech.types import Transcript

if TYPE_CHECKING:
    from config.schema import BargeInSettings
    from robot.speaking.speaker import Speaker

log = logging.getLogger(__name__)

OWN_VOICE_SHARE = 0.6  # this share of a transcript's words in the reply: it heard itself
VERDICT_TIMEOUT_S = 60.0  # an interrupted turn never waits longer than this for its verdict
MAX_RESUMES = 3  # false alarms in a row after which the robot drops the rest of its reply


def own_voice(transcript: str, reply_text: str) -> bool:
    """The transcript is mostly the robot's own reply (an echo the canceller let through)."""
    # Short ones too: the echo of a cut is often two words ("Kyoto has"). A customer who only
    # repeats the robot's words is taken for its echo, and hears the sentence finished.
    share = share_of_words_in(transcript, reply_text)  # words every sentence has do not count
    return share is not None and share >= OWN_VOICE_SHARE


def _customer(text: str, reply_text: str) -> bool:
    return bool(text) and not own_voice(text, reply_text)


@dataclass
class Interruption:
    """One barge-in, from the moment the robot stopped to the verdict on it."""

    onset_s: float  # stream time where the customer's speech began
    cut_at: float = field(default_factory=time.monotonic)
    transcript: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    real: asyncio.Future[bool] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    window: YieldWindow | None = None  # a cut in the turn's yield window: the customer going on
    stage: str = "speaking"  # what the robot was doing when cut ("thinking": no audio out yet)
    silent_at: float | None = None  # monotonic: the cut reply's speech was over
    cut_s: float | None = None  # stream time the robot was told to stop
    # The listening side's second reading: the words after the robot fell silent (None: none).
    reread: Callable[[], Awaitable[Transcript | None]] | None = None
    second_reading: Transcript | None = None  # that reading, when it made the cut the customer's
    _late: asyncio.Task[bool] | None = field(default=None, init=False, repr=False)  # ``decide_when_heard``

    def heard(self, text: str) -> None:
        """The listening side: what the interrupting utterance said ("" for nothing usable)."""
        if not self.transcript.done():
            self.transcript.set_result(text)

    async def settle(self, reply_text: str, confirm_by_transcript: bool) -> bool:
        """``decide``, with the second reading asked for before a cut is called a false alarm."""
        text = self.transcript.result() if self.transcript.done() else ""
        if confirm_by_transcript and not _customer(text, reply_text) and self.reread is not None:
            second = await self.reread()
            if second is not None and _customer(second.text, reply_text):
                # their count only: a log file keeps what it gets, and the visitor's words live in
                # the memory store alone (where ``forget`` reaches them)
                log.info("barge-in: the words after the robot fell silent were the customer's (%d words)",
                         len(second.text.split()))
                self.second_reading = second
        return self.decide(reply_text, confirm_by_transcript)

    def decide_when_heard(self, reply_text: str, confirm_by_transcript: bool) -> None:
        """A cut that came as the reply's last sound drained (the speaker still open, its reply
        already whole): nothing to stop or resume, but the listening side waits for the verdict
        to make the customer's words a turn. Decided once they are transcribed; the turn goes on.
        (Left undecided, those words were never answered.)"""
        async def decide() -> bool:
            await self.wait_transcript()
            return await self.settle(reply_text, confirm_by_transcript)

        self._late = asyncio.ensure_future(decide())  # held here: the loop keeps only weak references

    def decide(self, reply_text: str, confirm_by_transcript: bool) -> bool:
        """The interrupted turn: was it the customer? Sets and returns the verdict."""
        text = self.transcript.result() if self.transcript.done() else ""
        real = not confirm_by_transcript or self.second_reading is not None or _customer(text, reply_text)
        if real and self.window is not None and not self.window.yield_to_continuation(
                self.stage, self.cut_at, self.silent_at):  # yielded now, before the turn records anything
            self.window = None  # the turn already stood: an ordinary barge-in
        if not self.real.done():
            self.real.set_result(real)
        return real

    async def wait_transcript(self) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self.transcript), VERDICT_TIMEOUT_S)
        except asyncio.TimeoutError:
            self.heard("")


async def aiter_of(items: Iterable[Sentence]) -> AsyncIterator[Sentence]:
    for item in items:
        yield item


async def speak_through_interruptions(speaker: Speaker, sentences: AsyncIterator[Sentence],
                                      take_interruption: Callable[[], Interruption | None],
                                      settings: BargeInSettings, *, label: str, turn_id: str | None,
                                      on_audio: Callable[[], None]) -> SpokenReply:
    """Speak; after a barge-in, wait for its verdict, and when it was a false alarm (no
    words, or the robot's own voice) say the rest of the cut sentence, a few times at most.
    ``take_interruption`` hands over the barge-in that cut the speech just spoken, if any."""
    spoken = await speaker.speak(sentences, label=label, turn_id=turn_id, on_audio=on_audio)
    for resumes in itertools.count():
        interruption = take_interruption()
        if interruption is None:
            return spoken  # finished, or stopped by a command
        if not spoken.interrupted:  # the cut came as the reply ended: nothing to resume
            interruption.decide_when_heard(spoken.text, settings.confirm_by_transcript)
            return spoken
        interruption.silent_at = interruption.silent_at or time.monotonic()
        await interruption.wait_transcript()
        unsaid = " ".join(s.text for s in spoken.unsaid)
        if await interruption.settle(f"{spoken.text} {unsaid}", settings.confirm_by_transcript):
            spoken.by_customer = True
            return spoken
        spoken.interrupted = False
        if not (settings.resume and spoken.unsaid and resumes < MAX_RESUMES):
            return spoken
        rest = await speaker.speak(aiter_of(spoken.unsaid), label=f"{label}-resumed{resumes + 1}",
                                   turn_id=turn_id, on_audio=on_audio)
        spoken = spoken.resumed_with(rest)
    raise AssertionError("unreachable")

