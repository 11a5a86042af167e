"""Where a reply's text is cut into sentences to speak: pysbd boundaries over the LLM's
deltas, and each sentence's gesture tags taken out.

pysbd knows abbreviations and numbers ("Mr. Tanaka", "St. Paul's", "J.R. Pass", "3.5 hours"
stay whole); a run-on "sentence" longer than ``_SOFT_LIMIT`` is cut at a comma or a space so
the first audio never waits for a model that forgets full stops.
"""

from __future__ import annotations

import time
from typing import Mapping

import pysbd

from robot.gestures.sentence import Sentence
from robot.core.redact import redact
from robot.gestures.tags import extract_gestures

_SOFT_LIMIT = 220  # a run-on "sentence" longer than this is cut at a comma or a space
_TERMINALS = ".!?…"


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
