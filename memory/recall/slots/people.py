"""Who is in the party, read from the people a sentence names (English): "me and my niece,
she's twelve", "we're the grandparents and we've brought the twins", "a class of 24
nine-year-olds and two other staff", "my three, they're 5, 8 and 10".

A second reader beside ``party.PartyReader``'s word lists, for the people its lists do not
know. A noun names a person when WordNet says so (its first noun sense is a kind of
``person``: niece, colleague, carer, scout leader), and a child when that sense is a kind of
``child`` or ``juvenile`` (toddler, kid, teenager); an age said of them decides for any other
("my nephew, who's 19": an adult; "my daughter, she's 17": a child). A few nouns say how many
they are (the twins, my parents, a couple). The speaker is one of the party when they name
themselves in it ("me", "I'm a teacher with ...", "two other leaders"), not when they say they
stay ("I won't be going").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from memory.recall.knowledge.wordnet import WordNet, shared

ADULT_AGE = 18
MOST_PEOPLE = 40  # a larger number before a person is no party ("a thousand per person")
# Nouns that say how many they are: lexical facts, not phrasings ("the twins" are two).
HOW_MANY = {"twins": 2, "triplets": 3, "quadruplets": 4, "quads": 4, "parents": 2, "grandparents": 2,
            "in-laws": 2, "parents-in-law": 2, "couple": 2, "newlyweds": 2}
_TOKEN = re.compile(r"\d+(?:-year-olds?|-years?-old)?|[a-z]+(?:[-'][a-z]+)*|[,.;:!?+&]")
_YEAR_OLD = re.compile(r"\b(\d+|[a-z]+)[- ]years?[- ]old(s)?\b")
_SELF = {"me", "myself", "i", "i'm", "i'll", "i've"}
_NOT_GOING = re.compile(r"\b(?:i|i'm|i'll)\s+(?:won't|will not|am not|'m not|not)\s+(?:be\s+)?(?:going|coming)|"
                        r"\bstaying (?:at )?home|\bwithout me\b", re.IGNORECASE)
_NEGATING = {"no", "not", "without"}
_STOP = {"and", ",", "&", "+", "plus", "with", "of", "the", "a", "an", "my", "our", "his", "her", "their", "your"}


@dataclass
class _Mention:
    count: int | None  # None: a plural without its number ("the kids")
    child: bool | None  # None: not known
    at: int
    other: bool = False  # "two other leaders": the speaker is one more of them
    ages: list[int] = field(default_factory=list)


class PeopleReader:
    def __init__(self, wordnet: WordNet | None = None) -> None:
        self.wordnet = wordnet

    def read(self, sentence: str) -> tuple[int, int] | None:
        """(adults, children) of the party the sentence names, or None when it names none
        with the speaker or a number in it."""
        low = _YEAR_OLD.sub(lambda m: f"{_number(m.group(1))}-year-old{m.group(2) or ''}", sentence.lower().replace("’", "'"))
        toks = list(_TOKEN.finditer(low))
        words = [t.group(0) for t in toks]
        mentions, speaker = self._mentions(words), self._speaker(words, sentence)
        if not mentions or self._uncounted(words):
            return None
        for m in mentions:
            m.at = toks[m.at].start()  # from a word's number to where it is said
        for n in re.finditer(r"(\d+) of them", low):  # "the kids, there's three of them"
            countless = [m for m in mentions if m.count is None and m.at < n.start()]
            if countless:
                countless[-1].count = int(n.group(1))
        self._ages(low, mentions)
        adults = children = 0
        for m in mentions:
            count = m.count if m.count is not None else (len(m.ages) or None)
            if count is None:
                return None  # "the kids": how many is not said
            if m.ages and len(m.ages) == count:
                kids = sum(a < ADULT_AGE for a in m.ages)
                children, adults = children + kids, adults + count - kids
            elif m.ages:  # "the twins, they're six": one age for them all
                children, adults = (children + count, adults) if max(m.ages) < ADULT_AGE else (children, adults + count)
            elif m.child is None:
                adults += count  # a person of no known age: a grown-up, unless an age says otherwise
            elif m.child:
                children += count
            else:
                adults += count
            speaker = speaker or m.other
        if speaker:
            adults += 1
        if not speaker and not any(m.count is not None and (m.count > 1 or m.other) for m in mentions):
            return None  # "my mother can't walk far", "my husband and my son love trains": nobody said to travel
        return (adults, children) if adults or children else None

    def _mentions(self, words: list[str]) -> list[_Mention]:
        out: list[_Mention] = []
        i = 0
        while i < len(words):
            w = words[i]
            negated = any(x in _NEGATING for x in words[max(0, i - 3):i])
            count, j = self._count_before(words, i)
            if m := re.fullmatch(r"(\d+)-years?-olds?|(\d+)-year-old", w):
                age = int(m.group(1) or m.group(2))
                n = count if count is not None else 1
                out.append(_Mention(0 if negated else n, age < ADULT_AGE, i, ages=[]))
                i += 1
                continue
            if w in HOW_MANY and words[i + 1:i + 2] != ["of"]:  # "a couple of kids" counts the kids
                out.append(_Mention(0 if negated else (count or HOW_MANY[w]), None, i))
                i += 1
                continue
            kind = self._person(w)
            if kind is not None and (_predicate(words, i) or (count is not None and count > MOST_PEOPLE)
                                     or "per" in words[max(0, i - 2):i]):
                kind = None  # "I'm American", "she's vegan": what someone is, not who comes; "1000 per person"
            if kind is not None and not negated:
                plural = w.endswith("s") and kind != "singular-s"
                n = count if count is not None else (None if plural else 1)
                if words[i - 1:i] == ["other"] or (j and "other" in words[j:i]):
                    out.append(_Mention(n, kind == "child", i, other=True))
                else:
                    out.append(_Mention(n, kind == "child", i))
            elif kind is not None:
                out.append(_Mention(0, kind == "child", i))
            elif w.isdigit() and i > 0 and words[i - 1] in ("my", "our") and (i + 1 == len(words) or words[i + 1] in (",", "and", ".")):
                out.append(_Mention(int(w), None, i))  # "my three, they're 5, 8 and 10"
            i += 1
        return out

    def _uncounted(self, words: list[str]) -> bool:
        """A number of something that is no person but may come along, a group of people or a
        living thing ("two other staff", "3 dogs"): the party the sentence says is not all read,
        and a party read in part would be priced wrong (no party is asked for instead)."""
        if self.wordnet is None:
            return False
        for i, w in enumerate(words):
            count, _ = self._count_before(words, i)
            if count is not None and count <= MOST_PEOPLE and w.isalpha() and self._person(w) is None \
                    and _group_or_creature(self.wordnet, w):
                return True
        return False

    @staticmethod
    def _count_before(words: list[str], i: int) -> tuple[int | None, int | None]:
        """The number said before the noun at ``i`` (up to two words between: "24 year nine pupils",
        "two other staff"); "a"/"one" is 1, "a couple of" 2."""
        for k in range(i - 1, max(-1, i - 4), -1):
            w = words[k]
            if w.isdigit():
                return int(w), k
            if w in ("a", "an", "one") and k == i - 1:
                return 1, k
            if w == "couple" and k + 1 < len(words) and words[k + 1] == "of":
                return 2, k
            if w in (",", ".", "and", "&", "+", "plus", "with") or w in _SELF:
                return None, None
        return None, None

    def _person(self, word: str) -> str | None:
        """"child", "adult" or None: the noun names no person (a dog, a pram)."""
        if self.wordnet is None:
            return None
        return _person_kind(self.wordnet, word)

    @staticmethod
    def _speaker(words: list[str], sentence: str) -> bool:
        if _NOT_GOING.search(sentence):
            return False
        return any(w in _SELF for w in words)

    @staticmethod
    def _ages(text: str, mentions: list[_Mention]) -> None:
        """Ages said after a mention ("she's twelve", "they're 5, 8 and 10", "aged 16 and 17")
        belong to the mention before them."""
        for m in re.finditer(r"(?:she|he|who|they|which)\s*(?:'s|'re|is|are)\s+(?:now\s+|just\s+|uh\s+)?((?:\d+\s*(?:,|and|&)?\s*)+)"
                             r"|aged\s+((?:\d+\s*(?:,|and|to|&)?\s*)+)|turned\s+(\d+)", text):
            ages = [int(a) for a in re.findall(r"\d+", m.group(1) or m.group(2) or m.group(3))]
            ages = [a for a in ages if a < 120]
            before = [x for x in mentions if x.at < m.start()]
            target = before[-1] if before else None
            if target is not None and ages:
                if "to" in (m.group(2) or ""):  # "aged seven to twelve": all of them within
                    target.child = max(ages) < ADULT_AGE
                else:
                    target.ages = ages


# child.n.01 (kid, youngster), child.n.02 (a son or daughter: the profile's convention, "me and my
# two daughters" is one adult and two children, unless an age says otherwise), juvenile.n.01
CHILD_SYNSETS = frozenset({9917593, 9918248, 9622049})
# A definition that says a young person: "pupil" (a young person attending school), "cub" (a boy
# scout between the ages of 8 and 10).
_YOUNG = re.compile(r"\byoung (?:person|people)\b|\bchild(?:ren)?\b|between (?:the ages of )?\d+ and \d+", re.IGNORECASE)
PERSON_SYNSET = 7846  # person.n.01


@lru_cache(maxsize=4096)
def _person_kind(wordnet: WordNet, word: str) -> str | None:
    forms = wordnet.base_forms(word) or wordnet.base_forms(word.replace("-", ""))  # "grown-ups": grownup
    nouns = [lemma for lemma, pos in forms if pos == "noun"]
    if not nouns:
        return None
    offsets = wordnet.senses(nouns[0], "noun")
    if not offsets:
        return None
    seen = _above(wordnet, offsets[0])  # the first (most frequent) sense: "dog" is the animal
    if PERSON_SYNSET not in seen:
        return None
    return "child" if seen & CHILD_SYNSETS or _YOUNG.search(wordnet.gloss("noun", offsets[0]).split(";")[0]) else "adult"


ORGANISM, SOCIAL_GROUP = 4475, 7950920  # organism.n.01, social_group.n.01


@lru_cache(maxsize=4096)
def _group_or_creature(wordnet: WordNet, word: str) -> bool:
    nouns = [lemma for lemma, pos in wordnet.base_forms(word) if pos == "noun"]
    offsets = wordnet.senses(nouns[0], "noun") if nouns else ()
    return bool(offsets) and bool(_above(wordnet, offsets[0]) & {ORGANISM, SOCIAL_GROUP})


def _above(wordnet: WordNet, offset: int) -> frozenset[int]:
    out, todo = set(), [offset]
    while todo:
        o = todo.pop()
        if o in out or len(out) > 60:
            continue
        out.add(o)
        todo += [t for symbol, pos, t in wordnet.synset("noun", o)[1] if symbol in ("@", "@i") and pos == "noun"]
    return frozenset(out)


_COPULA = {"is", "am", "are", "was", "were", "be", "being"}


def _predicate(words: list[str], i: int) -> bool:
    """The noun at ``i`` says what someone is ("I'm American", "my husband is a vegetarian")."""
    return any(w in _COPULA or w.endswith(("'m", "'s", "'re")) for w in words[max(0, i - 2):i])


def _number(word: str) -> str:
    """"five" -> "5" (a number word text2num left inside "five-year-olds")."""
    if word.isdigit():
        return word
    from text_to_num import text2num

    try:
        return str(text2num(word, "en"))
    except ValueError:
        return word


@lru_cache(maxsize=1)
def reader() -> PeopleReader:
    return PeopleReader(shared())
