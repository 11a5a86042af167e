"""`choice` and `need` slots: one or many of the persona's names or phrases, said back as the
persona writes them ("kyoto" -> "Kyoto", "can't walk far" -> "limited walking")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from memory.recall.slots.said import Found, Said
from memory.core.words import words_alternation


@dataclass(frozen=True)
class TermReader:
    """Finds the terms in the customer's words, longest phrase first; a term right after a
    negation or "instead of" is dropped ("not Nara", "we don't need a wheelchair")."""

    pattern: re.Pattern[str] | None
    said_back: tuple[str, ...]  # group index -> the term as the persona says it

    @classmethod
    def of(cls, terms: Mapping[str, tuple[str, ...]]) -> "TermReader":
        phrases = [(phrase, value) for value, aliases in terms.items() for phrase in (value, *aliases)]
        phrases.sort(key=lambda pv: len(pv[0].rstrip("*")), reverse=True)
        groups, said_back = [], []
        for phrase, value in phrases:
            alternation = words_alternation([phrase])
            if alternation:
                groups.append(f"(?P<t{len(groups)}>{alternation})")
                said_back.append(value)
        pattern = re.compile("|".join(groups), re.IGNORECASE) if groups else None
        return cls(pattern, tuple(said_back))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        if self.pattern is None:
            return []
        found = []
        for match in self.pattern.finditer(said.text):
            value = self.said_back[int(match.lastgroup[1:])]  # type: ignore[index]
            found.append(Found(match.start(), value, dropped=said.negated(said.text, match.start())))
        return found

    @property
    def words(self) -> set[str]:
        return {w.lower() for value in self.said_back for w in value.split()}
