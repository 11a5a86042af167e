"""`name` slots: the customer's name after "my name is", "call me" (any word but a common
one), or after "I'm", "this is", or before "here" at a sentence's start ("Hi, Lena here"),
only a capitalized word that is no nationality, no common word and none of the persona's
other names ("I'm American" is no name). A title stays with the name ("Mr. Sato")."""

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
    then: re.Pattern[str] | None = None  # "Lena here": a name said first, at a sentence's start
    titles: frozenset[str] = frozenset()

    @classmethod
    def of(cls, language: Language, not_names: Iterable[str] = ()) -> "NameReader":
        def cue(phrases: Iterable[str]) -> re.Pattern[str]:
            alternation = "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases, key=len, reverse=True))
            return re.compile(rf"(?<![\w'’])(?:{alternation})(?![\w'’])", re.IGNORECASE)
        excluded = {w.lower() for w in (*language.not_names, *language.fillers, *not_names)}
        then = "|".join(map(re.escape, language.name_then))
        # after a greeting's comma and ending its sentence: "Hi, Lena here." (not "Nobody here?")
        then_pattern = re.compile(rf"(?<=[,!.])\s*(?P<name>[^\W\d_][^\W\d_'’-]*)\s+(?:{then})\s*(?:[.!,]|$)") if then else None
        return cls(cue(language.name_sure), cue(language.name_maybe), frozenset(excluded), then_pattern,
                   frozenset(language.titles))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.text
        found = [f for m in self.sure.finditer(text) if (f := self._name_at(said, m.end(), sure=True))]
        found += [f for m in self.maybe.finditer(text) if (f := self._name_at(said, m.end(), sure=False))]
        if self.then is not None:
            found += [f for m in self.then.finditer(text) if (f := self._name_at(said, m.start("name"), sure=False))]
        return sorted(found, key=lambda f: f.at)

    def _name_at(self, said: Said, at: int, sure: bool) -> Found | None:
        text = said.text
        words: list[str] = []
        start = at
        for _ in range(3):  # a title, a first name and a family name at most
            match = _NAME_WORD.match(text, at)
            if match is None:
                break
            word = match.group(1)
            if not words and word.lower() in self.titles and text[match.end():match.end() + 1] in (".", " "):
                title_end = match.end() + (text[match.end()] == ".")
                if (following := _NAME_WORD.match(text, title_end)) and following.group(1)[:1].isupper():
                    start, at = match.start(1), title_end
                    words.append(word[:1].upper() + word[1:].lower() + ".")  # "Mr. Sato"
                    continue
            if len(words) == 2 and not words[0].endswith("."):
                break  # a first name and a family name, without a title
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
