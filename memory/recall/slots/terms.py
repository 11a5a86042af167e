"""`choice` and `need` slots: one or many of the persona's names or phrases, said back as the
persona writes them ("kyoto" -> "Kyoto", "can't walk far" -> "limited walking")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from memory.recall.slots.said import Found, Said
from memory.core.words import words_alternation


# A term written "~stairs" is a need only said as a difficulty ("a lot of stairs is a problem for
# my dad", "she can't manage steps"): the words of English that say one, in its clause.
_HARDSHIP = re.compile(r"\b(?:can't|cannot|can’t|couldn't|unable|not able|problem|problems|difficult|difficulty|hard|"
                       r"trouble|struggles?|struggling|manage|avoid|no|not|without|too many|bad|issue|issues|"
                       r"tricky|impossible|tough)\b", re.IGNORECASE)
HARDSHIP_MARK = "~"


@dataclass(frozen=True)
class TermReader:
    """Finds the terms in the customer's words, longest phrase first; a term right after a
    negation or "instead of" is dropped ("not Nara", "we don't need a wheelchair"). A term marked
    ``~`` counts only with a difficulty said in its clause (``_HARDSHIP``), and is never dropped by it."""

    pattern: re.Pattern[str] | None
    said_back: tuple[str, ...]  # group index -> the term as the persona says it
    hardship: tuple[bool, ...] = ()  # group index -> the term needs a difficulty said

    @classmethod
    def of(cls, terms: Mapping[str, tuple[str, ...]]) -> "TermReader":
        phrases = [(phrase, value) for value, aliases in terms.items() for phrase in (value, *aliases)]
        phrases.sort(key=lambda pv: len(pv[0].rstrip("*")), reverse=True)
        groups, said_back, hardship = [], [], []
        for phrase, value in phrases:
            alternation = words_alternation([phrase.lstrip(HARDSHIP_MARK)])
            if alternation:
                groups.append(f"(?P<t{len(groups)}>{alternation})")
                said_back.append(value)
                hardship.append(phrase.startswith(HARDSHIP_MARK))
        pattern = re.compile("|".join(groups), re.IGNORECASE) if groups else None
        return cls(pattern, tuple(said_back), tuple(hardship))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        if self.pattern is None:
            return []
        found = []
        for match in self.pattern.finditer(said.text):
            group = int(match.lastgroup[1:])  # type: ignore[index]
            value = self.said_back[group]
            if self.hardship and self.hardship[group]:
                start, end = said.clause(said.text, match.start())
                if said.text.rstrip().endswith("?") or not _HARDSHIP.search(said.text[start:end]):
                    continue  # "are there many steps?", "the steps are pretty": no need said
                found.append(Found(match.start(), value))
                continue
            found.append(Found(match.start(), value, dropped=said.negated(said.text, match.start())))
        return found

    @property
    def words(self) -> set[str]:
        return {w.lower() for value in self.said_back for w in value.split()}
