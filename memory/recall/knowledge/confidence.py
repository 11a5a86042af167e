"""How sure the knowledge is of an answer: one threshold per signal, tuned on the development
questions (bench/questions/*.yaml, bench/knowledge.py --calibrate) and reported on the blind sets
(bench/blind/), never tuned there.

The signals of the best entry for a question:
- ``dense``: the best cosine of the question with one of its units (names, sentences);
- ``lexical``: its best unit's BM25 score;
- ``named``: how the question names it (1 whole, less in part or by sound; 0 not at all);
- ``coverage``: the share of the asking words it holds, by word, stem, name or another way of
  saying it (``SYNONYM_MIN``: word vectors);
- ``unknown``: asking words no entry of the shop has that name a thing ("Hiroshima", "ramen");
- ``kind_held``: the entry has a sentence of the kind asked (a time for "when", a price for
  "how much").
The knowledge **answers** when nothing unknown is asked, the entry holds the kind and the words
(coverage at least ``COVERAGE_MIN``), and one sign says it is the entry meant: its name said, its
meaning near (``DENSE_MIN``), its words (``LEXICAL_MIN``), or every asking word in its answering
sentence (at least ``HELD_WORDS_MIN`` of them). It answers **in part** (a near miss)
when the question names the entry but asks what it does not hold: a kind it has no sentence of,
or a word it lacks ("a child fare" of an entry with one fare). Otherwise it holds **nothing**.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.recall.knowledge.kinds import Kind, Question

DENSE_MIN = 0.50  # cosine of all-MiniLM-L6-v2 between the question and the entry's answering sentence
LEXICAL_MIN = 4.0  # BM25 of the entry's best unit (bm25s defaults, k1 1.5, b 0.75)
NAMED_MIN = 0.6  # a name said whole (1.0), or enough of it (linking.PART_MIN and up)
COVERAGE_MIN = 0.5  # share of the asking words the answering sentence and the entry's names hold
HELD_WORDS_MIN = 2  # all of at least this many asking words held by one sentence: it is the entry meant
SYNONYM_MIN = 0.6  # word-vector cosine at which one word is another way to say the other


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


@dataclass(frozen=True)
class Confidence:
    answered: bool
    partial: bool
    why: str  # one line for `robot knowledge search` and the logs
    signals: Signals
    broad: bool = False  # "tell me about Kyoto": a request no one entry answers; the LLM talks, grounded


def judge(s: Signals, q: Question) -> Confidence:
    if q.kind is Kind.ANY and len(q.content) < HELD_WORDS_MIN and s.named < 1.0 and not s.unknown:
        return Confidence(False, False, "a request about something many entries mention: the LLM answers, "
                                        "the entries in its notes", s, broad=True)
    held_all = s.coverage >= 1.0 and len(q.content) >= HELD_WORDS_MIN
    meant = (s.named >= NAMED_MIN or (s.embedded and s.dense >= DENSE_MIN) or s.lexical >= LEXICAL_MIN or held_all
             or s.topic)
    if s.unknown:
        return Confidence(False, False, f"the shop's files have nothing on: {', '.join(s.unknown)}", s)
    if not meant:
        return Confidence(False, False, f"no entry is near enough (meaning {s.dense:.2f} < {DENSE_MIN}, "
                                        f"words {s.lexical:.1f} < {LEXICAL_MIN}, not named)", s)
    if not s.kind_held:
        return Confidence(False, s.named >= NAMED_MIN, f"the entry says no {q.kind.value}", s)
    if s.coverage < COVERAGE_MIN:
        return Confidence(False, s.named >= NAMED_MIN,
                          f"the entry lacks: {', '.join(s.uncovered)} ({s.coverage:.0%} of the words covered)", s)
    how = "named" if s.named >= NAMED_MIN else "by meaning" if s.embedded and s.dense >= DENSE_MIN else "by words"
    return Confidence(True, False, f"answered ({how}; {s.coverage:.0%} of the words covered)", s)
