"""What a visitor wants of a consultation in one turn: a recommendation, an offer chosen, the plan
changed, its total, or to book and pay (``prompts/consult_words.txt``); and which offers they name.

An offer is named by what the shop calls it (its title and aliases, whole or in part: "the Nara
one", "the tea tour") and by meaning (the knowledge search: "the shrine walk", "the bamboo one"),
among the offers only; "that one", "it" and "the first one" are the offer the robot recommended
last. Between two offers that fit the words alike, the one recommended last wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Sequence

from memory.core.words import words_pattern
from prompts import load_word_list
from robot.consult.offers import Offer, OfferBook


class Intent(str, Enum):
    RECOMMEND = "recommend"
    CHOOSE = "choose"
    ADD = "add"
    DROP = "drop"
    INSTEAD = "instead"
    BOOK = "book"
    TOTAL = "total"


@lru_cache(maxsize=1)
def _patterns() -> dict[Intent, re.Pattern[str]]:
    out = {}
    for line in load_word_list("consult_words"):
        name, _, phrases = line.partition(":")
        pattern = words_pattern([p.strip() for p in phrases.split(",") if p.strip()])
        if pattern is not None:
            out[Intent(name.strip())] = pattern
    return out


def intents(text: str) -> set[Intent]:
    said = text.lower().replace("’", "'")
    return {intent for intent, pattern in _patterns().items() if pattern.search(said)}


_DEICTIC = re.compile(r"\b(?:that one|this one|the first one|the first|that|it|this|those|them|both)\b", re.IGNORECASE)
_REFERENCE_MIN = 0.45  # the knowledge search's cosine at which words name an offer by meaning


@dataclass(frozen=True)
class Named:
    offers: tuple[Offer, ...]  # in the order said
    deictic: bool  # "that one", "it": the last recommendation


def named_offers(text: str, book: OfferBook, index: object, recent: Sequence[Offer] = ()) -> Named:
    """The offers ``text`` names, in the order said (``index``: the knowledge's ``KnowledgeIndex``)."""
    by_entry = {o.index: o for o in book.offers}
    mentions = [m for m in index.linker.mentions(text) if m.entry in by_entry]  # type: ignore[attr-defined]
    # a word several offers share ("nara") is the recently recommended one's
    recent_ids = {o.index for o in recent}
    chosen: dict[int, tuple[int, float]] = {}
    for m in mentions:
        rivals = [r for r in mentions if (r.start, r.end) == (m.start, m.end)]
        if len(rivals) > 1 and recent_ids and m.entry not in recent_ids and any(r.entry in recent_ids for r in rivals):
            continue
        if m.how == "whole" or m.score >= 0.6:
            chosen.setdefault(m.entry, (m.start, m.score))
    if not chosen:
        finding = index.search(text)  # type: ignore[attr-defined]
        for hit in finding.hits[:3]:
            if hit.index in by_entry and (hit.answer_dense >= _REFERENCE_MIN or hit.dense >= _REFERENCE_MIN + 0.1):
                chosen[hit.index] = (0, hit.dense)
                break
    offers = tuple(by_entry[i] for i, _ in sorted(chosen.items(), key=lambda kv: kv[1][0]))
    return Named(offers, bool(_DEICTIC.search(text)))
