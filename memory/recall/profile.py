"""The visitor profile: the few facts a persona needs about the person (name, party, dates,
budget, places, needs), filled from what they say and shown to the reply model when the
customer asks about what was said (``memory/dual_store.py`` notes_for).

Summaries of a small model drop details; a reply model reads short labelled lines far more
reliably than prose. The slots are data of the persona (its YAML), not code: each has
patterns, tried on every customer utterance, whose ``value`` group (or whole match) is the
value. What the person says later wins ("actually three adults"); a match right after "not"
is a correction away from it ("not April, May" keeps May). A slot marked ``many`` collects
values (destinations) instead of replacing them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from memory.core.words import words_pattern

_NEGATED = re.compile(r"\b(?:not|no|never|isn't|aren't|wasn't)\s*$", re.IGNORECASE)
MAX_VALUE_CHARS = 60


@dataclass(frozen=True)
class ProfileSlot:
    name: str
    label: str
    patterns: tuple[re.Pattern[str], ...]
    many: bool = False  # collect values (places) instead of keeping the latest

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any], vocabulary: Iterable[str] = ()) -> "ProfileSlot":
        """From the persona's YAML: ``{label, patterns, many, vocabulary: true}``."""
        patterns = [re.compile(p, re.IGNORECASE) for p in spec.get("patterns", ())]
        if spec.get("vocabulary") and (names := words_pattern(vocabulary)) is not None:
            patterns.append(names)
        return cls(name, spec.get("label") or name.replace("_", " ").capitalize(), tuple(patterns),
                   bool(spec.get("many", False)))

    def values_in(self, text: str) -> list[str]:
        """This slot's values in ``text``, in the order said, without those negated."""
        found: list[tuple[int, str]] = []
        for pattern in self.patterns:
            for match in pattern.finditer(text):
                if _NEGATED.search(text[: match.start()]):
                    continue  # "not April": the person corrects away from it
                value = match.groupdict().get("value") or match.group(0)
                found.append((match.start(), clean_value(value)))
        return [v for _, v in sorted(found) if v]


@dataclass
class Profile:
    """A visitor's slot values (slot name -> list of values; one value unless ``many``)."""

    values: dict[str, list[str]] = field(default_factory=dict)

    def update(self, slots: Iterable[ProfileSlot], text: str) -> set[str]:
        """Fill the slots from one utterance; the names of those that changed."""
        return self.put(slots, {slot.name: slot.values_in(text) for slot in slots})

    def put(self, slots: Iterable[ProfileSlot], said: Mapping[str, list[str]]) -> set[str]:
        """Values said of some slots (slot name -> values, in the order said); the names of
        the slots that changed. A ``many`` slot collects them, another keeps the last."""
        changed = set()
        for slot in slots:
            values = said.get(slot.name)
            if not values:
                continue
            old = self.values.get(slot.name, [])
            if slot.many:
                new = old + [v for v in values if v.lower() not in {o.lower() for o in old}]
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

    def spoken(self, slots: Iterable[ProfileSlot]) -> str:
        """The profile as words to say ("name Ken; travellers two adults; places Kyoto and
        Nara"); "" when nothing is known."""
        parts = []
        for slot in slots:
            values = self.values.get(slot.name)
            if values:
                said = values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"
                parts.append(f"{slot.label[:1].lower()}{slot.label[1:]} {said}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.values.items() if v}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Profile":
        return cls({str(k): [str(x) for x in v] for k, v in (data or {}).items() if v})


def make_slots(specs: Mapping[str, Mapping[str, Any]] | None, vocabulary: Iterable[str] = ()) -> tuple[ProfileSlot, ...]:
    vocabulary = tuple(vocabulary)
    return tuple(ProfileSlot.of(name, spec, vocabulary) for name, spec in (specs or {}).items())


def clean_value(value: str) -> str:
    value = " ".join(value.split()).strip(" ,.;:!?")
    return value[:MAX_VALUE_CHARS]
