"""A profile slot as memory takes it: plain settings (the application converts the persona's
validated YAML into these; memory never reads configuration), and the reader its type makes.

Types: ``money``, ``date``, ``count``, ``party``, ``name``, ``choice``, ``need``, ``duration``,
``ages``, ``pattern`` (the regular expressions of before, the escape hatch). A slot without ``type`` and with
``patterns`` is a ``pattern`` slot, so persona files written before the types still load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol

from memory.recall.slots.ages import AgesReader
from memory.recall.slots.dates import DateReader
from memory.recall.slots.duration import DurationReader
from memory.recall.slots.language import EN, Language, language_of
from memory.recall.slots.money import MoneyReader
from memory.recall.slots.names import NameReader
from memory.recall.slots.party import CountReader, PartyReader
from memory.recall.slots.pattern import PatternReader
from memory.recall.slots.said import Cues, Found, Said
from memory.recall.slots.terms import TermReader

SLOT_TYPES = ("money", "date", "count", "party", "name", "choice", "need", "pattern", "duration", "ages")
# Types that read numbers, dates or people need the language's word lists (language.py).
LANGUAGE_TYPES = ("money", "date", "count", "party", "name", "duration", "ages")

Terms = Mapping[str, tuple[str, ...]]  # the value said back -> other ways to say it


class SlotReader(Protocol):
    def read(self, said: Said, filled: bool = False) -> list[Found]:
        """The slot's values in one utterance, in the order said (``filled``: the slot holds a
        value already, so a correction word alone may cue a new one)."""
        ...


def terms_of(value: Iterable[str] | Mapping[str, Iterable[str] | None] | None) -> dict[str, tuple[str, ...]]:
    """A list of names (``[Kyoto, Nara]``) or names with their other wordings
    (``{Kyoto: [Kioto]}``) as one mapping."""
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): tuple(str(a) for a in (v or ())) for k, v in value.items()}
    return {str(v): () for v in value}


@dataclass(frozen=True)
class SlotSpec:
    """One slot of the visitor profile, as memory takes it (field names are the persona
    YAML's keys under ``memory.profile.<name>``)."""

    name: str
    type: str = "pattern"
    label: str | None = None
    many: bool = False
    cues: tuple[str, ...] | None = None  # the value counts only with one of them near; None: the type's rule
    choices: Terms = field(default_factory=dict)  # choice: the names to choose from
    vocabulary: bool = False  # choice (and pattern): also the persona's vocabulary names
    knowledge: bool = False  # choice: also the names of the shop's knowledge
    words: Terms = field(default_factory=dict)  # need: the words and phrases
    periods: Terms = field(default_factory=dict)  # date: the persona's named periods
    currency: str | None = None  # money: said when the customer names none
    units: tuple[str, ...] = ()  # count: what is counted ("night", "nights")
    patterns: tuple[str, ...] = ()  # pattern
    ask: str | None = None  # the robot's question while the slot is empty (asked after a noted line)

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any]) -> "SlotSpec":
        kind = spec.get("type") or "pattern"
        if kind not in SLOT_TYPES:
            raise ValueError(f"profile slot {name!r}: unknown type {kind!r} (one of {', '.join(SLOT_TYPES)})")
        cues = spec.get("cues")
        return cls(name=name, type=kind, label=spec.get("label"), many=bool(spec.get("many", False)),
                   cues=None if cues is None else tuple(cues), choices=terms_of(spec.get("choices")),
                   vocabulary=bool(spec.get("vocabulary", False)), knowledge=bool(spec.get("knowledge", False)),
                   words=terms_of(spec.get("words")),
                   periods=terms_of(spec.get("periods")), currency=spec.get("currency"),
                   units=tuple(spec.get("units") or ()), patterns=tuple(spec.get("patterns") or ()),
                   ask=spec.get("ask") or None)

    @property
    def shown_label(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()


def reader_for(spec: SlotSpec, language: Language, vocabulary: Iterable[str] = (),
               knowledge_names: Iterable[str] = (), not_names: Iterable[str] = ()) -> SlotReader:
    """The reader of ``spec``'s type. ``knowledge_names``: the names of the shop's knowledge
    entries, for ``choice`` slots that take them (the seam for a persona's knowledge files)."""
    if spec.type == "pattern":
        return PatternReader.of(spec.patterns, vocabulary if spec.vocabulary else ())
    if spec.type in ("choice", "need"):
        terms = TermReader.of(choices_of(spec, vocabulary, knowledge_names) if spec.type == "choice" else spec.words)
        return _Cued(terms, Cues.of(spec.cues)) if spec.cues else terms
    if spec.type == "money":
        return MoneyReader.of(language, spec.cues, spec.currency)
    if spec.type == "date":
        return _Cued(DateReader.of(language, spec.periods), Cues.of(spec.cues)) if spec.cues else DateReader.of(language, spec.periods)
    if spec.type == "party":
        return _Cued(PartyReader.of(language), Cues.of(spec.cues)) if spec.cues else PartyReader.of(language)
    if spec.type == "count":
        return CountReader(spec.units, Cues.of(spec.cues))
    if spec.type == "duration":
        return DurationReader.of(language.code)
    if spec.type == "ages":
        return AgesReader.of(language.code)
    return NameReader.of(language, not_names)


def choices_of(spec: SlotSpec, vocabulary: Iterable[str] = (), knowledge_names: Iterable[str] = ()) -> dict[str, tuple[str, ...]]:
    """A choice slot's names: its own list, the persona's vocabulary (``vocabulary: true``),
    and the names of the shop's knowledge (``knowledge: true``)."""
    names = dict(spec.choices)
    for name in (*(vocabulary if spec.vocabulary else ()), *(knowledge_names if spec.knowledge else ())):
        names.setdefault(name, ())
    return names


def language_for(code: str, types: Iterable[str]) -> Language:
    """The word lists of ``code``; a language without them serves only name-free types
    (choice, need, pattern), whose negation words are then the English ones."""
    found = language_of(code)
    if found is None:
        needing = sorted(set(types) & set(LANGUAGE_TYPES))
        if needing:
            raise ValueError(f"profile slot types {', '.join(needing)} have no word lists for language {code!r} "
                             f"(languages: en, de); use type: pattern there")
        return EN
    return found


@dataclass(frozen=True)
class _Cued:
    """A type that needs no cue by default, given cue words by the persona."""

    reader: SlotReader
    cues: Cues

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        return [f for f in self.reader.read(said, filled) if self.cues.near(said, said.digits, f.at, f.at + 1)]

    def __getattr__(self, name: str):  # the reader's own extras (``add``: a party said on top)
        if name == "reader":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.reader, name)
