"""An LLM reply as a stream of sentences to speak: text deltas -> ``Sentence`` objects.

The first sentence is spoken while the LLM writes on (boundaries: ``robot/reply/sentences.py``).
Whatever goes wrong with the LLM, the reply yields at least one sentence: the persona's
apology when nothing usable came back.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Mapping, Protocol, Sequence

from memory.core.base import Message
from prompts import load_prompt
from robot.gestures.sentence import Sentence
from robot.llm.client import LLMError
from robot.reply.copies import copies, imitates, said_before, speaks_as_visitor, visitor_lines
from robot.reply.sentences import SentenceSplitter, ends_at_clause, to_sentence
from robot.reply.timing import ReplyDeadlines, timed
from robot.speaking.length import clause_cut, spoken_seconds

log = logging.getLogger(__name__)

MAX_SKIPPED = 8  # sentences in a row not said (repeats): the model is looping, its reply ends there


class ReplyLLM(Protocol):
    def stream(self, messages: list[Message]) -> AsyncIterator[str]: ...


async def _clauses_judged_whole(pieces: AsyncIterator[str], whole: Callable[[str], bool]) -> AsyncIterator[str]:
    """The pieces, but a first clause that ``whole`` says must be judged with its sentence (one
    that copies a line said before, or begins as the robot's own: "Noted:") joined to the rest
    of it: alone, the clause would be skipped and the rest said ("when May."), or the clause
    said and a copied rest skipped."""
    held = ""
    async with contextlib.aclosing(pieces) as source:
        async for raw in source:
            raw, held = (f"{held} {raw}" if held else raw), ""
            if ends_at_clause(raw) and whole(raw.lower()):
                held = raw
                continue
            yield raw
    if held:
        yield held


class _NoLLM:
    """The LLM of a reply that is only what the robot says itself (a handover's line)."""

    async def stream(self, messages: list[Message]) -> AsyncIterator[str]:
        return
        yield  # an async generator that yields nothing


NO_LLM: ReplyLLM = _NoLLM()


class Guard(Protocol):
    def unsupported(self, sentence: str) -> tuple[str, ...]:
        """What of ``sentence`` no source holds (robot/reply/grounding.py); empty: it may be said."""
        ...


def regrounded_messages(messages: list[Message], said: Sequence[str]) -> list[Message]:
    """The request made again after a sentence the guard rejected: what was said so far as the
    robot's, and the instruction to keep to the sources (prompts/grounding_retry.txt)."""
    out = list(messages)
    if said:
        out.append({"role": "assistant", "content": " ".join(said)})
    return [*out, {"role": "user", "content": load_prompt("grounding_retry").strip()}]


async def aiter_raw(raws: Sequence[str]) -> AsyncIterator[str]:
    for raw in raws:
        yield raw


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
    # The LLM's first clause is said before its sentence ends (tts.first_chunk "clause"); it is
    # no sentence of ``max_sentences``, and the rest of its sentence is never held back whole.
    first_clause: bool = False
    # How the robot's own fixed lines begin ("Noted:", "Here is our plan so far:"): an LLM
    # sentence that begins so is the model imitating them, and is not said.
    own_heads: tuple[str, ...] = ()
    # The words a visitor says of themselves (the persona language's ``first_person``): an LLM
    # sentence that says a visitor's line again with them is the visitor's voice, not said.
    first_person: tuple[str, ...] = ()
    # The sentences of the persona's own "I cannot help there" lines (its knowledge's no_answer,
    # its apology), lower case: an LLM reply that begins by copying one is said now, and ends
    # there, instead of waiting for the model to finish in the hope of something new.
    stock: tuple[str, ...] = ()


class Reply:
    """One reply being generated. Iterate ``sentences()`` once; afterwards
    ``first_token_at`` and ``errors`` say how it went, and ``held`` what was cut at the
    sentence cap or the spoken-length budget (``ReplyRules.max_reply_s``; unsaid: a
    continuation's ``prefix``). ``deadlines`` are of time: how long the customer
    waits for a sentence (``robot.reply.timing``). Leaving the iteration early (the cap, the
    spoken-length budget, a stop) closes the LLM request at once."""

    def __init__(self, llm: ReplyLLM, messages: list[Message], rules: ReplyRules,
                 on_error: Callable[[str], None] | None = None, deadlines: ReplyDeadlines = ReplyDeadlines(),
                 prefix: Sequence[str] = (), opening: Sequence[str] = (), guard: Guard | None = None,
                 fallback: Sequence[str] = ()) -> None:
        self._llm, self._messages, self._rules = llm, messages, rules
        self._prefix = tuple(prefix)  # raw sentences said before the LLM's (what a cut reply held)
        # The grounding guard (robot/reply/grounding.py): an LLM sentence with a number or a name
        # no source holds is not said; the LLM is asked once more, then ``fallback`` (the best
        # entry's own sentences) is said instead. The prefix and the fallback are the robot's own.
        self._guard = guard
        self._fallback = tuple(fallback)
        self.regrounded = 0  # LLM requests made again because a sentence failed the guard
        self.fell_back = False  # the fallback was said
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
        said, spoken_s = 0, 0.0  # pieces said (sentences and a first clause), and their length
        sentences_said = 0  # whole sentences: what max_sentences counts
        in_sentence = False  # the last piece said was a clause: the rest of its sentence comes next
        earlier = said_before(self._messages)  # a small model copies its earlier lines back
        visitor = visitor_lines(self._messages)  # ... and goes on with the visitor's words
        heads = tuple(h.lower() for h in rules.own_heads)

        def others(text: str) -> bool:  # the robot's own fixed lines, or the visitor's words
            return imitates(text, heads) or speaks_as_visitor(text, visitor, rules.first_person)

        seen = set(earlier)
        skipped = 0
        repeated: str | None = None  # an LLM line skipped as said before: said if nothing else is
        said_raw: list[str] = []
        for raw in self._opening:
            sentence = to_sentence(raw, rules.gestures)
            yield sentence
            said += bool(sentence.text)
            sentences_said += bool(sentence.text)
            spoken_s += spoken_seconds(sentence.text, rules.words_per_minute)
            seen.add(sentence.text.lower())
        source: AsyncIterator[str] | None = self._raw_sentences(first_clause=rules.first_clause and not said)
        attempt = 0  # 0: the LLM; 1: the LLM asked again after a sentence failed the guard; 2: the fallback
        while source is not None:
            rejected, stopped = False, False
            try:
                # After an opening the robot is already talking: a filler would only break in.
                filler = None if self._opening or said else rules.filler
                pieces = _clauses_judged_whole(source, lambda text: copies(text, earlier) or others(text))
                timed_sentences = timed(pieces, self._deadlines, filler)
                async with contextlib.aclosing(timed_sentences) as raw_sentences:
                    async for raw, is_filler in raw_sentences:
                        sentence = to_sentence(raw, rules.gestures)
                        if is_filler:  # not the answer: neither counted nor remembered as seen
                            self.filler = sentence.text
                            yield sentence
                            continue
                        key = sentence.text.lower()
                        own = raw in self._prefix  # the robot's own (a cut reply's rest): never checked
                        copied = not own and (key in seen or copies(key, earlier))
                        if copied and not said and copies(key, rules.stock):
                            # The model answers with the robot's own "I don't have that information"
                            # again: a copy, but of a line that is true to say again. Held for
                            # something new, it was said only once the model had finished (live on
                            # two cores, tenths of a second later), and anything new after it was
                            # the model's invention.
                            log.info("the LLM began with the persona's own line again: said at once, the reply ends")
                            yield sentence
                            said += 1
                            stopped = True
                            break
                        # the robot's bookkeeping imitated, the visitor's words in their voice: never said, not
                        # even for want of another
                        imitation = not own and others(key)
                        if imitation or copied or not (sentence.text or sentence.gestures):
                            skipped += 1  # a looping model: the same sentence is never said twice
                            if imitation:
                                log.info("an LLM sentence was the robot's own line or the visitor's words: not said")
                            else:
                                repeated = repeated or (raw if sentence.text else None)
                            if skipped >= MAX_SKIPPED:
                                break
                            continue
                        skipped = 0
                        if self._guard is not None and attempt < 2 and raw not in self._prefix \
                                and (missing := self._guard.unsupported(sentence.text)):
                            # not the visitor's words: what no source holds (the LLM's own inventions)
                            log.info("grounding guard held a sentence back: %s in no source", ", ".join(missing))
                            rejected = True  # the request is closed here, before a word of it is said
                            break
                        seen.add(key)
                        length = spoken_seconds(sentence.text, rules.words_per_minute)
                        left = room - spoken_s
                        starts_sentence = said and not in_sentence  # not the first, nor a clause's rest
                        if starts_sentence and (sentences_said >= rules.max_sentences or length > left):
                            self.held.append(raw)  # the next sentence, whole: where a "yes" picks up
                            stopped = True
                            break
                        cut = None if starts_sentence or length <= left else \
                            clause_cut(raw, left, rules.words_per_minute)
                        if cut is not None:
                            self.held.append(cut[1])
                            yield to_sentence(cut[0], rules.gestures)
                            said += 1
                            stopped = True
                            break
                        yield sentence
                        said_raw.append(raw)
                        in_sentence = ends_at_clause(raw)
                        said += bool(sentence.text)
                        sentences_said += bool(sentence.text) and not in_sentence
                        spoken_s += length
            except Exception as exc:  # noqa: BLE001 - any failure ends in the apology, never silence
                self._failed(exc)
            source = None if stopped or not rejected else self._next_attempt(attempt, said_raw)
            attempt += 1
        if not said and repeated is not None and not self.errors:
            yield to_sentence(repeated, rules.gestures)  # better said again than an apology
        elif not said:
            yield to_sentence(rules.apology, rules.gestures)
        elif self.held and rules.more_offer:
            yield to_sentence(rules.more_offer, rules.gestures)

    def _next_attempt(self, attempt: int, said_raw: list[str]) -> AsyncIterator[str] | None:
        """After a sentence failed the guard: the LLM asked once more, then the fallback."""
        if attempt == 0:
            self.regrounded += 1
            return self._raw_sentences(regrounded_messages(self._messages, said_raw), prefix=(),
                                       first_clause=self._rules.first_clause and not said_raw)
        if attempt == 1 and self._fallback:
            self.fell_back = True
            return aiter_raw(self._fallback)
        return None

    async def _raw_sentences(self, messages: list[Message] | None = None, prefix: Sequence[str] | None = None,
                             first_clause: bool = False) -> AsyncIterator[str]:
        prefix = self._prefix if prefix is None else prefix
        for raw in prefix:
            yield raw
        # after a prefix the robot is already talking: its clause would win nothing
        splitter = SentenceSplitter(first_clause=first_clause and not prefix)
        async with contextlib.aclosing(self._llm.stream(messages or self._messages)) as deltas:
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
