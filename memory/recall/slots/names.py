"""`name` slots: the customer's name after "my name is", "call me" (any word but a common
one), or after "I'm", "this is" (only a capitalized word that is no nationality, no
common word and none of the persona's other names: "I'm American" is no name)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from memory.recall.slots.language import Language
from memory.recall.slots.said import Found, Said

_NAME_WORD = re.compile(r"\s*([^\W\d_][^\W\d_'’-]*(?:[-'’][^\W\d_]+)?)", re.UNICODE)


@dataclass(frozen=True)
class NameReader:
    sure: re.Pattern[str]
    maybe: re.Pattern[str]
    not_names: frozenset[str]

    @classmethod
    def of(cls, language: Language, not_names: Iterable[str] = ()) -> "NameReader":
        def cue(phrases: Iterable[str]) -> re.Pattern[str]:
            alternation = "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases, key=len, reverse=True))
            return re.compile(rf"(?<![\w'’])(?:{alternation})(?![\w'’])", re.IGNORECASE)
        excluded = {w.lower() for w in (*language.not_names, *language.fillers, *not_names)}
        return cls(cue(language.name_sure), cue(language.name_maybe), frozenset(excluded))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.text
        found = [f for m in self.sure.finditer(text) if (f := self._name_at(said, m.end(), sure=True))]
        found += [f for m in self.maybe.finditer(text) if (f := self._name_at(said, m.end(), sure=False))]
        return sorted(found, key=lambda f: f.at)

    def _name_at(self, said: Said, at: int, sure: bool) -> Found | None:
        text = said.text
        words: list[str] = []
        start = at
        for _ in range(2):  # a first name and a family name at most
            match = _NAME_WORD.match(text, at)
            if match is None:
                break
            word = match.group(1)
            capitalized = word[:1].isupper()
            if word.lower() in self.not_names or (not capitalized and (words or not sure)):
                break
            if not words:
                start = match.start(1)
            words.append(word[:1].upper() + word[1:])
            at = match.end()
        if not words:
            return None
        return Found(start, " ".join(words), dropped=said.negated(text, start))
