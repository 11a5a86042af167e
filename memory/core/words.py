"""Word lists as regular expressions, one way for every list a persona writes (fact words,
gesture words, profile vocabulary): whole words or phrases in any case, the spaces of a
phrase matching any run of spaces, a trailing ``*`` matching any ending (``allerg*``).
Month and weekday names match only capitalized: "May" is a date, "may" is not.

And ``share_of_words_in``: how much of one text's words another has (is a transcript the
robot's own echo; is a value the customer's own words)."""

from __future__ import annotations

import re
from typing import Iterable

_TOKEN = re.compile(r"[a-z0-9'$€£¥]+")
# Words every sentence has: sharing them says nothing about where a text came from.
COMMON_WORDS = frozenset("a an the is are was to of and or in on at it its this that by for with from as be "
                         "i me my you your we our he she they".split())

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
    # a hyphen and a space are one ("step-free", "step free", "stepfree": speech-to-text writes any)
    stem = r"[\s-]+".join(re.escape(part).replace(r"\-", r"[-\s]?") for part in word.rstrip("*").split())
    return stem + (r"\w*" if word.endswith("*") else "")


def share_of_words_in(text: str, within: str, common: frozenset[str] = COMMON_WORDS) -> float | None:
    """The share of ``text``'s words, ``common`` ones aside, that ``within`` has too (any
    case; numbers and currency signs are words); None when ``text`` has no other words."""
    words = [w for w in _TOKEN.findall(text.lower()) if w not in common]
    if not words:
        return None
    found = set(_TOKEN.findall(within.lower()))
    return sum(w in found for w in words) / len(words)
