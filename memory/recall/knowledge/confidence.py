"""How sure the knowledge is of an answer: a calibrated probability that the entry's sentence
said answers the question, from the search's signals, fitted on the development questions
(bench/questions/*.yaml: ``bench/knowledge_calibrate.py`` writes ``calibration.json``) and
reported on the blind sets (bench/blind/), never fitted there.

The signals of the best entry for a question:
- ``dense``: the question's cosine with the entry's answering sentence; ``entry_dense``: with
  the nearest of its units (names, sentences); ``meaning_lead``: how far that is ahead of the
  next entry's (below 0: another entry is nearer);
- ``lexical``: its best unit's BM25 score; ``first_by_words`` / ``first_by_meaning``: each
  search alone ranks it first; ``lead``: its lead over the second entry in the final ranking;
- ``named``: how the question names it (1 whole, less in part or by sound; 0 not at all);
- ``coverage``: the share of the asking words its answering sentence holds, by word, stem, name
  or another way of saying it (``SYNONYM_MIN``: word vectors; WordNet's synonyms and broader
  words, ``wordnet.py``); ``entry_coverage``: the share the whole entry holds;
- ``unknown``: asking words no entry of the shop has that name a thing ("Hiroshima", "ramen");
- ``kind_held``: the entry has a sentence of the kind asked (a time for "when", a price for
  "how much"); ``payer``: a price asked for someone its sentence prices nothing for.

Why a fitted combination and not one threshold per signal: a paraphrase ("the lesson where you
make your own lunch") matches few words and sits at a modest cosine (0.40 with the cooking class)
while being first by meaning *and* by the rerank, with a lead; no single signal's threshold
separates it from a question the files cannot answer, their agreement does. The model is a
logistic regression on standardized signals (a dozen weights, shown by ``robot knowledge search``).

Rules stand before it, because no score may overrule them: a question that names nothing
("and how long does it take?") asks about the last answer's entry; an entry that holds no sentence
of the kind asked, or no price for whom it is asked, answers only **in part** (a near miss: it
says what the files hold, and hands over for the rest) when the question names it, otherwise
nothing. Before the sentence vectors exist (the first seconds of a new shop, or a shop too large
to embed) the search goes by words and names, judged by the thresholds below.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from memory.recall.knowledge.kinds import Kind, Question

DENSE_MIN = 0.50  # cosine of all-MiniLM-L6-v2 between the question and the entry's answering sentence
LEXICAL_MIN = 4.0  # BM25 of the entry's best unit (bm25s defaults, k1 1.5, b 0.75)
NAMED_MIN = 0.6  # a name said whole (1.0), or enough of it (linking.PART_MIN and up)
COVERAGE_MIN = 0.5  # share of the asking words the answering sentence and the entry's names hold
HELD_WORDS_MIN = 2  # all of at least this many asking words held by one sentence: it is the entry meant
SYNONYM_MIN = 0.6  # word-vector cosine at which one word is another way to say the other
CALIBRATION = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Signals:
    dense: float = 0.0
    lexical: float = 0.0
    named: float = 0.0
    coverage: float = 0.0
    uncovered: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    kind_held: bool = False
    topic: bool = False  # the entry is the last answer's and the question names nothing else ("and how long?")
    embedded: bool = False  # the sentence vectors were there (not while they are still being built)
    entry_dense: float = 0.0
    meaning_lead: float = 0.0
    first_by_meaning: bool = False
    first_by_words: bool = False
    lead: float = 0.0
    payer: tuple[str, ...] = ()
    entry_coverage: float = 0.0  # the share of the asking words the entry holds anywhere
    probability: float | None = None  # the calibrated model's, once judged with vectors


def features(s: Signals, q: Question) -> list[float]:
    """The model's inputs, in ``Calibration.names`` order."""
    return [s.dense, s.entry_dense, s.meaning_lead, float(s.first_by_meaning), math.log1p(max(s.lexical, 0.0)),
            float(s.first_by_words), s.lead, s.named, s.coverage, float(bool(s.unknown)), min(len(q.content), 6) / 6,
            s.entry_coverage, float(s.first_by_meaning and s.first_by_words), float(s.kind_held), float(bool(s.payer))]


FEATURES = ("dense", "entry_dense", "meaning_lead", "first_by_meaning", "log_lexical", "first_by_words", "lead",
            "named", "coverage", "unknown", "content_words", "entry_coverage", "first_by_both", "kind_held", "payer")


@dataclass(frozen=True)
class Calibration:
    """A logistic regression over ``features``: p = 1 / (1 + exp(-(b + w . (x - mean) / scale)))."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float  # the probability at which the knowledge answers

    def probability(self, x: Sequence[float]) -> float:
        z = self.bias + sum(w * (v - m) / sd for w, v, m, sd in zip(self.weights, x, self.mean, self.scale))
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    @classmethod
    def read(cls, path: Path = CALIBRATION) -> "Calibration":
        data = json.loads(path.read_text(encoding="utf-8"))
        if tuple(data["names"]) != FEATURES:
            raise ValueError(f"{path} was fitted on other signals ({data['names']}): run bench/knowledge_calibrate.py")
        return cls(tuple(data["names"]), tuple(data["mean"]), tuple(data["scale"]), tuple(data["weights"]),
                   float(data["bias"]), float(data["threshold"]))


@lru_cache(maxsize=1)
def calibration() -> Calibration:
    return Calibration.read()


@dataclass(frozen=True)
class Confidence:
    answered: bool
    partial: bool
    why: str  # one line for `robot knowledge search` and the logs
    signals: Signals
    broad: bool = False  # "tell me about Kyoto": a request no one entry answers; the LLM talks, grounded


def probability(s: Signals, q: Question) -> float | None:
    """The calibrated chance that this entry's answer is the right one; None where the model
    does not judge (no sentence vectors yet)."""
    return calibration().probability(features(s, q)) if s.embedded else None


def judge(s: Signals, q: Question) -> Confidence:
    if q.kind is Kind.ANY and len(q.content) < HELD_WORDS_MIN and s.named < 1.0 and not s.unknown:
        return Confidence(False, False, "a request about something many entries mention: the LLM answers, "
                                        "the entries in its notes", s, broad=True)
    named = s.named >= NAMED_MIN
    if s.payer:
        return Confidence(False, named, f"the entry has no price for: {', '.join(s.payer)}", s)
    if not s.kind_held:
        return Confidence(False, named, f"the entry says no {q.kind.value}", s)
    if s.topic:
        return Confidence(True, False, "answered (of the last answer's entry: the question names nothing else)", s)
    if not s.embedded:
        return _by_words(s, q)
    model = calibration()
    p = s.probability if s.probability is not None else model.probability(features(s, q))
    s = replace(s, probability=p)
    if p >= model.threshold:
        return Confidence(True, False, f"answered (p {p:.2f} >= {model.threshold:.2f}; {_how(s)}; "
                                       f"{s.coverage:.0%} of the words covered)", s)
    lacks = f"; lacks: {', '.join(s.uncovered)}" if s.uncovered else ""
    unknown = f"; nothing on: {', '.join(s.unknown)}" if s.unknown else ""
    return Confidence(False, named, f"not sure enough (p {p:.2f} < {model.threshold:.2f}; {_how(s)}{lacks}{unknown})", s)


def _how(s: Signals) -> str:
    firsts = [w for w, first in (("meaning", s.first_by_meaning), ("words", s.first_by_words)) if first]
    return (f"meaning {s.dense:.2f}, words {s.lexical:.1f}" + (", named" if s.named >= NAMED_MIN else "")
            + (f", first by {' and '.join(firsts)}" if firsts else ""))


def _by_words(s: Signals, q: Question) -> Confidence:
    """Without sentence vectors: the entry is meant when named, found by its words or holding every
    asking word, and answers when it holds at least ``COVERAGE_MIN`` of them."""
    held_all = s.coverage >= 1.0 and len(q.content) >= HELD_WORDS_MIN
    meant = s.named >= NAMED_MIN or s.lexical >= LEXICAL_MIN or held_all or s.topic
    if s.unknown:
        return Confidence(False, False, f"the shop's files have nothing on: {', '.join(s.unknown)}", s)
    if not meant:
        return Confidence(False, False, f"no entry is near enough (words {s.lexical:.1f} < {LEXICAL_MIN}, not named; "
                                        "searched by words only)", s)
    if s.coverage < COVERAGE_MIN:
        return Confidence(False, s.named >= NAMED_MIN,
                          f"the entry lacks: {', '.join(s.uncovered)} ({s.coverage:.0%} of the words covered)", s)
    how = "named" if s.named >= NAMED_MIN else "by words"
    return Confidence(True, False, f"answered ({how}; {s.coverage:.0%} of the words covered)", s)
