"""When a pause ends the customer's turn: the end-of-turn policy.

Silence alone (``vad.hangover_ms``, 1000 ms) makes every reply wait that long, and a shorter
one cuts people off in mid-clause. ``EndOfTurn`` decides once a pause reaches ``pause_ms``
(the short bound) with what the robot knows there: the turn-completion model (Smart Turn)
hears the turn so far, and the transcript of the turn up to the pause, when one is at hand,
says whether the words are unfinished ("... and our budget is about", "to go to the").
A finished turn ends at the short bound; anything else waits for the endpointer's own
hangover. One question per pause: a new word starts a new pause.

``UnfinishedHold`` works the other way, under either policy: words that stop in mid-clause make
the endpointer wait longer than the hangover for this pause (``vad.unfinished_hold_ms``), so a
customer searching for a word is not cut off by silence alone. ``PauseWords`` is the words at a
pause both of them judge, and whether they reach the end of the voice: a transcript whose last
word ends well before the customer stopped has lost words there, and cannot say the turn is
finished (tiny.en heard "... for the frequent formal review" where they paused after "review
of", and the turn ended).

The model runs in a worker thread (tens of milliseconds); the listen loop awaits it, so
frames wait in the source's queue meanwhile and none is lost, and a simulation (fed faster
than real time) takes the same decisions as a live microphone.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from typing import Callable, Protocol

from speech.types import SAMPLE_RATE, Transcript
from speech.vad import Endpointer

log = logging.getLogger(__name__)

# Words after which an English sentence cannot end: articles, prepositions, conjunctions,
# possessives, auxiliaries, subject pronouns. A transcript that ends on one is unfinished.
OPEN_WORDS = frozenset("""a an the to and or but of my our your their its is are was were am be
    about for in with at from by into onto than as if because very i we they he she i'm we're
    they're you're i'd we'd i'll we'll like around approximately nearly between""".split())
# After a number, a unit or currency usually follows ("two thousand ... dollars").
_NUMBER_WORDS = frozenset("""one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million""".split())
_QUESTION_OPENERS = frozenset("""what where when who whom whose which why how is are was were do does
    did can could will would should may shall have has""".split())
_WORD = re.compile(r"[a-z0-9']+")
# A number that carries its unit in a sign: Whisper writes "two thousand dollars" as "$2,000".
_NUMBER_WITH_SIGN = re.compile(r"(?:[$\u20ac\u00a3\u00a5]\s?[\d.,]*\d|\d[\d.,]*\s?%)[.!?]?$")


def unfinished(text: str) -> bool:
    """The transcript stops in mid-clause: a trailing "..." or comma, a word after which a
    sentence cannot end ("and", "the", "to", "about"), or a number with no unit after it
    ("our budget is two thousand"; "$2,000" has its unit). Whisper's full stop is no evidence
    either way: it puts one after most fragments."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped.endswith(("...", "\u2026", ",", "-", "\u2014")):
        return True
    words = _WORD.findall(stripped.lower())
    if not words:
        return False
    last = words[-1]
    if last.isdigit() and _NUMBER_WITH_SIGN.search(stripped):
        return False  # "$2,000.", "50 %": the unit is said
    return last in OPEN_WORDS or (len(words) > 1 and (last.isdigit() or last in _NUMBER_WORDS))


def complete_question(text: str) -> bool:
    """A whole question ("What time does the temple open?"): it asks for an answer now."""
    stripped = text.strip()
    words = _WORD.findall(stripped.lower())
    return (stripped.endswith("?") and len(words) >= 3 and words[0] in _QUESTION_OPENERS
            and not unfinished(stripped[:-1]))


# Seconds of voice after the transcript's last word (Whisper's alignment) beyond which the
# words lost something: a dropped "of" left 0.5 s, a dropped "In" 0.6 s; on the pause sets'
# finished turns the alignment put the last word's end up to 0.36 s before the endpointer's
# last voiced frame (a long final "begins", a breath). Beyond it the model decides alone.
UNHEARD_MAX_S = 0.45


def unheard_s(audio: bytes, tail_s: float, words_end_s: float | None) -> float:
    """Seconds of the customer's voice in ``audio`` (an utterance's, ending ``tail_s`` after
    its last voiced frame) after ``words_end_s``, where the transcript's last word ends; 0
    where that is not known."""
    if words_end_s is None:
        return 0.0
    return max(0.0, len(audio) / 2 / SAMPLE_RATE - tail_s - words_end_s)


class TurnCompletion(Protocol):
    def probability(self, pcm: bytes) -> float:
        """That the turn in ``pcm`` (16 kHz mono int16) is complete, 0..1 (blocking)."""
        ...


def turn_is_finished(probability: float | None, text: str | None, threshold: float) -> bool:
    """The decision at the short bound. Unfinished words always wait; a complete question
    needs only half the model's usual confidence; otherwise the model decides. No model
    (it failed): only a complete question ends the turn early."""
    if text is not None and unfinished(text):
        return False
    if text is not None and complete_question(text):
        return probability is None or probability >= threshold / 2
    return probability is not None and probability >= threshold


@dataclass
class PauseWords:
    """The words of the turn up to a pause, and from when they are known (stream seconds): the
    early transcript the robot makes at the ``Paused`` event (``heard``), or in a bench one made
    here (``transcribed``: known as late as the robot's would be, 200 ms after the last word
    plus the seconds it took)."""

    _words: tuple[float, float, str, float] | None = None  # (pause t, known from t, text, unheard s)

    def heard(self, t: float, text: str, unheard: float = 0.0) -> None:
        """The words up to the pause whose last word ends at stream time ``t`` (``Paused.t``),
        and the seconds of voice after the last of them (``unheard_s``)."""
        self._words = (t, 0.0, text, unheard)

    def transcribed(self, endpointer: Endpointer, text: str, took_s: float, unheard: float = 0.0) -> None:
        t = _pause_t(endpointer)
        self._words = (t, t + endpointer.tail_s + took_s, text, unheard)

    @property
    def whole(self) -> bool:
        """The last words heard reach the end of the voice (or no words are known)."""
        return self._words is None or self._words[3] <= UNHEARD_MAX_S

    @property
    def unheard(self) -> float:
        return 0.0 if self._words is None else self._words[3]

    def now(self, endpointer: Endpointer) -> str | None:
        """The words for the current pause, if they are known by now."""
        if self._words is None or abs(self._words[0] - _pause_t(endpointer)) > 0.03:
            return None
        if not self._words[2].strip():
            # Whisper heard no words (or its guard dropped them) in speech Silero confirmed: a
            # fragment ("And so my"), not a finished turn; agreeing with the model on it cut 1 in 16
            return None
        return self._words[2] if endpointer.stream_time >= self._words[1] else None


async def _ask(function: Callable[[bytes], object], audio: bytes, what: str):  # type: ignore[no-untyped-def]
    """``function(audio)`` in a worker thread; None when it fails: a broken model or speech to
    text must not end (or hold) turns, silence still does."""
    try:
        return await asyncio.to_thread(function, audio)
    except Exception:  # noqa: BLE001
        log.exception("%s failed; the pause decides", what)
        return None


@dataclass
class EndOfTurn:
    """Decides at each pause of ``pause_ms``; ends the turn when the customer has finished.

    The words of the turn up to the pause come from the early transcript the robot makes at
    the ``Paused`` event (handed in with ``heard``) or, in a bench, from ``transcribe``
    (blocking: returns the text and the seconds it took; the text counts as known that
    long after the pause's tail was heard, as the robot's would). With ``wait_for_words``
    a turn the model calls complete ends only once the words agree (or at the hangover):
    the customer then waits for speech to text, but an unfinished "to the" is never cut."""

    model: TurnCompletion | None
    pause_ms: int = 500  # vad.pause_ms
    threshold: float = 0.5
    transcribe: Callable[[bytes], Transcript] | None = None
    wait_for_words: bool = False
    words_ms: int | None = None  # from this pause on, words that look finished end the turn alone
    _asked: int | None = field(default=None, init=False)  # the pause last asked about (its last voiced frame)
    _waiting: bool = field(default=False, init=False)  # the model said complete; the words are awaited
    _words_done: bool = field(default=False, init=False)  # the words alone were judged at words_ms
    words: PauseWords = field(default_factory=PauseWords)
    last_probability: float | None = field(default=None, init=False)
    last_text: str | None = field(default=None, init=False)

    def due(self, endpointer: Endpointer) -> bool:
        """A pause long enough that this turn has not been asked about yet, or whose words
        came in since. Not in a barge-in turn (held open: an interruption is heard whole)."""
        pause = endpointer.pause
        if pause is None or endpointer.held_open or pause[1] < self.pause_ms:
            return False
        if pause[0] != self._asked:
            return True
        if self._text(endpointer) is None:
            return False
        return self._waiting or self._words_due(pause[1])

    def _by_words(self, text: str | None, silent_ms: float) -> bool | None:
        """What the words at the pause decide whatever the model would say: False (wait) for
        unfinished ones, True (end) for finished-looking ones once the words alone are due;
        None where the model's answer counts (no words yet, none heard, not due, or words that
        stop short of the voice: "formal review" where "of" was said)."""
        if text is None or not text.strip():
            return None
        if unfinished(text):
            return False
        return True if self._words_due(silent_ms) and self.words.whole else None

    def _words_due(self, silent_ms: float) -> bool:
        return self.words_ms is not None and silent_ms >= self.words_ms and not self._words_done

    def heard(self, t: float, text: str, unheard: float = 0.0) -> None:
        """The words of the turn up to the pause whose last word ends at stream time ``t``
        (``Paused.t``): the early transcript, made while the endpointer waits, and the seconds
        of voice after its last word (``unheard_s``)."""
        self.words.heard(t, text, unheard)

    async def finished(self, endpointer: Endpointer) -> bool:
        """Decide about the turn so far: once for this pause, and again when its words come."""
        pause = endpointer.pause
        assert pause is not None
        if pause[0] != self._asked:
            self._asked, self._waiting, self._words_done = pause[0], False, False
            self.last_probability = None
            if self.transcribe is not None:
                await self._transcribe(endpointer)
            if self._by_words(self._text(endpointer), pause[1]) is None:
                # The model runs 40-120 ms with the loop waiting on it: asked only when its
                # answer can change the decision (live, that was most of a finished turn's
                # wait beyond the 500 ms pause)
                self.last_probability = await _ask(self._probability, endpointer.turn_audio(), "end-of-turn model")
        self.last_text = self._text(endpointer)
        verdict = self._by_words(self.last_text, pause[1])
        if self.last_text is not None and self._words_due(pause[1]):
            self._words_done = True  # the words alone are judged once, at the longer pause
        if self.last_text is None and self.wait_for_words:
            # the model alone may not end it: wait for the words if it says complete
            self._waiting = turn_is_finished(self.last_probability, None, self.threshold)
            return False
        self._waiting = False
        if verdict is not None:
            return verdict
        if self.last_text is not None and not self.words.whole:
            # words that stop short of the voice vouch for nothing: the model alone decides
            log.info("the words at a pause stop %.2f s before the voice: the model decides (p=%s)",
                     self.words.unheard, self.last_probability)
            return turn_is_finished(self.last_probability, None, self.threshold)
        return turn_is_finished(self.last_probability, self.last_text, self.threshold)

    async def _transcribe(self, endpointer: Endpointer) -> None:
        assert self.transcribe is not None
        await _transcribe_into(self.words, self.transcribe, endpointer)

    def _text(self, endpointer: Endpointer) -> str | None:
        return self.words.now(endpointer)

    def _probability(self, audio: bytes) -> float | None:
        return None if self.model is None else self.model.probability(audio)


@dataclass
class UnfinishedHold:
    """Words that cannot end a sentence at a pause ("... to go to the", "our budget is about
    two thousand") keep the turn open for ``hold_ms`` of silence instead of the hangover: the
    customer is looking for a word. The silence bound alone ended such a turn after 1 s
    whatever was said (issue 26, set b: a 900 ms pause after "produced the" was a turn, and the
    robot answered half a sentence). The words are the early transcript (``heard``, as for
    ``EndOfTurn``; or in a bench ``transcribe``); until they are known the hangover stands, and
    a new word starts a pause with the usual one."""

    hold_ms: int  # vad.unfinished_hold_ms
    transcribe: Callable[[bytes], Transcript] | None = None
    words: PauseWords = field(default_factory=PauseWords)
    _asked: int | None = field(default=None, init=False)  # the pause last transcribed (a bench)
    _held: int | None = field(default=None, init=False)  # the pause held open

    def heard(self, t: float, text: str, unheard: float = 0.0) -> None:
        self.words.heard(t, text, unheard)

    async def apply(self, endpointer: Endpointer) -> None:
        """Once a frame: hold the current pause open when its words are unfinished."""
        pause = endpointer.pause
        if pause is None or pause[0] == self._held:
            return
        if self.transcribe is not None and pause[0] != self._asked and endpointer.audio_if_ended_now() is not None:
            self._asked = pause[0]
            await _transcribe_into(self.words, self.transcribe, endpointer)
        text = self.words.now(endpointer)
        if text is not None and unfinished(text):
            self._held = pause[0]
            endpointer.hold_pause(self.hold_ms)
            log.info("unfinished words at a pause (%d words): the turn waits %d ms of silence",
                     len(text.split()), self.hold_ms)  # no words in a log: they may be a visitor's


async def _transcribe_into(words: PauseWords, transcribe: Callable[[bytes], Transcript],
                           endpointer: Endpointer) -> None:
    """A bench's words at the pause: known as late as the robot's (its speech to text starts
    once the pause's tail is heard, ``Paused``)."""
    audio = endpointer.audio_if_ended_now()
    said = None if audio is None else await _ask(transcribe, audio, "speech to text at the pause")
    if said is not None:
        assert audio is not None
        words.transcribed(endpointer, said.text, said.stt_s, unheard_s(audio, endpointer.tail_s, said.words_end_s))


def _pause_t(endpointer: Endpointer) -> float:
    """Stream seconds of the end of the current pause's last word (``Paused.t``)."""
    pause = endpointer.pause
    assert pause is not None
    return (pause[0] + 1) * endpointer.settings.frame_ms / 1000
