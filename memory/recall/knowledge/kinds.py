"""What a question asks: is it a question at all, which kind of answer it wants, what it compares.

No punctuation is needed: speech recognition often drops the "?" ("are you open on mondays").
A clause is a question when it starts with an interrogative or an auxiliary verb ("is", "can",
"do"), or is a request for information ("tell me", "I'd like to know", "I wonder"); or it ends
with "?". The kind comes from the asking clause's words (``prompts/answer_kinds.txt``), and a
comparison from its comparatives (``prompts/comparisons.txt``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from prompts import load_word_list


class Kind(str, Enum):
    PRICE = "price"
    DURATION = "duration"
    FREQUENCY = "frequency"
    TIME = "time"
    PLACE = "place"
    WHO = "who"
    HOW = "how"
    WHAT = "what"
    YESNO = "yes/no"
    ANY = "any"  # a request for information with no kind ("tell me about the Nara tour")


@dataclass(frozen=True)
class Comparison:
    kind: Kind  # what is compared: price, duration, time
    lowest: bool  # the lower value wins ("cheaper", "shorter", "earlier")
    word: str  # the comparative as said ("cheaper")


@dataclass(frozen=True)
class Question:
    """A visitor's words as the search reads them."""

    text: str
    asking: str  # the clauses that ask ("" for a statement)
    kind: Kind
    comparison: Comparison | None
    content: tuple[str, ...]  # the asking clauses' words that say what about (stop and kind words out)
    # content words the shop's files lack, with the stems of the files' words that say the same
    # thing another way (WordNet: "loos" -> toilet): ((word, (stem, ...)), ...)
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def is_question(self) -> bool:
        return bool(self.asking)


_ASKING = re.compile(
    r"^\W*(?:(?:so|and|but|ok|okay|well|um|uh|hi|hello|excuse me|sorry|please|also|then|oh|hey)\W+)*"
    r"(?:how|what|what's|whats|when|where|where's|which|who|whom|whose|why|is|are|am|was|were|do|does|did|"
    r"can|could|will|would|should|shall|may|might|must|have|has|any|anything|tell me|i wonder|i'd like to know|"
    r"i would like to know|i want to know|i need to know|do you know|could you tell|can you tell|"
    r"we'd like to know|we want to know|we need to know|is it|is there|are there)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"(?<=[.!?;])\s+|,\s+(?=(?:and\s+|but\s+|so\s+)?(?:how|what|when|where|which|who|is|are|"
                     r"do|does|can|could|will|would|should)\b)", re.IGNORECASE)


def clauses(text: str) -> list[str]:
    """The sentences of ``text``, and a question tagged on after a comma ("my mother uses a
    wheelchair, can she get upstairs?") as a clause of its own."""
    return [c.strip() for c in _CLAUSE.split(" ".join(text.split())) if c and c.strip()]


def asking_clauses(text: str) -> list[str]:
    """The clauses that ask something, in order ([] for a statement)."""
    return [c for c in clauses(text) if c.rstrip().endswith("?") or _ASKING.search(c)]


def is_question(text: str) -> bool:
    return bool(asking_clauses(text))


@lru_cache(maxsize=1)
def _kind_phrases() -> tuple[tuple[Kind, tuple[re.Pattern[str], ...]], ...]:
    out = []
    for line in load_word_list("answer_kinds"):
        name, _, phrases = line.partition(":")
        kind = Kind(name.strip())
        out.append((kind, tuple(re.compile(rf"\b{re.escape(p.strip())}\b", re.IGNORECASE)
                                for p in phrases.split(",") if p.strip())))
    return tuple(out)


@lru_cache(maxsize=1)
def _comparisons() -> tuple[tuple[Kind, bool, re.Pattern[str], str], ...]:
    out = []
    for line in load_word_list("comparisons"):
        head, _, words = line.partition(":")
        kind_name, direction = head.split()
        for word in (w.strip() for w in words.split(",") if w.strip()):
            out.append((Kind(kind_name), direction == "lowest", re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE), word))
    return tuple(sorted(out, key=lambda c: -len(c[3])))


_WH = re.compile(r"\b(?:how|what|what's|whats|when|where|where's|which|who|until when)\b", re.IGNORECASE)
_AUX_FIRST = re.compile(r"(?:is|are|am|was|were|do|does|did|can|could|will|would|should|shall|may|might|must|have|has)\b")


def kind_of(clause: str) -> Kind:
    """The kind of answer ``clause`` asks for; YESNO for a question that starts with a verb and has
    no interrogative ("can I pay by card?", "are you open on mondays": any sentence of the entry may
    answer); ANY for a request without one."""
    head = re.sub(r"^\W*(?:(?:so|and|but|ok|okay|well|um|uh|hi|hello|excuse me|sorry|please|also)\W+)*", "", clause.lower())
    if _AUX_FIRST.match(head) and not _WH.search(head):
        return Kind.YESNO
    found: list[tuple[int, Kind]] = []
    for kind, patterns in _kind_phrases():
        for pattern in patterns:
            if m := pattern.search(clause):
                found.append((m.start(), kind))
                break
    if found:
        # the first interrogative said decides ("when does it start, and how much is it" -> time)
        return min(found, key=lambda f: f[0])[1]
    return Kind.ANY


def comparison_in(text: str) -> Comparison | None:
    for kind, lowest, pattern, word in _comparisons():
        if pattern.search(text):
            return Comparison(kind, lowest, word)
    return None


def kind_words(clause: str) -> set[str]:
    """The words of ``clause`` that only say the kind asked ("how much", "open"): they need no
    entry to hold them, the entry's sentence of that kind answers them."""
    words: set[str] = set()
    for _, patterns in _kind_phrases():
        for pattern in patterns:
            for m in pattern.finditer(clause):
                words |= set(re.findall(r"[a-z']+", m.group(0).lower()))
    for _, _, pattern, _ in _comparisons():
        for m in pattern.finditer(clause):
            words |= set(re.findall(r"[a-z']+", m.group(0).lower()))
    return words


_CONJUNCT = re.compile(r"\s+(?:or|and|versus|vs\.?|compared (?:to|with))\s+", re.IGNORECASE)


def conjuncts(clause: str) -> tuple[str, str] | None:
    """The two things a clause names with "or" / "and" / "versus" ("which is cheaper, the Nara
    tour or the tea tour?" -> "the Nara tour", "the tea tour"), each searched by itself; None
    when it names no two (a clause with no such word, or one side without a word of its own)."""
    parts = _CONJUNCT.split(clause.rstrip(" ?.!"), maxsplit=1)
    if len(parts) != 2:
        return None
    left, right = parts
    # the left thing starts after the question's head ("which is cheaper, ", "how much are ")
    if "," in left:
        left = left.rsplit(",", 1)[1]
    left = left.strip()
    right = right.split(",", 1)[0].strip()
    if not re.search(r"[a-z]{2,}", left.lower()) or not re.search(r"[a-z]{2,}", right.lower()):
        return None
    return left, right
