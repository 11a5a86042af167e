"""`party` and `count` slots: how many, and who. "my wife and I", "me and my two daughters",
"a family of four", "two adults and a child", "zu dritt" are said back as "2 adults",
"1 adult, 2 children", "4 people", "2 adults, 1 child", "3 Personen".

Numbers in words are digits already (text2num). Each sentence is read for what it says of
the party: counts of adults and children, a head count ("the three of us", "family of
four"), and lists of companions with the speaker in them ("my husband and I and our little
boy"; "with my girlfriend"). A companion named without the speaker ("my mother can't walk
far") says nothing of who travels. What a sentence says later replaces what it said before
("two adults, sorry, two adults and a kid").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.recall.slots.language import Language
from memory.recall.slots.said import Cues, Found, Said

_TOKEN = re.compile(r"\d+|[^\W\d_]+(?:[-'’][^\W\d_]+)*|[,&:]", re.UNICODE)
ADJECTIVES_BETWEEN = 2  # "our little boy", "my 2 teenage sons": words between "my" and the person
UNKNOWN = -1  # "our kids": children, how many not said
MOST_PEOPLE = 40  # "1000 per person" is no party
# Words that are no adjective between a number and who it counts ("1000 per person", "2 of the kids").
_NOT_ADJECTIVES = frozenset("per a an each for of in on at to the pro je für von mit im".split())


@dataclass
class _Party:
    adults: int | None = None
    children: int | None = None
    people: int | None = None
    at: int | None = None

    def set(self, at: int, **counts: int) -> None:
        for name, count in counts.items():
            setattr(self, name, count)
        self.at = at if self.at is None else self.at

    def said_back(self, language: Language) -> str:
        adults, children, people = self.adults, self.children, self.people
        if people and children not in (None, UNKNOWN) and adults is None and people > children:
            adults = people - children
        if people and adults and children is None and people > adults:
            children = people - adults
        if adults is None and children is None and people is None:
            return ""
        if adults is None and children and people is None:
            return ""  # children alone ("is there a discount for 2 kids?"): nobody said who travels
        return language.say_party(adults or 0, children or 0, people or 0)


@dataclass(frozen=True)
class _Tok:
    text: str
    at: int


@dataclass(frozen=True)
class PartyReader:
    language: Language

    @classmethod
    def of(cls, language: Language) -> "PartyReader":
        return cls(language)

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.digits
        found = []
        start = 0
        for end in (*_sentence_ends(said, text), len(text)):
            party = self._sentence(said, text, start, end)
            if party.at is not None and (value := party.said_back(self.language)):
                found.append(Found(party.at, value))
            start = end + 1
        return found

    def _sentence(self, said: Said, text: str, start: int, end: int) -> _Party:
        toks = [_Tok(m.group(0).lower(), start + m.start()) for m in _TOKEN.finditer(text[start:end])]
        words = [t.text for t in toks]
        party = _Party()
        i = 0
        while i < len(toks):
            step = self._mention(said, text, toks, words, i, party)
            i += step or 1
        joined = " ".join(words)
        if party.people and re.search(r"\ball (?:adults|grown-ups|grownups)\b|\balle erwachsen", joined):
            party.adults, party.children = party.people, 0  # "seven of us, all adults"
        if party.people and party.children and party.adults is None and party.children >= party.people:
            party.adults = party.people  # "two of us and three kids": the children come on top
            party.people = party.people + party.children
        return party

    def _mention(self, said: Said, text: str, toks: list[_Tok], words: list[str], i: int, party: _Party) -> int:
        """Reads what starts at token ``i`` into ``party``; the tokens it took (0: none)."""
        lang = self.language
        word, at = words[i], toks[i].at
        if (n := self._phrase_at(words, i, lang.alone)) and (n > 1 or set(words[max(0, i - 2):i]) & set(lang.alone_after)):
            if words[i + n - 1] in lang.self_words and i + n < len(words) \
                    and words[i + n] in (",", "and", "und", "&", "plus", "with", "mit"):
                return 0  # "just me and my two kids": the list that follows says who
            party.set(at, adults=1, people=1)  # "travelling alone", "just me"; not "walk alone at night"
            return n
        if (n := self._phrase_at(words, i, tuple(lang.ordinal_groups))):
            party.set(at, people=lang.ordinal_groups[" ".join(words[i:i + n])])
            return n
        if (n := self._phrase_at(words, i, lang.couple)) and (i + n >= len(words) or words[i + n] not in ("of", "von")):
            party.set(at, adults=2)
            return n
        if (n := self._phrase_at(words, i, lang.family_with)) and i + n + 1 < len(words):
            count = _count(words[i + n])
            if count and words[i + n + 1] in lang.children:
                party.set(at, adults=2, children=count)
                return n + 2
        if (n := self._phrase_at(words, i, lang.group_of)) and i + n < len(words) and words[i + n].isdigit():
            party.set(at, people=int(words[i + n]))
            return n + 1
        if word.isdigit() or word in ("a", "an", "one", "ein", "eine", "einem", "einen"):
            return self._counted(said, text, toks, words, i, party)
        if (n := self._phrase_at(words, i, lang.we_are)) and i + n < len(words) and words[i + n].isdigit():
            after = words[i + n + 1] if i + n + 1 < len(words) else ""
            if not after or after in (",", ":") or after in lang.people:
                party.set(at, people=int(words[i + n]))
                return n + 1
        if word in lang.possessives or word in lang.self_words or word in lang.with_words:
            return self._companions(said, text, toks, words, i, party)
        return 0

    def _counted(self, said: Said, text: str, toks: list[_Tok], words: list[str], i: int, party: _Party) -> int:
        """"2 adults", "a child", "5 people", "3 of us", "the 2 of us"."""
        lang = self.language
        count = _count(words[i])
        if count is None or count > MOST_PEOPLE:
            return 0
        for skip in range(0, ADJECTIVES_BETWEEN):  # "2 small children", "2 teenage kids"
            j = i + 1 + skip
            if j >= len(words) or words[j] in (",", "and", "und", "&", ":") or (skip and words[j - 1] in _NOT_ADJECTIVES):
                return 0
            noun = words[j]
            negated = said.negated(text, toks[i].at)
            if noun in lang.adults and count and not negated and words[i].isdigit():
                party.set(toks[i].at, adults=count)
                return j - i + 1
            if noun in lang.children and count:
                if i and words[i - 1] in ("plus",) and party.people and not negated:
                    party.people += count  # "the 5 of us plus a toddler": the child on top of the 5
                party.set(toks[i].at, children=0 if negated else count)
                return j - i + 1
            if noun in lang.people and words[i].isdigit() and not negated:
                if i and words[i - 1] in lang.with_words:  # "I'm coming with 3 friends": and the speaker
                    party.set(toks[i].at, adults=count + 1)
                else:
                    party.set(toks[i].at, people=count)
                return j - i + 1
            if lang.of_us and words[i].isdigit() and " ".join(words[j:j + 2]) in lang.of_us and skip == 0:
                if not negated:
                    party.set(toks[i].at, people=count)
                return 3
        return 0

    def _companions(self, said: Said, text: str, toks: list[_Tok], words: list[str], i: int, party: _Party) -> int:
        """"my wife and I", "me, my wife and our 3 children", "with my girlfriend": counted
        only with the speaker in the list (or after "with")."""
        lang = self.language
        start, j = i, i
        speaker = False
        adults = children = 0
        unknown_children = False
        people_named = 0
        if words[j] in lang.with_words:
            speaker = True
            j += 1
        while j < len(words):
            if words[j] in lang.self_words:
                speaker = True
                j += 1
            elif words[j] in lang.possessives:
                took = self._companion_at(words, j)
                if took is None:
                    break
                length, grown, kids, unknown = took
                adults += grown
                children += kids
                unknown_children |= unknown
                people_named += 1
                j += length
            else:
                break
            if j < len(words) and words[j] in (",", "and", "und", "&", "plus"):
                if j + 1 < len(words) and (words[j + 1] in lang.self_words or words[j + 1] in lang.possessives
                                           or words[j + 1] in ("and", "und")):
                    j += 1
                    if words[j] in ("and", "und"):
                        j += 1
                    continue
            break
        if not speaker and people_named and children and not adults and party.adults and not party.children \
                and not said.negated(text, toks[start].at):
            party.set(toks[start].at, children=children)  # "two adults and our daughter": she comes too
            return j - i
        if not speaker or not people_named or said.negated(text, toks[start].at):
            return max(j - i, 0)
        party.set(toks[start].at, adults=1 + adults,
                  children=children if children else (UNKNOWN if unknown_children else party.children))
        return j - i

    def _companion_at(self, words: list[str], j: int) -> tuple[int, int, int, bool] | None:
        """At a possessive: (tokens taken, adults, children, children of unknown number)."""
        lang = self.language
        count = None
        for k in range(j + 1, min(j + 2 + ADJECTIVES_BETWEEN, len(words))):
            word = words[k]
            if word.isdigit():
                count = int(word)
                continue
            if word in lang.companions:
                return k - j + 1, (count or lang.companions[word]), 0, False
            if word in lang.child_companions:
                plural = word.endswith(("s", "ren", "er", "ern")) or word in ("twins", "zwillinge")
                return k - j + 1, 0, (count or (2 if word in ("twins", "zwillinge") else 1)), bool(plural and not count and word not in ("twins", "zwillinge"))
            if word in (",", "and", "und", "&") or word in lang.self_words or word in lang.possessives:
                return None
        return None

    @staticmethod
    def _phrase_at(words: list[str], i: int, phrases: tuple[str, ...]) -> int:
        for phrase in sorted(phrases, key=len, reverse=True):
            parts = phrase.split()
            if words[i:i + len(parts)] == parts:
                return len(parts)
        return 0


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return 1 if word in ("a", "an", "one", "ein", "eine", "einem", "einen") else None


def _sentence_ends(said: Said, text: str) -> list[int]:
    ends, at = [], 0
    while at < len(text):
        end = said.sentence(text, at)[1]
        if end >= len(text):
            break
        ends.append(end)
        at = end + 1
    return ends


@dataclass(frozen=True)
class CountReader:
    """How many of something the persona names ("5 nights"): a number before one of its
    ``units``, said back with the first unit for one and the last for more."""

    units: tuple[str, ...]
    cues: Cues

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        if not self.units:
            return []
        text = said.digits
        alternation = "|".join(re.escape(u) for u in sorted(self.units, key=len, reverse=True))
        found = []
        for m in re.finditer(rf"\b(\d+)\s+(?:{alternation})\b", text, re.IGNORECASE):
            if not self.cues.near(said, text, m.start(), m.end()):
                continue
            n = int(m.group(1))
            found.append(Found(m.start(), f"{n} {self.units[0] if n == 1 else self.units[-1]}",
                               dropped=said.negated(text, m.start())))
        return found
