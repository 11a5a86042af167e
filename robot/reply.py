"""An LLM reply as a stream of sentences to speak: text deltas -> ``Sentence`` objects.

The first sentence is spoken while the LLM writes on. Sentence boundaries come from pysbd,
which knows abbreviations and numbers ("Mr. Tanaka", "St. Paul's", "J.R. Pass", "3.5
hours" stay whole). Whatever goes wrong with the LLM, the reply yields at least one
sentence: the persona's apology when nothing usable came back.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Mapping, Protocol, Sequence

import pysbd

from memory.base import Message
from robot.gesture_planner import PlannedGesture
from robot.gestures import extract_gestures
from robot.llm.client import LLMError
from robot.redact import redact
from robot.reply_length import clause_cut, spoken_seconds
from robot.reply_timing import ReplyDeadlines, timed

log = logging.getLogger(__name__)

_SOFT_LIMIT = 220  # a run-on "sentence" longer than this is cut at a comma or a space
_TERMINALS = ".!?…"


@dataclass(frozen=True)
class Sentence:
    """One sentence to speak, with the gestures to perform: the LLM's tags as it starts,
    the planner's (robot/gesture_planner.py) as their word is said."""

    text: str
    gestures: tuple[str, ...] = ()  # the LLM's [gesture:NAME] tags
    planned: tuple[PlannedGesture, ...] = ()  # the persona's gesture_rules chose these (no tag here)
    ready_at: float = field(default=0.0, compare=False)  # monotonic time it was complete


class ReplyLLM(Protocol):
    def stream(self, messages: list[Message]) -> AsyncIterator[str]: ...


@dataclass(frozen=True)
class ReplyRules:
    """What a persona allows a reply: its gestures, its length, what to say on failure."""

    gestures: Mapping[str, str]
    max_sentences: int
    apology: str
    filler: str | None = None  # said when the LLM is slow to start (ReplyDeadlines.filler_after_s)
    # Spoken-length budget of the answer and the offer (a filler before it is not counted): the
    # first sentence that would pass it is held back (``Reply.held``), the LLM request closed,
    # and the offer said; a first sentence too long alone is cut after a clause that fits.
    max_reply_s: float = math.inf
    words_per_minute: int = 150  # the TTS rate, to estimate how long a sentence takes to say
    more_offer: str | None = None  # "Shall I tell you more?"


class SentenceSplitter:
    """``feed`` text deltas, get back the sentences completed so far; ``flush`` the rest."""

    def __init__(self, language: str = "en") -> None:
        self._segmenter = pysbd.Segmenter(language=language, clean=False, char_span=True)
        self._buffer = ""

    def feed(self, delta: str) -> list[str]:
        self._buffer += delta
        if not any(c in self._buffer for c in _TERMINALS):
            return self._soft_cut()
        spans = self._segmenter.segment(self._buffer)
        if len(spans) < 2:
            return self._soft_cut()
        # The last span may still grow ("Mr." before "Tanaka"); everything before it is done.
        done = [s.sent.strip() for s in spans[:-1] if s.sent.strip()]
        self._buffer = self._buffer[spans[-1].start:]
        return done

    def flush(self) -> list[str]:
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []

    def _soft_cut(self) -> list[str]:
        if len(self._buffer) <= _SOFT_LIMIT:
            return []
        comma = self._buffer.rfind(", ", 0, _SOFT_LIMIT)
        space = self._buffer.rfind(" ", 0, _SOFT_LIMIT)
        cut = comma + 2 if comma > 0 else space + 1
        if cut <= 0:
            return []
        head, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:]
        return [head] if head else []


def split_text(text: str, vocabulary: Mapping[str, str], language: str = "en") -> list[Sentence]:
    """A whole text (a greeting, an operator's ``say``) as sentences."""
    splitter = SentenceSplitter(language)
    raw = splitter.feed(text) + splitter.flush()
    return [s for s in (to_sentence(r, vocabulary) for r in raw) if s.text or s.gestures]


def to_sentence(raw: str, vocabulary: Mapping[str, str]) -> Sentence:
    text, gestures = extract_gestures(raw, vocabulary)
    # A known secret (the API key a server repeats in its reply) is never said, published or
    # remembered: every sentence spoken, the LLM's and the fixed texts, is made here.
    return Sentence(text=redact(text, shapes=False), gestures=gestures, ready_at=time.monotonic())


class Reply:
    """One reply being generated. Iterate ``sentences()`` once; afterwards
    ``first_token_at`` and ``errors`` say how it went, and ``held`` what was cut at the
    sentence cap or the spoken-length budget (``ReplyRules.max_reply_s``; unsaid: a
    continuation's ``prefix``). ``deadlines`` are of time: how long the customer
    waits for a sentence (``robot.reply_timing``). Leaving the iteration early (the cap, the
    spoken-length budget, a stop) closes the LLM request at once."""

    def __init__(self, llm: ReplyLLM, messages: list[Message], rules: ReplyRules,
                 on_error: Callable[[str], None] | None = None, deadlines: ReplyDeadlines = ReplyDeadlines(),
                 prefix: Sequence[str] = (), opening: Sequence[str] = ()) -> None:
        self._llm, self._messages, self._rules = llm, messages, rules
        self._prefix = tuple(prefix)  # raw sentences said before the LLM's (what a cut reply held)
        # Said first and whole, whatever the spoken-length budget (a recap the customer asked
        # for); the LLM's sentences after it get what is left of the budget.
        self._opening = tuple(opening)
        self.held: list[str] = []
        self.filler: str | None = None  # the filler, when one was said: spoken, not remembered
        self._deadlines = deadlines
        self._on_error = on_error
        self.first_token_at: float | None = None
        self.errors: list[str] = []

    async def sentences(self) -> AsyncIterator[Sentence]:
        rules = self._rules
        # the answer's share of the spoken-length budget: the offer that may end it is said too
        room = rules.max_reply_s - spoken_seconds(rules.more_offer or "", rules.words_per_minute)
        said, spoken_s = 0, 0.0
        seen: set[str] = set()
        for raw in self._opening:
            sentence = to_sentence(raw, rules.gestures)
            yield sentence
            said += bool(sentence.text)
            spoken_s += spoken_seconds(sentence.text, rules.words_per_minute)
            seen.add(sentence.text.lower())
        try:
            # After an opening the robot is already talking: a filler would only break in.
            filler = None if self._opening else rules.filler
            timed_sentences = timed(self._raw_sentences(), self._deadlines, filler)
            async with contextlib.aclosing(timed_sentences) as raw_sentences:
                async for raw, is_filler in raw_sentences:
                    sentence = to_sentence(raw, rules.gestures)
                    if is_filler:  # not the answer: neither counted nor remembered as seen
                        self.filler = sentence.text
                        yield sentence
                        continue
                    key = sentence.text.lower()
                    if key in seen or not (sentence.text or sentence.gestures):
                        continue  # a looping model: the same sentence is never said twice
                    seen.add(key)
                    length = spoken_seconds(sentence.text, rules.words_per_minute)
                    if said and (said >= rules.max_sentences or spoken_s + length > room):
                        self.held.append(raw)  # the next sentence, whole: where a "yes" picks up
                        break
                    cut = None if said or length <= room else clause_cut(raw, room, rules.words_per_minute)
                    if cut is not None:
                        self.held.append(cut[1])
                        yield to_sentence(cut[0], rules.gestures)
                        said += 1
                        break
                    yield sentence
                    said += bool(sentence.text)
                    spoken_s += length
        except Exception as exc:  # noqa: BLE001 - any failure ends in the apology, never silence
            self._failed(exc)
        if not said:
            yield to_sentence(rules.apology, rules.gestures)
        elif self.held and rules.more_offer:
            yield to_sentence(rules.more_offer, rules.gestures)

    async def _raw_sentences(self) -> AsyncIterator[str]:
        for raw in self._prefix:
            yield raw
        splitter = SentenceSplitter()
        async with contextlib.aclosing(self._llm.stream(self._messages)) as deltas:
            async for delta in deltas:
                if self.first_token_at is None:
                    self.first_token_at = time.monotonic()
                for raw in splitter.feed(delta):
                    yield raw
        for raw in splitter.flush():
            yield raw

    def _failed(self, exc: Exception) -> None:
        reason = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
        self.errors.append(f"llm: {reason}")
        log.warning("reply failed: %s", reason)
        if self._on_error is not None:
            self._on_error(reason)
