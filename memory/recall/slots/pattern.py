"""`pattern` slots: the persona's own regular expressions, the escape hatch for what no type
reads. Exactly the profile's behaviour before slot types: case-insensitive, the group named
``value`` (or the whole match) is the value, a match right after "not" is skipped.

A persona's pattern may backtrack catastrophically (``(a+)+$``: 34 a's took over 300 s with
``re``, issue 50 item 11). They run on the ``regex`` module, ``re``'s syntax with a timeout:
a search past MATCH_TIMEOUT_S gives up (that pattern reads nothing from that utterance, a
warning says which), and only the first MAX_TEXT_CHARS of an utterance are read. The persona
check refuses a pattern that times out on probes of its own letters (config/patterns.py).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Iterable

import regex

from memory.recall.slots.said import Found, Said
from memory.core.words import words_pattern

log = logging.getLogger(__name__)

_NEGATED = re.compile(r"\b(?:not|no|never|isn't|aren't|wasn't)\s*$", re.IGNORECASE)
MAX_VALUE_CHARS = 60
MATCH_TIMEOUT_S = 0.05  # a sane pattern reads an utterance in microseconds
MAX_TEXT_CHARS = 2000  # a long typed message: its start is what a slot is read from


def compile_pattern(pattern: str) -> "regex.Pattern[str]":
    """A persona's pattern as it is run: case-insensitive, ``re``'s syntax (regex.V0; the
    persona check compiles it the same way)."""
    return regex.compile(pattern, regex.IGNORECASE | regex.V0)


def clean_value(value: str) -> str:
    value = " ".join(value.split()).strip(" ,.;:!?")
    return value[:MAX_VALUE_CHARS]


@dataclass(frozen=True)
class PatternReader:
    patterns: tuple["regex.Pattern[str] | re.Pattern[str]", ...]

    @classmethod
    def of(cls, patterns: Iterable[str], names: Iterable[str] = ()) -> "PatternReader":
        compiled: list[regex.Pattern[str] | re.Pattern[str]] = [compile_pattern(p) for p in patterns]
        if (vocabulary := words_pattern(names)) is not None:
            compiled.append(vocabulary)  # names escaped by us: plain re is safe
        return cls(tuple(compiled))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.text[:MAX_TEXT_CHARS]
        found: list[Found] = []
        for pattern in self.patterns:
            try:
                found += self._read_one(pattern, text)
            except TimeoutError:
                log.warning("profile pattern %r gave up after %g s on a visitor's words (%d characters); it "
                            "reads nothing from them: rewrite it without nested repetition",
                            pattern.pattern, MATCH_TIMEOUT_S, len(text))
        return found

    @staticmethod
    def _read_one(pattern: "regex.Pattern[str] | re.Pattern[str]", text: str) -> list[Found]:
        found = []
        matches = (pattern.finditer(text, timeout=MATCH_TIMEOUT_S) if isinstance(pattern, regex.Pattern)
                   else pattern.finditer(text))
        for match in matches:
            if _NEGATED.search(text[: match.start()]):
                continue  # "not April": the person corrects away from it
            value = clean_value(match.groupdict().get("value") or match.group(0))
            if value:
                found.append(Found(match.start(), value))
        return found
