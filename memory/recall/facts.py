"""The checkable facts of a text: its numbers and its proper names.

Used to judge whether a question names something the shop's knowledge lacks
(``memory/recall/knowledge.py``) and whether a reply says a number or a name that no source
holds (``robot/reply/grounding.py``).

- **Numbers**: every number, in digits or in words ("forty-five" is 45: text2num), prices,
  clock times ("8:30" stays one number), dates' days and years; "6,500" is 6500.
- **Names**: capitalized words that are not there for grammar: inside a sentence, any
  capitalized word ("the Golden Pavilion", "in April"); at its start, a capitalized word
  that is not an ordinary English word ("Hiroshima is far", not "Absolutely, ..."), by the
  lower-case words of Webster's 2nd dictionary (the english-words package).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SENTENCE = re.compile(r"(?:[^.!?\n]|(?<=\d)\.(?=\d))+(?:[.!?]+|$)")  # "2.50" ends no sentence
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[A-Za-zÀ-ÿ][\w'’-]*")
_WORD = re.compile(r"[a-z0-9À-ÿ]+")
# Capitalized for grammar, not because they name something.
# The dictionary (1934) lacks some greetings: "Goodbye, and safe travels." named "Goodbye", and the
# grounding guard held the robot's goodbye back for it.
_NOT_NAMES = frozenset("""i i'm i've i'd i'll ok okay hey hi hello thanks thank yes yeah no oh wow sure well
goodbye cheers congratulations greetings hmm oops mr mrs ms dr""".split())


# A number with one of these after it is a quantity: "2 hours" is grounded only by "2 hours"
# (or "2-hour"), not by a "2" somewhere else ("2 days", "platform 2").
_UNIT = re.compile(r"(\d+(?:[.,:]\d+)*)[\s-]*(minute|min|hour|hr|day|night|week|month|year|yen|dollar|euro|pound|"
                   r"percent|per cent|metre|meter|km|kilometre|kilometer|mile|degree|people|person|adult|child|"
                   r"kid|time|stop|train|bus|tour|room|ticket)s?\b", re.IGNORECASE)


@dataclass(frozen=True)
class Facts:
    numbers: frozenset[str]
    names: frozenset[str]  # as written ("Golden", "Pavilion")
    quantities: frozenset[str] = frozenset()  # "2 hour", "720 yen": a number with its unit

    def __bool__(self) -> bool:
        return bool(self.numbers or self.names)


def facts_of(text: str) -> Facts:
    numbers: set[str] = set()
    names: set[str] = set()
    for sentence in _SENTENCE.findall(digits(text)):
        for i, token in enumerate(_TOKEN.findall(sentence)):
            if token[0].isdigit():
                numbers.add(number(token))
            elif token[0].isupper() and _stripped(token).lower() not in _NOT_NAMES:
                if i or not is_common_word(_stripped(token)):
                    names.add(_stripped(token))
    return Facts(frozenset(numbers), frozenset(names), frozenset(quantities_of(text)))


def quantities_of(text: str) -> set[str]:
    return {f"{number(m.group(1))} {m.group(2).lower()}" for m in _UNIT.finditer(digits(text))}


def numbers_of(text: str) -> set[str]:
    return {number(t) for t in _TOKEN.findall(digits(text)) if t[0].isdigit()}


def words_of(text: str) -> set[str]:
    """Lower-case words, to look names up in (hyphens and apostrophes split: "Kinkaku-ji")."""
    return set(_WORD.findall(text.lower()))


def name_found(name: str, words: set[str]) -> bool:
    """Whether ``words`` (``words_of`` a source) hold the name: each of its parts."""
    parts = _WORD.findall(name.lower())
    return bool(parts) and all(p in words for p in parts)


def number(token: str) -> str:
    """One spelling per number: no thousands separators, no trailing ".0"."""
    token = token.rstrip(".,:")
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", token):
        token = token.replace(",", "")
    return token


def digits(text: str) -> str:
    """Numbers in words written in digits ("forty-five minutes" -> "45 minutes")."""
    from text_to_num import alpha2digit  # imported here: only where facts are read

    try:
        return alpha2digit(text, "en")
    except Exception:  # noqa: BLE001 - a text the converter cannot take keeps its words
        return text


def _stripped(token: str) -> str:
    return re.sub(r"['’]s$", "", token).strip("-'’")


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    from english_words import get_english_words_set

    # Lower-case entries only: the dictionary writes names capitalized ("Tokyo" is not here).
    return frozenset(w for w in get_english_words_set(["web2"], lower=False) if w.islower())


def is_common_word(word: str) -> bool:
    """An ordinary English word (a contraction by its first part: "We're", "Let's")."""
    first = re.split(r"['’]", word.lower())[0]
    return first in _NOT_NAMES or first in _common_words()


# English's irregular verbs, past forms -> the verb (a dictionary lists the verb only)
_IRREGULAR = dict(pair.split(":") for pair in """paid:pay said:say made:make bought:buy brought:bring left:leave
took:take taken:take went:go gone:go saw:see seen:see got:get gotten:get gave:give given:give came:come ate:eat
eaten:eat flew:fly flown:fly drove:drive driven:drive rode:ride kept:keep lost:lose sent:send spent:spend
thought:think told:tell knew:know known:know found:find felt:feel met:meet ran:run sat:sit slept:sleep
stood:stand wore:wear won:win wrote:write written:write held:hold heard:hear built:build caught:catch
taught:teach broke:break broken:break chose:choose chosen:choose began:begin begun:begin drank:drink
swam:swim sang:sing fell:fall fallen:fall forgot:forget forgotten:forget hid:hide hurt:hurt lay:lie
led:lead lit:light meant:mean put:put read:read rang:ring rose:rise sold:sell shot:shoot shut:shut
spoke:speak spoken:speak stole:steal stuck:stick threw:throw thrown:throw woke:wake""".split())


def lemmas(word: str) -> list[str]:
    """The word and what its inflection may come from ("guided" -> guide, "tours" -> tour, "paid" -> pay)."""
    out = [word] + ([_IRREGULAR[word]] if word in _IRREGULAR else [])
    for suffix, back in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            out.append(word[: -len(suffix)] + back)
    return out


def is_dictionary_word(word: str) -> bool:
    """An ordinary English word, inflected or not ("tours", "guided", "paid")."""
    return any(is_common_word(w) for w in lemmas(word.lower()))
