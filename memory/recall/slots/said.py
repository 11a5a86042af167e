"""One customer utterance, prepared once for every slot: its words, its number words as
digits (text2num: "two thousand dollars" -> "2000 dollars"), its clauses, and the checks
slots share: is a value negated ("not April"), is a cue word near it ("budget")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property, lru_cache
from typing import Iterable

from text_to_num import alpha2digit

from memory.recall.slots.language import Language
from memory.core.words import words_alternation

_WORD = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*", re.UNICODE)
_LITTLE_ONES = re.compile(r"\b(little|young|small|wee|tiny)\s+ones\b", re.IGNORECASE)
_ONES = re.compile(r"\bones\b", re.IGNORECASE)
NEGATION_REACH = 3  # a negation this many words before a value (in its clause) corrects away from it


@dataclass(frozen=True)
class Found:
    """A value a slot read: where it was said (to keep the order said), the value as the
    persona says it back, and whether the customer corrected away from it ("not Nara")."""

    at: int
    value: str
    dropped: bool = False
    adds: bool = False  # said on top of the value held ("my sister is coming too"): ``SlotReader.add``


@dataclass
class Said:
    text: str
    language: Language
    today: date
    _spans: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, text: str, language: Language, today: date | None = None) -> "Said":
        return cls(" ".join(text.split()), language, today or date.today())

    @cached_property
    def digits(self) -> str:
        """The utterance with its number words as digits (every number, "one" too)."""
        text = self.text
        if self.language.code == "en":
            # "ones" is a pronoun, never the number 1 ("two little ones", "the ones by the station")
            text = _LITTLE_ONES.sub(lambda m: f"{m.group(1)} children", text)
            text = _ONES.sub("\x00nes", text)
        try:
            text = alpha2digit(text, self.language.code, threshold=0)
        except Exception:  # noqa: BLE001 - a library hiccup costs the numbers in words, nothing else
            pass
        return text.replace("\x00nes", "ones")

    @cached_property
    def lower(self) -> str:
        return self.text.lower()

    @cached_property
    def digits_lower(self) -> str:
        return self.digits.lower()

    def clause(self, text: str, at: int) -> tuple[int, int]:
        """The clause of ``text`` (``self.text`` or ``self.digits``) around ``at``."""
        return _around(self._ends("clause", text), at, len(text))

    def sentence(self, text: str, at: int) -> tuple[int, int]:
        return _around(self._ends("sentence", text), at, len(text))

    def _ends(self, kind: str, text: str) -> tuple[int, ...]:
        # Kept with this utterance only: nothing a visitor said outlives it in a module cache.
        key = f"{kind}:{text}"
        if key not in self._spans:
            pattern = (_clause_pattern if kind == "clause" else _sentence_pattern)(self.language.code)
            self._spans[key] = tuple(m.start() for m in pattern.finditer(text))
        return self._spans[key]

    def words_before(self, text: str, at: int, n: int, within: str = "clause") -> list[str]:
        start = (self.clause if within == "clause" else self.sentence)(text, at)[0]
        return [w.lower() for w in _WORD.findall(text[start:at])][-n:] if n else []

    def negated(self, text: str, at: int) -> bool:
        """A value at ``at`` right after a negation in its clause ("not April", "we can't go in
        March") or an "instead of" ("Kyoto instead of Osaka"): the customer corrects away."""
        before = self.words_before(text, at, NEGATION_REACH + 1)
        lang = self.language
        tail = " ".join(before)
        if _ends_with_phrase(tail, lang.away):
            return True
        for i, word in enumerate(before[-NEGATION_REACH:]):
            if word in lang.negations or word.endswith("n't") or word.endswith("n’t"):
                # "no more than $2,000", "not go over 250,000 yen", "shouldn't spend more than": a limit
                after = before[-NEGATION_REACH:][i + 1:i + 3]
                if not after or not set(after) & set(lang.not_negations):
                    return True
        return False


def _ends_with_phrase(tail: str, phrases: Iterable[str]) -> bool:
    """Does one of ``phrases`` stand in the last words of ``tail`` (up to one word after it)?"""
    words = tail.split()
    for phrase in phrases:
        n = len(phrase.split())
        for cut in (0, 1):
            end = len(words) - cut
            if end - n >= 0 and " ".join(words[end - n:end]) == phrase:
                return True
    return False


@lru_cache(maxsize=8)
def _clause_pattern(code: str) -> re.Pattern[str]:
    conjunction = r"\s(?:but|aber|though|however|jedoch|sondern)\s"
    ordinal_dot = r"(?<!\b\d)(?<!\b\d\d)" if code == "de" else ""  # German "3. Mai" is a date, not an end
    return re.compile(rf"{ordinal_dot}[.?!;:](?!\d)|,(?!\d)|\s[-–—]\s|{conjunction}", re.IGNORECASE)


@lru_cache(maxsize=8)
def _sentence_pattern(code: str) -> re.Pattern[str]:
    ordinal_dot = r"(?<!\b\d)(?<!\b\d\d)" if code == "de" else ""
    return re.compile(rf"{ordinal_dot}[.?!;](?!\d)")


def _around(ends: tuple[int, ...], at: int, length: int) -> tuple[int, int]:
    start, end = 0, length
    for e in ends:
        if e < at:
            start = e + 1
        else:
            end = e
            break
    return start, end


@dataclass(frozen=True)
class Cues:
    """A slot's cue words: its value counts only with one of them near ("budget", "spend"):
    before it in its clause, or after it in its clause or the next ("$5,000, tops")."""

    pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, words: Iterable[str] | None) -> "Cues":
        alternation = words_alternation(list(words or ()))
        return cls(re.compile(alternation, re.IGNORECASE) if alternation else None)

    def __bool__(self) -> bool:
        return self.pattern is not None

    def near(self, said: Said, text: str, start: int, end: int) -> bool:
        if self.pattern is None:
            return True
        c_start, c_end = said.clause(text, start)
        if self.pattern.search(text, c_start, start):
            return True
        after_end = said.clause(text, c_end + 1)[1] if c_end < len(text) and text[c_end] == "," else c_end
        return bool(self.pattern.search(text, end, max(after_end, end)))


def bare_answer(said: Said, text: str, start: int, end: int, extra: Iterable[str] = ()) -> bool:
    """Is the utterance this value and nothing else but fillers ("About two grand.", "April,
    I think"): the answer to the robot's question. A question ("$2,000?") is none."""
    if said.text.rstrip().endswith("?"):
        return False
    allowed = set(said.language.fillers) | {w.lower() for w in extra}
    rest = _WORD.findall(text[:start] + " " + text[end:])
    return all(w.lower() in allowed for w in rest)


def after_phrase(text: str, at: int, phrases: Iterable[str]) -> int:
    """The end of one of ``phrases`` said right at ``at`` (spaces skipped), or -1."""
    rest = text[at:].lower()
    stripped = rest.lstrip()
    skipped = len(rest) - len(stripped)
    for phrase in sorted(phrases, key=len, reverse=True):
        if stripped.startswith(phrase) and (len(stripped) == len(phrase) or not stripped[len(phrase)].isalnum()
                                            or not phrase[-1].isalnum()):
            return at + skipped + len(phrase)
    return -1
