"""The visitor profile: the few facts a persona needs about the person (name, party, dates,
budget, places, needs), filled from what they say and shown to the reply model when the
customer asks about what was said (``memory/dual_store.py`` notes_for).

Summaries of a small model drop details; a reply model reads short labelled lines far more
reliably than prose. The slots are data of the persona (its YAML), not code: each has a type
(``memory/recall/slots/``: money, date, count, party, name, choice, need, or pattern, the
regular expressions of before) that decides what a value is and how it is said back ("two
grand" is "$2,000"). What the person says later wins ("actually three adults"); a value
right after "not" is a correction away from it ("not April, May" keeps May), and drops it
from a slot marked ``many``, which collects values (destinations) instead of replacing them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from typing import AbstractSet, Any, Iterable, Mapping

from memory.recall.slots import Found, Said, SlotReader, SlotSpec, language_for, reader_for
from memory.recall.slots.language import Language
from memory.recall.slots.pattern import MAX_VALUE_CHARS, clean_value  # noqa: F401 - the profile's value rules

__all__ = ["MAX_VALUE_CHARS", "OPEN", "PLAN", "Profile", "ProfileNews", "ProfileSlot", "clean_value", "labels_of",
           "make_slots"]

# The consultation kept with the profile (robot/consult/): the visitor's plan and the questions left
# for staff. Their keys are no slot's (a slot name is a YAML key of the persona, never "_..."), so
# the slots never touch them, and they are stored, exported and forgotten as the profile is.
PLAN, OPEN = "_plan", "_open"


@dataclass(frozen=True)
class ProfileSlot:
    name: str
    label: str
    reader: SlotReader
    language: Language
    many: bool = False  # collect values (places) instead of keeping the latest
    type: str = "pattern"
    ask: str | None = None  # the robot's question while the slot is empty (``Profile.to_ask``)

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any], vocabulary: Iterable[str] = (), language: str = "en") -> "ProfileSlot":
        """From the persona's YAML: ``{type, label, many, cues, choices, words, ...}``."""
        return make_slots({name: spec}, vocabulary, language)[0]

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        return self.reader.read(said, filled)

    def values_in(self, text: str, today: date | None = None) -> list[str]:
        """This slot's values in ``text``, in the order said, without those negated."""
        return [f.value for f in self.read(Said.of(text, self.language, today)) if not f.dropped]

    def normalized(self, value: str) -> str:
        """A value from elsewhere (the LLM pass) as this slot says it back: "two grand" ->
        "$2,000" when the type reads it as the whole answer; else as given, cleaned."""
        if self.type not in ("pattern", "name"):
            found = [f for f in self.read(Said.of(value, self.language)) if not f.dropped]
            if found:
                return found[-1].value
        return clean_value(value)


@dataclass(frozen=True)
class ProfileNews:
    """What one utterance would give the visitor profile, before it is recorded: one trial
    update, read by the robot's welcome, its noted line and its next question."""

    noted: str = ""  # the new values as words to say ("travellers 2 adults; when April"); never a name
    name: str = ""  # the visitor's name, when these words give it or a new one
    question: str = ""  # the ask of the first empty slot not asked before in this visit ...
    question_slot: str = ""  # ... and that slot's name


@dataclass
class Profile:
    """A visitor's slot values (slot name -> list of values; one value unless ``many``)."""

    values: dict[str, list[str]] = field(default_factory=dict)

    def update(self, slots: Iterable[ProfileSlot], text: str, today: date | None = None) -> set[str]:
        """Fill the slots from one utterance; the names of those that changed. ``today``:
        what relative dates are resolved against (default: today)."""
        slots = tuple(slots)
        said: dict[str, Said] = {}  # the utterance prepared once per language, for every slot
        found = {slot.name: slot.read(said.setdefault(slot.language.code, Said.of(text, slot.language, today)),
                                      filled=bool(self.values.get(slot.name)))
                 for slot in slots}
        changed = self._drop(slots, {name: [f.value for f in fs if f.dropped] for name, fs in found.items()})
        for slot in slots:  # "my sister is coming too": on top of the value held
            found[slot.name] = [self._added(slot, f) for f in found[slot.name]]
        return changed | self.put(slots, {name: [f.value for f in sorted(fs, key=lambda f: f.at) if not f.dropped]
                                          for name, fs in found.items()})

    def _added(self, slot: ProfileSlot, found: Found) -> Found:
        """A value said on top of the one held, as the whole ("3 adults" for "1 adult" more)."""
        held, add = self.values.get(slot.name), getattr(slot.reader, "add", None)
        if not found.adds or not held or add is None:
            return found
        return Found(found.at, add(held[-1], found.value), found.dropped)

    def _drop(self, slots: Iterable[ProfileSlot], dropped: Mapping[str, list[str]]) -> set[str]:
        """"Not Nara after all": a value corrected away leaves a ``many`` slot."""
        changed = set()
        for slot in slots:
            gone = {v.lower() for v in dropped.get(slot.name, ())}
            old = self.values.get(slot.name, [])
            if slot.many and gone and any(v.lower() in gone for v in old):
                self.values[slot.name] = [v for v in old if v.lower() not in gone]
                changed.add(slot.name)
        return changed

    def put(self, slots: Iterable[ProfileSlot], said: Mapping[str, list[str]]) -> set[str]:
        """Values said of some slots (slot name -> values, in the order said); the names of
        the slots that changed. A ``many`` slot collects them, another keeps the last."""
        changed = set()
        for slot in slots:
            values = said.get(slot.name)
            if not values:
                continue
            old = self.values.get(slot.name, [])
            if slot.many:  # each value once, however often said ("we don't eat meat, we're vegetarians")
                new = old + [v for v in dict.fromkeys(values) if v.lower() not in {o.lower() for o in old}]
            elif slot.type == "party" and old and _same_head_count(values[-1], old[0]):
                new = old  # "for all seven of us" after "seven of us, all adults": who they are stays
            else:
                new = [values[-1]]  # the last thing said about it wins
            if new != old:
                self.values[slot.name] = new
                changed.add(slot.name)
        return changed

    def labelled(self, slots: Iterable[ProfileSlot]) -> list[tuple[str, str]]:
        """(label, values) of each slot that holds something, in the persona's order."""
        return [(slot.label, ", ".join(self.values[slot.name])) for slot in slots if self.values.get(slot.name)]

    def render(self, slots: Iterable[ProfileSlot], heading: str = "What you know about the customer") -> str:
        """Short lines for the top of the prompt; "" when nothing is known."""
        lines = [f"- {label}: {values}" for label, values in self.labelled(slots)]
        return f"{heading}:\n" + "\n".join(lines) if lines else ""

    def spoken(self, slots: Iterable[ProfileSlot], only: AbstractSet[str] | None = None) -> str:
        """The profile as words to say ("name Ken; travellers two adults; places Kyoto and
        Nara"), or only the slots named in ``only``; "" when nothing is known."""
        parts = []
        for slot in slots:
            values = self.values.get(slot.name) if only is None or slot.name in only else None
            if values:
                said = values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"
                parts.append(f"{slot.label[:1].lower()}{slot.label[1:]} {said}")
        return "; ".join(parts)

    def to_ask(self, slots: Iterable[ProfileSlot], asked: AbstractSet[str] = frozenset()) -> ProfileSlot | None:
        """The first slot, in the persona's order, that is empty, has a question and is not
        among ``asked`` (slot names): what the robot asks next."""
        return next((s for s in slots if s.ask and not self.values.get(s.name) and s.name not in asked), None)

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.values.items() if v}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Profile":
        return cls({str(k): [str(x) for x in v] for k, v in (data or {}).items() if v})


def make_slots(specs: Mapping[str, Mapping[str, Any]] | None, vocabulary: Iterable[str] = (), language: str = "en",
               knowledge_names: Iterable[str] = ()) -> tuple[ProfileSlot, ...]:
    """The persona's slots (slot name -> its YAML mapping), read in its ``language``.
    ``knowledge_names``: names of the shop's knowledge entries for ``choice`` slots.

    Made once per persona and shared (the slots and their readers hold no state): the first
    making loads dateparser's language data and compiles patterns (0.25-0.7 s on a two-core
    machine), so the robot makes them at start-up, off the event loop, and every visitor's
    memory gets the same ones."""
    vocabulary, knowledge_names = tuple(vocabulary), tuple(knowledge_names)
    key = (json.dumps(specs or {}, default=repr), vocabulary, language, knowledge_names)
    if (made := _MADE.get(key)) is None:
        made = _MADE[key] = _make_slots(specs or {}, vocabulary, language, knowledge_names)
    return made


_MADE: dict[tuple[Any, ...], tuple[ProfileSlot, ...]] = {}  # a persona's slots, by what they are made of


def _make_slots(specs: Mapping[str, Mapping[str, Any]], vocabulary: tuple[str, ...], language: str,
                knowledge_names: tuple[str, ...]) -> tuple[ProfileSlot, ...]:
    parsed = [SlotSpec.of(name, spec) for name, spec in specs.items()]
    lang = language_for(language, (s.type for s in parsed))
    readers = {s.name: reader_for(s, lang, vocabulary, knowledge_names) for s in parsed if s.type != "name"}
    # A name is none of the persona's other words ("I'm Vegetarian", "This is Kyoto?").
    others = {w for r in readers.values() if hasattr(r, "words") for w in r.words} | {
        w.lower() for v in vocabulary for w in v.split()}
    return tuple(ProfileSlot(s.name, s.shown_label,
                             readers.get(s.name) or reader_for(s, lang, vocabulary, knowledge_names, not_names=others),
                             lang, s.many, s.type, s.ask) for s in parsed)


def labels_of(specs: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[str, str]]:
    """(slot, label) of each of the persona's slots, in its order (``robot memory show``)."""
    return [(name, SlotSpec.of(name, spec).shown_label) for name, spec in (specs or {}).items()]


def _same_head_count(new: str, old: str) -> bool:
    """"7 people" said of a party already known as "7 adults" (or "2 adults, 5 children")."""
    import re

    if not re.fullmatch(r"\d+ (?:people|person|Personen|Person)", new):
        return False
    counts = [int(n) for n in re.findall(r"\d+", old)]
    return bool(counts) and sum(counts) == int(new.split()[0]) and new != old
