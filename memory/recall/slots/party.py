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
MOST_CHILD_AGE = 17  # "our son, he just turned 18": an adult
# What a number after a person counts when it is no age ("my kids, 2 rooms").
_NOT_AGES = frozenset("of pounds yen euros euro dollars dollar bucks people persons hours hour minutes days day "
                      "nights night weeks rooms adults o'clock : % k grand".split())
# Words that are no adjective between a number and who it counts ("1000 per person", "2 of the kids").
_NOT_ADJECTIVES = frozenset("per a an each for of in on at to the pro je für von mit im".split())


@dataclass
class _Party:
    adults: int | None = None
    children: int | None = None
    people: int | None = None
    at: int | None = None
    adds: bool = False  # companions said on top of the party held ("my sister is coming too")

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
            if party.adds and not filled:
                party = _Party()  # "my sister is coming too" with no party known: who travels is not said
            if party.at is not None and (value := party.said_back(self.language)):
                found.append(Found(party.at, value, adds=party.adds))
            start = end + 1
        return found

    def add(self, held: str, more: str) -> str:
        """The party ``held`` ("2 adults") with ``more`` on top ("1 adult"), said back as one
        ("3 adults"). Both are read as the reader says them back; a head count of unknown ages
        ("4 people") stays one ("5 people")."""
        old, new = (self._sentence(said, said.digits, 0, len(said.digits))
                    for said in (Said.of(held, self.language), Said.of(more, self.language)))
        if old.at is None:
            return held
        total = _Party(at=0)
        known = old.people is None or old.adults is not None or old.children is not None
        if known:
            total.adults = (old.adults or 0) + (new.adults or 0)
            total.children = (old.children or 0) + (new.children or 0) if (old.children or new.children) else None
        else:
            total.people = old.people + (new.adults or 0) + max(new.children or 0, 0) + (new.people or 0)
        return total.said_back(self.language) or held

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
        if (n := self._phrase_at(words, i, lang.alone)) and (n > 1 or i == 0 or set(words[max(0, i - 2):i]) & set(lang.alone_after)):
            if words[i + n - 1] in lang.self_words and i + n + 1 < len(words) \
                    and words[i + n] in (",", "and", "und", "&", "plus", "with", "mit") and self._person_at(words, i + n + 1):
                return 0  # "just me and my two kids": the list that follows says who (not "just me, no more than $1,500")
            party.set(at, adults=1, people=1)  # "travelling alone", "just me"; not "walk alone at night"
            return n
        if (n := self._phrase_at(words, i, tuple(lang.ordinal_groups))):
            party.set(at, people=lang.ordinal_groups[" ".join(words[i:i + n])])
            return n
        if (n := self._phrase_at(words, i, lang.couple)) and (i + n >= len(words) or words[i + n] not in ("of", "von")) \
                and (i + n >= len(words) or not _plural(words[i + n])):  # "a couple days", "a couple gamers": how many
            party.set(at, adults=2)
            return n
        if word in ("a", "an", "ein", "eine") and self._said_of_us(words, i) \
                and (n := self._noun_after(words, i, lang.couple_nouns)) and (i + n >= len(words) or words[i + n] not in ("of", "von")):
            party.set(at, adults=2)  # "we're a retired couple", "as an older couple"
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
        if (n := self._phrase_at(words, i, lang.we_are)) and i + n + 1 < len(words) and words[i + n] in ("the", "die") \
                and lang.companions.get(words[i + n + 1], 1) > 1:
            party.set(at, adults=lang.companions[words[i + n + 1]])  # "we're the grandparents": who "we" are
            return n + 2
        if (n := self._phrase_at(words, i, lang.we_are)) and i + n < len(words) and words[i + n].isdigit():
            after = words[i + n + 1] if i + n + 1 < len(words) else ""
            if not after or after in (",", ":") or after in lang.people or after in lang.count_after:
                party.set(at, people=int(words[i + n]))
                return n + 1
        if word in lang.possessives or word in lang.self_words or word in lang.with_words:
            return self._companions(said, text, toks, words, i, party)
        if word in ("the", "die") and party.children is None and (took := self._companion_at(words, i)) \
                and took[2] and not took[1] and not took[3] and not said.negated(text, at):
            party.set(at, children=took[2])  # "the kids are 7 and 12": how many children; who comes is said elsewhere
            return took[0]
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
            if not words[i].isdigit() and _plural(noun):
                return 0  # "a girls' trip", "an adults-only tour": the article is not the noun's
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
        """"my wife and I", "me, my wife and our 3 children", "with my girlfriend", "me my boyfriend
        and his parents", "me and two colleagues": counted only with the speaker in the list (or
        after "with"). Speech-to-text lists come without commas ("me my wife and our kids")."""
        lang = self.language
        start, j = i, i
        speaker = False
        adults = children = 0
        unknown_children = False
        people_named = 0
        shared = False  # a possessive was said: "and dad" after "my mum" is "my dad"
        if words[j] in lang.with_words:
            speaker = True
            j += 1
        while j < len(words):
            # "with my wife" counts the speaker; "a family of three, with one toddler" does not
            listed = (speaker and j > start + 1) or people_named
            if words[j] in lang.self_words:
                speaker = True
                j += 1
            elif words[j] in lang.possessives or (listed and self._person_at(words, j)) \
                    or (shared and self._person_noun(words[j])):
                # "my mum and dad": the possessive said once holds for each noun of the list
                took = self._companion_at(words, j, j if shared and self._person_noun(words[j]) else j + 1)
                if took is None:
                    break
                length, grown, kids, unknown = took
                shared = words[j] in lang.possessives or words[j] in lang.other_possessives
                adults += grown
                children += 0 if unknown else kids  # "my kids": how many is not said (not one)
                unknown_children |= unknown
                people_named += 1
                j += length
            else:
                break
            if j < len(words) and (words[j] in lang.self_words or words[j] in lang.possessives
                                   or words[j] in lang.other_possessives):
                continue  # "me my wife", "my boyfriend his parents": a list said without commas
            if j < len(words) and words[j] in (",", "and", "und", "&", "plus"):
                if j + 1 < len(words) and (words[j + 1] in lang.self_words or words[j + 1] in ("and", "und")
                                           or self._person_at(words, j + 1)
                                           or (shared and self._person_noun(words[j + 1]))):
                    j += 1
                    if words[j] in ("and", "und"):
                        j += 1
                    continue
            break
        if not speaker and people_named and children and not adults and (party.adults or party.people) \
                and not party.children and not said.negated(text, toks[start].at):
            # "two adults and our daughter", "the two of us, our daughter and the baby": they come too
            # (a head count said before the children holds them or not: `_sentence` decides)
            if party.people and party.adults is None and start and words[start - 1] in ("and", "und", "plus", "&"):
                party.adults = party.people  # "the two of us and our daughter": on top of the two
                party.people += children
            party.set(toks[start].at, children=children)
            return j - i
        if not speaker and people_named and not unknown_children and party.at is None \
                and self._adding(words) and not said.negated(text, toks[start].at):
            party.set(toks[start].at, adults=adults, children=children or None)  # "my sister is coming too"
            party.adds = True
            return j - i
        if not speaker or not people_named or said.negated(text, toks[start].at):
            return max(j - i, 0)
        if words[start] in lang.with_words and party.people and party.adults is None and children and not adults:
            party.set(toks[start].at, children=children)  # "a family of four, with our two kids": of the four
            return j - i
        if words[start] in lang.with_words and party.adults:  # "we are two adults with our two kids"
            party.set(toks[start].at, adults=party.adults + adults,
                      children=(party.children or 0) + children if children or not unknown_children else UNKNOWN)
            return j - i
        only = start > 0 and words[start - 1] in lang.only_words  # "just me and my husband": nobody else
        kept = 0 if only else party.children
        party.set(toks[start].at, adults=1 + adults,
                  children=children if children else (UNKNOWN if unknown_children else kept))
        return j - i

    def _adding(self, words: list[str]) -> bool:
        """The sentence says someone comes on top: a word of coming and one of adding ("is coming
        too", "will join us")."""
        joined = f" {' '.join(words)} "
        lang = self.language
        return all(any(f" {w} " in joined for w in said) for said in (lang.joining, lang.adding)) \
            and not any(f" {w} " in joined for w in lang.negations)  # "my sister isn't coming too"

    def _person_at(self, words: list[str], j: int) -> bool:
        """Whether a person of a list may start at ``j``: "my", "his", "the kids", "two colleagues"."""
        lang = self.language
        word = words[j]
        if word in lang.possessives or word in lang.other_possessives or word in lang.self_words:
            return True
        if word.isdigit() or word in ("the", "a", "an", "die", "ein", "eine"):
            return self._companion_at(words, j) is not None
        return False

    def _person_noun(self, word: str) -> bool:
        lang = self.language
        return word in lang.companions or word in lang.child_companions or word in lang.children

    def _companion_at(self, words: list[str], j: int, first: int | None = None) -> tuple[int, int, int, bool] | None:
        """At a possessive, an article or a number (or at ``first``, a noun whose possessive was
        said before it): (tokens taken, adults, children, children of unknown number). An age said
        after ("our son, he just turned 18") decides adult or child."""
        lang = self.language
        count = int(words[j]) if words[j].isdigit() else None
        first = j + 1 if first is None else first
        for k in range(first, min(first + 1 + ADJECTIVES_BETWEEN, len(words))):
            word = words[k]
            if word.isdigit():
                if k + 1 < len(words) and words[k + 1] in ("year-old", "year-olds"):
                    age, n = int(word), (count or 1)  # "our 3-year-old", "two 5-year-olds"
                    return k - j + 2, (n if age > MOST_CHILD_AGE else 0), (0 if age > MOST_CHILD_AGE else n), False
                count = int(word)
                continue
            if word.endswith(("'s", "’s")) and word[:-2] in lang.companions:
                continue  # "her sister's two teenagers": the teenagers are who is named
            if self._person_noun(word):
                ages, took = self._ages_after(words, k + 1)
                many = 2 if word in ("twins", "zwillinge") else None
                n = count or many or (len(ages) if len(ages) > 1 else None)
                if ages and (n is None or n == len(ages)):
                    grown = sum(a > MOST_CHILD_AGE for a in ages)
                    return k - j + 1 + took, grown, len(ages) - grown, False
                if word in lang.companions:
                    return k - j + 1, (count or lang.companions[word]), 0, False
                plural = _plural(word) and word not in ("twins", "zwillinge")
                return k - j + 1, 0, (n or 1), bool(plural and not n)
            if word in (",", "and", "und", "&") or word in lang.self_words or word in lang.possessives:
                if count and k == j + 2 and words[j] in lang.possessives:
                    return 2, 0, count, False  # "me, my husband and our two": a number of one's own is children
                return None
        if count and j + 2 == len(words) and words[j] in lang.possessives:
            return 2, 0, count, False  # "... and our three" at the sentence's end
        return None

    def _ages_after(self, words: list[str], k: int) -> tuple[list[int], int]:
        """The ages said right after a person ("he just turned 18", ", who's 19", "8 and 11") and the
        tokens they take; none when the number counts something else ("kids, 2 rooms")."""
        j = k
        while j < len(words) and words[j] in self.language.age_links and j - k < 4:
            j += 1
        ages = []
        while j < len(words) and words[j].isdigit():
            ages.append(int(words[j]))
            j += 1
            if j + 1 < len(words) and words[j] in (",", "and", "und", "&") and words[j + 1].isdigit():
                j += 1
        if not ages or (j < len(words) and words[j] in _NOT_AGES) or max(ages) > 120:
            return [], 0
        while j < len(words) and words[j] in ("years", "year", "old", "jahre", "alt"):
            j += 1
        return ages, j - k

    def _said_of_us(self, words: list[str], i: int) -> bool:
        """Whether "we are" (or "as") comes right before ``i``: "we're a retired couple"."""
        return (i > 0 and words[i - 1] in ("as", "als")) or any(
            words[max(0, i - len(p.split())):i] == p.split() for p in self.language.we_are)

    @staticmethod
    def _noun_after(words: list[str], i: int, nouns: tuple[str, ...]) -> int:
        """Tokens from ``i`` through one of ``nouns`` with at most two adjectives between; 0: none."""
        for k in range(i + 1, min(i + 2 + ADJECTIVES_BETWEEN, len(words))):
            if words[k] in nouns:
                return k - i + 1
            if words[k] in (",", "and", "und", "of", "von") or words[k].isdigit():
                return 0
        return 0

    @staticmethod
    def _phrase_at(words: list[str], i: int, phrases: tuple[str, ...]) -> int:
        for phrase in sorted(phrases, key=len, reverse=True):
            parts = phrase.split()
            if words[i:i + len(parts)] == parts:
                return len(parts)
        return 0


def _plural(noun: str) -> bool:
    return (noun.endswith("s") and not noun.endswith("ss")) or noun in ("children", "people", "kinder")


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
