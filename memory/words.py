"""Word lists as regular expressions, one way for every list a persona writes (fact words,
gesture words, profile vocabulary): whole words or phrases in any case, the spaces of a
phrase matching any run of spaces, a trailing ``*`` matching any ending (``allerg*``).
Month and weekday names match only capitalized: "May" is a date, "may" is not."""

from __future__ import annotations

import re
from typing import Iterable

# Proper nouns that are also common words ("I may come", "we march"): matched only capitalized.
CALENDAR = frozenset("""january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday""".split())


def words_alternation(words: Iterable[str]) -> str | None:
    """``\\b(?:w1|w2|...)\\b`` for ``words`` (longest first, so a phrase wins over its first
    word), to compile with ``re.IGNORECASE``; None when there are none."""
    alternatives = [_alternative(w.strip()) for w in sorted(words, key=len, reverse=True) if w.strip().rstrip("*")]
    return rf"\b(?:{'|'.join(alternatives)})\b" if alternatives else None


def words_pattern(words: Iterable[str]) -> re.Pattern[str] | None:
    alternation = words_alternation(words)
    return None if alternation is None else re.compile(alternation, re.IGNORECASE)


def _alternative(word: str) -> str:
    if word.lower() in CALENDAR:
        return f"(?-i:{re.escape(word.capitalize())}|{re.escape(word.upper())})"
    stem = r"\s+".join(re.escape(part) for part in word.rstrip("*").split())
    return stem + (r"\w*" if word.endswith("*") else "")
