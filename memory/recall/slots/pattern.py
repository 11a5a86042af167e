"""`pattern` slots: the persona's own regular expressions, the escape hatch for what no type
reads. Exactly the profile's behaviour before slot types: case-insensitive, the group named
``value`` (or the whole match) is the value, a match right after "not" is skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from memory.recall.slots.said import Found, Said
from memory.core.words import words_pattern

_NEGATED = re.compile(r"\b(?:not|no|never|isn't|aren't|wasn't)\s*$", re.IGNORECASE)
MAX_VALUE_CHARS = 60


def clean_value(value: str) -> str:
    value = " ".join(value.split()).strip(" ,.;:!?")
    return value[:MAX_VALUE_CHARS]


@dataclass(frozen=True)
class PatternReader:
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def of(cls, patterns: Iterable[str], names: Iterable[str] = ()) -> "PatternReader":
        compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
        if (vocabulary := words_pattern(names)) is not None:
            compiled.append(vocabulary)
        return cls(tuple(compiled))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.text
        found = []
        for pattern in self.patterns:
            for match in pattern.finditer(text):
                if _NEGATED.search(text[: match.start()]):
                    continue  # "not April": the person corrects away from it
                value = clean_value(match.groupdict().get("value") or match.group(0))
                if value:
                    found.append(Found(match.start(), value))
        return found
