"""The shop's knowledge, searched for each turn: which entries answer the visitor, and how sure.

Entries (a heading's text or a table's row: anything with ``title``, ``aliases``,
``sentences`` and ``source``, e.g. ``config.knowledge.KnowledgeEntry``) are indexed with
BM25 (``memory/recall/index.py``) over their sentences plus their names and aliases, the
names twice: a visitor names a thing more often than they quote it. A query is the
visitor's words, widened by the groups of ``prompts/knowledge_synonyms.txt`` ("how long"
also looks for "minutes"), plus the places the visitor named before (their profile), which
break ties ("how long is the train?" after "Kyoto and Nara" finds the Nara train).

How sure a finding is comes from the visitor's own words, not the profile's:
- ``unknown``: words of the question (``prompts/question_words.txt`` aside) that no entry
  has, such as "Hiroshima" or "ramen": the knowledge does not hold what was asked;
- ``coverage``: the share of the question's other words that the best entry has (a word
  counts when the entry has it or a word of its synonym group).
``Finding.answered`` is true when the best entry covers the whole question; ``nothing``
when no entry scores at all, or the question names something the knowledge lacks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Protocol, Sequence

from memory.recall.facts import facts_of
from memory.recall.index import LexicalIndex
from memory.core.tokens import count_tokens
from prompts import load_word_list

_PLAIN_WORD = re.compile(r"[a-z0-9']+")
MIN_SCORE = 1.0  # a BM25 score below this is no finding (bench/knowledge.py)
NAME_WEIGHT = 2  # an entry's names and aliases are indexed this many times
# How much the words a question did not say count against those it said: its synonyms'
# ("how much" -> price, fare) and the places the visitor named before.
SYNONYM_WEIGHT, CONTEXT_WEIGHT = 0.3, 0.3
RERANK = 20  # the best entries by score, ranked again by how much of the question each holds
MIN_COVERAGE = 0.7  # below this share of the question's words in the best entry: no answer


class Entry(Protocol):
    title: str
    aliases: tuple[str, ...]
    sentences: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float
    index: int  # its position in the knowledge


@dataclass(frozen=True)
class Finding:
    """What the knowledge holds for one question."""

    hits: tuple[Hit, ...]  # best first, each scoring at least MIN_SCORE
    coverage: float  # share of the question's words the best entry has (0 when none)
    unknown: tuple[str, ...]  # words of the question no entry has
    query: str = ""
    wanted: frozenset[str] = field(default_factory=frozenset)  # the question's stems, widened by synonyms
    strange: bool = False  # a word of the question is in no entry (a name or not)

    @property
    def best(self) -> Hit | None:
        return self.hits[0] if self.hits else None

    @property
    def nothing(self) -> bool:
        """The knowledge holds no answer: no entry matches and a word of the question is in none,
        too little of the question is covered, or it names something no entry has."""
        if not self.hits:  # every word in many entries scores nothing ("tell me about Kyoto"): not unknown
            return self.strange
        return bool(self.unknown) or self.coverage < MIN_COVERAGE

    @property
    def answered(self) -> bool:
        """An entry holds what was asked: the best one covers at least ``MIN_COVERAGE`` of the
        question, which names nothing the knowledge lacks."""
        return not self.nothing


class KnowledgeIndex:
    """The entries of a persona's knowledge files, indexed once (at load, or a persona switch)."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = tuple(entries)
        # How a question is asked says nothing of what it is about: its words are no search terms
        # (the synonym groups catch "how much" and "how long" before they are dropped).
        from bm25s.stopwords import STOPWORDS_EN

        self._index = LexicalIndex([_indexed_text(e) for e in self.entries],
                                   stopwords=[*STOPWORDS_EN, *_question_words()])
        self._groups = _synonym_groups(self._index)

    def __len__(self) -> int:
        return len(self.entries)

    def search(self, question: str, context: Iterable[str] = (), k: int = 5) -> Finding:
        """The entries for ``question`` (the visitor's words); ``context``: words that may help
        rank (the places the visitor named before), never counted as asked."""
        stems = self._index.stems(question)
        said = set(self._index.stems(question, all_words=True))  # "where", "when": they widen too
        wanted = set(stems)
        lowered = " " + " ".join(_PLAIN_WORD.findall(question.lower())) + " "
        phrased: list[frozenset[str]] = []  # groups asked by a phrase ("little ones", "call off")
        in_phrases: set[str] = set()
        for phrases, triggers, group in self._groups:
            matched = [p for p in phrases if p in lowered]
            if said & triggers or matched:
                wanted |= group
            if matched:
                phrased.append(group)
                in_phrases |= {s for p in matched for s in self._index.stems(p, all_words=True)}
        asked = [s for s in dict.fromkeys(stems) if s not in in_phrases]
        named = {n.lower() for n in facts_of(question).names}
        unknown = tuple(s for s, w in zip(stems, self._index.words(question))
                        if w in named and not self._index.known(s) and not self._in_group(s))
        scores = self._index.scores(stems)
        for part, weight in ((sorted(wanted - set(stems)), SYNONYM_WEIGHT),
                             ([s for w in context for s in self._index.stems(w)], CONTEXT_WEIGHT)):
            more = self._index.scores(part)
            if more is not None:
                scores = weight * more if scores is None else scores + weight * more
        ranked = [] if scores is None else [(d, s) for d, s in self._index.best(scores, RERANK) if s >= MIN_SCORE]
        # The entry that holds the most of what was asked first; the score breaks ties.
        covered = {d: self._coverage(asked, d, phrased) for d, _ in ranked}
        ranked.sort(key=lambda ds: (-round(covered[ds[0]], 2), -ds[1]))
        hits = tuple(Hit(self.entries[d], s, d) for d, s in ranked[:k])
        coverage = covered[hits[0].index] if hits else 0.0
        strange = any(not self._index.known(s) and not self._in_group(s) for s in asked)
        return Finding(hits, coverage, unknown, question, frozenset(wanted), strange or not asked)

    def _in_group(self, stem: str) -> bool:
        return any(stem in group for _, _, group in self._groups)

    def _coverage(self, asked: Sequence[str], doc: int, phrased: Sequence[frozenset[str]] = ()) -> float:
        """A word of the question the entry has counts 1; one it has only a synonym of, half; a
        phrase of a synonym group ("little ones") counts 1 when the entry has a word of the group."""
        if not asked and not phrased:
            return 1.0
        has = self._index.doc_stems(doc)
        covered = sum(1.0 for g in phrased if g & has)
        for stem in asked:
            groups = [g for _, _, g in self._groups if stem in g]
            covered += 1.0 if stem in has else 0.5 if any(g & has for g in groups) else 0.0
        return covered / (len(asked) + len(phrased))

    def best_sentences(self, hit: Hit, finding: Finding) -> list[str]:
        """The entry's sentences to say, the one that best answers the question first (the most
        of the question's words and synonyms), then the others in the entry's order."""
        sentences = list(hit.entry.sentences)
        if len(sentences) < 2:
            return sentences
        # The kinds of fact asked (the synonym groups: price, time, place) pick the sentence; then
        # the question's own words that are not the entry's name (every sentence may name it);
        # then how many of the groups' words it has.
        title = set(self._index.stems(hit.entry.title))
        own = set(self._index.stems(finding.query)) - title
        asked_groups = [g for _, _, g in self._groups if g <= finding.wanted]
        stems = [set(self._index.stems(s)) for s in sentences]

        def rank(i: int) -> tuple[int, int, int, int]:
            return (sum(bool(stems[i] & g) for g in asked_groups), len(stems[i] & own),
                    len(stems[i] & (finding.wanted - own)), -i)


        best = max(range(len(sentences)), key=rank)
        return [sentences[best]] + [s for i, s in enumerate(sentences) if i != best]

    def notes(self, finding: Finding, max_tokens: int) -> tuple[str, list[Hit]]:
        """The found entries as lines for the reply prompt, best first, within ``max_tokens``
        (characters / 4); the hits shown."""
        lines, shown, used = [], [], 0
        for hit in finding.hits:
            line = f"- {hit.entry.title}: {' '.join(hit.entry.sentences)}"
            tokens = count_tokens(line) + 1
            if used + tokens > max_tokens:
                continue
            lines.append(line)
            shown.append(hit)
            used += tokens
        if not lines:
            return "", []
        return "From the shop's own information:\n" + "\n".join(lines), shown

    def names(self) -> list[str]:
        """Every entry's title and aliases (a shop's names for its things), in order."""
        return list(dict.fromkeys(n for e in self.entries for n in (e.title, *e.aliases)))


def _indexed_text(entry: Entry) -> str:
    names = " ".join((entry.title, *entry.aliases))
    return " ".join([names] * NAME_WEIGHT + list(entry.sentences))


@lru_cache(maxsize=1)
def _question_words() -> tuple[str, ...]:
    return tuple(w for line in load_word_list("question_words") for w in line.split())


@lru_cache(maxsize=1)
def _synonym_lines() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """Each group as (the words that ask for it, the words it also searches for)."""
    groups = []
    for line in load_word_list("knowledge_synonyms"):
        asks, _, more = line.partition(";")
        groups.append((tuple(w.strip().lower() for w in asks.split(",") if w.strip()),
                       tuple(w.strip().lower() for w in more.split(",") if w.strip())))
    return tuple(groups)


def _synonym_groups(index: LexicalIndex) -> list[tuple[tuple[str, ...], frozenset[str], frozenset[str]]]:
    """Each group as (its asking phrases of several words, padded for a whole-word test; the
    stems of its single asking words; the stems of all its words)."""
    groups = []
    for asks, more in _synonym_lines():
        triggers = frozenset(s for w in asks if " " not in w for s in index.stems(w, all_words=True))
        stems = frozenset(s for w in (*asks, *more) for s in index.stems(w, all_words=True))
        phrases = tuple(f" {w} " for w in asks if " " in w)
        groups.append((phrases, triggers, stems))
    return groups


def p95(values: Sequence[float]) -> float:
    ranked = sorted(values)
    return ranked[max(0, math.ceil(0.95 * len(ranked)) - 1)] if ranked else 0.0
