"""Does an LLM sentence say the opposite of the shop's sentence it paraphrases?

A stronger model wording an answer from the entries kept their numbers and names and still
turned them round: "Yes, you can take pictures of the maiko in Gion" (the entry: "Photographs of
geiko and maiko in the lanes are not allowed"), "not suitable for someone who can't climb steps"
(step-free), "we refund half" (all your money back). A guard of numbers and names passes all three.

So each LLM sentence is set against the shop sentence closest to it: by words (the share of its
content words, stemmed, that the shop sentence has; at least ``CLOSE``), else by meaning (the
sentence embeddings' cosine, at least ``NEAR``). It is refused when
- the two differ in polarity: one of them negates ("not", "no", "never", "n't", "without",
  "nothing") and the other does not, or the LLM's sentence opens with a yes or no the shop
  sentence's polarity contradicts;
- it says an amount word ("all", "half", "none", "full", "every", "only") the shop sentence
  does not, where the shop sentence has another one.
A sentence close to none is left to the other checks: what it says of a number or name is
checked there.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Sequence

# (sentence, the shop's sentences) -> the closest of them and how close (a cosine, 0..1); the
# knowledge's sentence embeddings when the robot has them (robot/dialogue/knowledge.py)
Closest = Callable[[str, Sequence[str]], "tuple[str, float] | None"]
NEAR = 0.6  # cosine of the sentence embeddings at which the shop sentence is the one paraphrased

CLOSE = 0.5  # share of the LLM sentence's content words the shop sentence must have to be its source
_NEGATION = re.compile(r"\b(?:not|no|never|nothing|none|nobody|cannot|without|n't)\b|n't\b", re.IGNORECASE)
_AMOUNT = ("all", "half", "none", "full", "every", "only", "nothing", "some")
_YES = re.compile(r"^\W*(?:yes|yeah|sure|of course|certainly|absolutely)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(?:no|nope|unfortunately|i'm afraid)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_FUNCTION = frozenset("""a an the this that these those is are was were be been being do does did can could will
would shall should may might must have has had you your we our us i me my it its they them their he she his her of in
on at to for from by with and or but if as so than then there here also just very please yes yeah sure course
certainly absolutely okay ok""".split())


def contradicted(sentence: str, shop: Sequence[str], closest: Closest | None = None) -> str | None:
    """The shop sentence that ``sentence`` turns round, or None. ``closest`` finds the shop
    sentence by meaning ("pictures" of "photographs"); without it, by shared words."""
    mine = _content(sentence)
    if len(mine) < 2 or not shop:
        return None
    best, overlap = None, 0.0
    for source in shop:
        share = len(mine & _content(source)) / len(mine)
        if share > overlap:
            best, overlap = source, share
    if overlap < CLOSE and closest is not None and (near := closest(sentence, shop)) is not None and near[1] >= NEAR:
        best, overlap = near[0], CLOSE
    if best is None or overlap < CLOSE:
        return None
    negated, source_negated = _negated(sentence), _negated(best)
    if _YES.search(sentence) and source_negated or _NO.search(sentence) and not source_negated and not negated:
        return best
    if negated != source_negated and not _YES.search(sentence):
        return best
    said, held = _amounts(sentence), _amounts(best)
    if said and held and not said & held:
        return best
    return None


def _negated(text: str) -> bool:
    body = _YES.sub("", _NO.sub("", text, count=1), count=1)
    return bool(_NEGATION.search(body))


def _amounts(text: str) -> set[str]:
    words = set(_WORD.findall(text.lower()))
    return {a for a in _AMOUNT if a in words}


@lru_cache(maxsize=4096)
def _content(text: str) -> frozenset[str]:
    stemmer = _stemmer()
    words = [w for w in _WORD.findall(text.lower().replace("’", "'")) if w not in _FUNCTION and len(w) > 2
             and not _NEGATION.fullmatch(w)]
    return frozenset(stemmer.stemWords(words)) if words else frozenset()


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")
