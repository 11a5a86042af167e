"""What a visitor wants of a consultation in one turn: a recommendation, an offer chosen, the plan
changed, its total, or to book and pay (``prompts/consult_words.txt``); and which offers they name.

An offer is named by what the shop calls it (its title and aliases, whole or in part: "the Nara
one", "the tea tour") and by meaning (the knowledge search: "the shrine walk", "the bamboo one"),
among the offers only; "that one", "it" and "the first one" are the offer the robot recommended
last. Between two offers that fit the words alike, the one recommended last wins.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Sequence

from memory.core.words import words_pattern
from memory.recall.knowledge.kinds import clauses
from memory.recall.knowledge.linking import token_spans
from prompts import load_word_list
from robot.consult.intent_model import IntentModel
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


def intents(text: str, book: OfferBook | None = None, index: object | None = None) -> set[Intent]:
    """What the visitor wants in ``text``: by meaning when the knowledge's sentence model is
    loaded (``intent_model.py``; ``index``: the knowledge's ``KnowledgeIndex``, whose names of
    ``book``'s offers are masked), else by the word lists. Blocking (an embedding): not on the loop."""
    model = intent_model(index)
    if model is None or not model.ready:
        return by_words(text)
    read = model.read(text, _offer_spans(text, book, index), lambda part: {i.value for i in by_words(part)})
    return {Intent(i) for i in read}


def leaning(text: str, book: OfferBook | None = None, index: object | None = None,
            among: Sequence[Intent] = ()) -> Intent | None:
    """The intent of ``among`` (all when empty) that ``text`` leans to by meaning, below the bar of
    ``intents`` (None without the sentence model): for a turn whose context makes that request
    likely. Blocking: not on the loop."""
    model = intent_model(index)
    if model is None or not model.ready:
        return None
    label = model.leaning(text, _offer_spans(text, book, index), [i.value for i in among])
    return None if label is None else Intent(label)


def by_words(text: str) -> set[Intent]:
    """The intents the word lists (``consult_words.txt``) find in ``text``."""
    said = text.lower().replace("’", "'")
    return {intent for intent, pattern in _patterns().items() if pattern.search(said)}


_MODELS: "weakref.WeakKeyDictionary[object, IntentModel]" = weakref.WeakKeyDictionary()


def intent_model(index: object | None) -> IntentModel | None:
    """The intents by meaning on the knowledge's sentence model (None without one): one per model;
    ready once ``warm_intents`` embedded its examples."""
    embedder = getattr(index, "embedder", None)
    if embedder is None:
        return None
    if (model := _MODELS.get(embedder)) is None:
        model = _MODELS[embedder] = IntentModel(embedder)
    return model


def warm_intents(index: object) -> None:
    """Embed the intents' examples now (the knowledge's background thread, after its own vectors),
    so the first consultation turn reads by meaning without waiting."""
    model = intent_model(index)
    if model is not None and not getattr(index, "stopping", False):
        model.warm()


def _offer_spans(text: str, book: OfferBook | None, index: object | None) -> list[tuple[int, int]]:
    """Where ``text`` says an offer's name (whole, in part or by sound), in characters."""
    linker = getattr(index, "linker", None)
    if linker is None or book is None:
        return []
    offers = {o.index for o in book.offers}
    spans = token_spans(text)
    return [(spans[m.start][0], spans[m.end - 1][1]) for m in linker.mentions(text)
            if m.entry in offers and m.end - 1 < len(spans)]


_DEICTIC = re.compile(r"\b(?:that one|this one|the first one|the first|that|it|this|those|them|both)\b", re.IGNORECASE)
_REFERENCE_MIN = 0.45  # the knowledge search's cosine at which words name an offer by meaning
_MARGIN = 0.1  # or a little less, when no other offer comes within this of it


@dataclass(frozen=True)
class Named:
    offers: tuple[Offer, ...]  # in the order said
    deictic: bool  # "that one", "it": the last recommendation
    by_meaning: bool = False  # found by the search, no name said ("the bamboo one", "something with food?")
    # found by words of its name said apart ("the Kyoto and Nara package"): weaker than a name, it
    # is a choice only with words that choose ("we want Kyoto and Nara" names the package's places too)
    apart: bool = False


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
        # a word said in part names an offer when it is the only one of those words among the
        # offers in play ("drop Nara" of a plan with the Nara tour; the package names Nara too)
        only_recent = m.how == "part" and m.entry in recent_ids and sum(r.entry in recent_ids for r in rivals) == 1
        if m.how == "whole" or m.score >= 0.6 or only_recent:
            chosen.setdefault(m.entry, (m.start, m.score))
    if not chosen and recent:
        chosen = _in_play_by_word(text, recent, index)
    meaning, apart = False, False
    if not chosen:
        chosen = _most_name_words(text, book, index)
        apart = bool(chosen)
    if not chosen:
        # the whole turn, then each of its clauses ("...that's most of it gone. Let me have the
        # temple day instead.": the other clause's words dilute the whole turn's meaning)
        parts = [text, *(c for c in clauses(text) if c.strip() != text.strip())]
        for at, part in enumerate(parts):
            if (found := _by_meaning(part, by_entry, index)) is not None:
                chosen[found[0]] = (at, found[1])
                meaning = True
                if at == 0:
                    break
    offers = tuple(by_entry[i] for i, _ in sorted(chosen.items(), key=lambda kv: kv[1][0]))
    return Named(offers, bool(_DEICTIC.search(text)), meaning, apart)


def _by_meaning(text: str, by_entry: dict[int, Offer], index: object) -> tuple[int, float] | None:
    """The offer ``text`` is about by meaning (its entry's index and cosine), if one stands out."""
    finding = index.search(text, k=8)  # type: ignore[attr-defined]
    offers = [h for h in finding.hits if h.index in by_entry]
    # near in meaning, or the one offer clearly nearer than every other ("the bamboo one": the
    # shop's bamboo grove is nearer still, but it is no offer)
    if offers and (offers[0].answer_dense >= _REFERENCE_MIN or offers[0].dense >= _REFERENCE_MIN + 0.1 or (
            offers[0].dense >= _REFERENCE_MIN - 0.05
            and offers[0].dense - max((h.dense for h in offers[1:]), default=0.0) >= _MARGIN)):
        return offers[0].index, offers[0].dense
    return None


def _most_name_words(text: str, book: OfferBook, index: object) -> dict[int, tuple[int, float]]:
    """The offer that has more of the words said in its names than any other, two at least ("the
    Kyoto and Nara package": each place names several offers, and "package" alone no span of the
    package's name, but one offer's name has all three); {} when none stands out."""
    from memory.recall.knowledge.linking import tokens

    said = {w for w in tokens(text) if w not in index.linker.common}  # type: ignore[attr-defined]
    counts = [(len(said & _name_words(offer, index)), offer) for offer in book.offers]
    counts.sort(key=lambda c: -c[0])
    if not counts or counts[0][0] < 2 or (len(counts) > 1 and counts[1][0] == counts[0][0]):
        return {}
    return {counts[0][1].index: (0, 0.5)}


def _in_play_by_word(text: str, in_play: Sequence[Offer], index: object) -> dict[int, tuple[int, float]]:
    """The one offer in play (the plan's, the last recommended) with a word of its names said, a word
    that is no common one ("drop Nara": many of the shop's names say Nara, one offer in the plan
    does). None when no offer, or more than one, has such a word."""
    from memory.recall.knowledge.linking import tokens

    said = {w for w in tokens(text) if w not in index.linker.common}  # type: ignore[attr-defined]
    having = [offer for offer in in_play if said & _name_words(offer, index)]
    return {having[0].index: (0, 0.5)} if len(having) == 1 else {}


def _name_words(offer: Offer, index: object) -> set[str]:
    """The words of an offer's title and aliases, as the linker splits them."""
    from memory.recall.knowledge.linking import tokens

    entry = index.entries[offer.index]  # type: ignore[attr-defined]
    return {w for n in (entry.title, *entry.aliases) for w in tokens(n)}
