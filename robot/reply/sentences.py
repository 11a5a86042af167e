"""Where a reply's text is cut into sentences to speak: pysbd boundaries over the LLM's
deltas, and each sentence's gesture tags taken out.

pysbd knows abbreviations and numbers ("Mr. Tanaka", "St. Paul's", "J.R. Pass", "3.5 hours"
stay whole); a run-on "sentence" longer than ``_SOFT_LIMIT`` is cut at a comma or a space so
the first audio never waits for a model that forgets full stops.

With ``first_clause`` the reply's first clause ("Of course,", "In April, ...") is handed out as
soon as its mark and the next word's space are written, before its sentence ends: the robot
starts speaking while the LLM writes the rest (tts.first_chunk). Only the first: after it the
rest comes in whole sentences, and the first clause's audio covers their writing. espeak-ng
leaves about 0.18 s of silence after a clause said alone, about the pause it makes at a comma
within a sentence, so the cut is not heard as one.
"""

from __future__ import annotations

import time
from typing import Mapping

import pysbd

from robot.gestures.sentence import Sentence
from robot.core.redact import redact
from robot.gestures.tags import extract_gestures
from robot.speaking.length import CLAUSE_END

_SOFT_LIMIT = 220  # a run-on "sentence" longer than this is cut at a comma or a space
_TERMINALS = ".!?…"


class SentenceSplitter:
    """``feed`` text deltas, get back the sentences completed so far; ``flush`` the rest."""

    def __init__(self, language: str = "en", first_clause: bool = False) -> None:
        self._segmenter = pysbd.Segmenter(language=language, clean=False, char_span=True)
        self._buffer = ""
        self._clause_first = first_clause  # until something is handed out: a clause may go first

    def feed(self, delta: str) -> list[str]:
        self._buffer += delta
        if not any(c in self._buffer for c in _TERMINALS):
            return self._early_cut()
        spans = self._segmenter.segment(self._buffer)
        if len(spans) < 2:
            return self._early_cut()
        # The last span may still grow ("Mr." before "Tanaka"); everything before it is done.
        done = [s.sent.strip() for s in spans[:-1] if s.sent.strip()]
        self._buffer = self._buffer[spans[-1].start:]
        self._clause_first = self._clause_first and not done
        return done

    def _early_cut(self) -> list[str]:
        """Text before its sentence's end: the first clause, or a run-on's head."""
        head = self._first_clause() or self._soft_cut()
        self._clause_first = self._clause_first and not head
        return head

    def _first_clause(self) -> list[str]:
        if not self._clause_first:
            return []
        # The space after the mark must be there: "9," may still become "9,800". A mark within
        # a gesture tag ("[gesture: nod]") is none.
        for mark in CLAUSE_END.finditer(self._buffer):
            before = self._buffer[:mark.start()]
            if before.count("[") > before.count("]") or not before.strip():
                continue
            head, self._buffer = self._buffer[:mark.end()].strip(), self._buffer[mark.end():]
            return [head]
        return []

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


def ends_at_clause(raw: str) -> bool:
    """``raw`` stops at a clause's mark (a first clause, a run-on's head): its sentence goes on."""
    text = raw.rstrip()
    return any(mark.end() == len(text) for mark in CLAUSE_END.finditer(text + " "))


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
