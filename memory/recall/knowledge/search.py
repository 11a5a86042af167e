"""The shop's knowledge, searched for each turn: which entries answer the visitor, which
sentence says it, and how sure that is.

Every entry is indexed as units: each of its names (title and each alias, apart: an alias never
lengthens the entry's text), each of its sentences (with the entry's title in front: "Kinkaku-ji:
Plan about 1 hour"), so one detail in a long entry is found by itself. A question is searched
three ways, and the entries are ranked by reciprocal rank fusion of the three:
- **by words**: BM25 (bm25s, Snowball stems) over the units, plus the visitor's places at a third
  of the weight (they break ties: "how long is the train?" after "Kyoto and Nara");
- **by meaning**: the cosine of the question's sentence embedding with each unit's
  (all-MiniLM-L6-v2, ``memory/recall/embedding.py``), when the runtime gives an embedder;
- **by name**: the entries whose names the question says, whole, in part or by sound
  (``linking.py``).
The entry's sentence said is the one that holds the kind of answer asked (``kinds.py``: "when"
wants a time) and is nearest the question; ``confidence.py`` decides, from calibrated signals,
whether the knowledge answers, answers in part (a near miss: "a child fare" where the files hold
only the adult's), or holds nothing.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from memory.core.tokens import count_tokens
from memory.recall.facts import is_common_word
from memory.recall.index import LexicalIndex
from memory.recall.knowledge.confidence import Confidence, Signals, judge, probability
from memory.recall.knowledge.kinds import Kind, Question, asking_clauses, comparison_in, kind_of, kind_words
from memory.recall.knowledge.linking import Mention, NameLinker, tokens
from memory.recall.knowledge.reading import Entry, SentenceReader, plain_words, question_words
from memory.recall.knowledge.vectors import cached_embed

if TYPE_CHECKING:
    from memory.recall.embedding import Embedder
    from memory.recall.knowledge.wordnet import WordNet

log = logging.getLogger(__name__)
CONTEXT_WEIGHT = 0.3  # the visitor's places, against the words they said
OTHER_WORDS_WEIGHT = 0.5  # the files' words for a word of the visitor's they lack (WordNet: "loos" -> toilet)
RRF_K = 10  # reciprocal rank fusion: a small shop's top few ranks must count for much
TOP = 20
RERANK = 8  # the best entries by fused rank, ranked again by how well their answering sentence fits
MENTIONS = 8  # the names a question says, best first, that are weighed (a shop of 5,000 rows repeats names)
# Units embedded at most: about two minutes of one core at a shop's first start (cached after).
# A larger shop is searched by words and names only; its dense search would cost hours of the
# cores its replies need (100,000 entries are 845,000 units).
MAX_DENSE_UNITS = 20_000
OPEN_KINDS = (Kind.YESNO, Kind.ANY, Kind.HOW, Kind.WHAT, Kind.WHO)  # any sentence may answer these


@dataclass(frozen=True)
class Unit:
    entry: int
    sentence: int | None  # None: a name unit (title or alias)
    text: str


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float  # fused rank score
    index: int  # its position in the knowledge
    dense: float = 0.0  # the best cosine of the question with one of its units
    lexical: float = 0.0  # its best unit's BM25 score
    named: Mention | None = None
    sentence: int = 0  # the sentence that answers
    answer_dense: float = 0.0  # the question's cosine with that sentence
    coverage: float = 0.0  # the share of the asking words that sentence and the entry's names hold
    lacking: tuple[str, ...] = ()  # the asking words they lack
    kind_fit: float = 0.0  # that sentence holds the kind of answer asked
    payer: tuple[str, ...] = ()  # a price asked for someone ("a child") its sentence has no price for


@dataclass(frozen=True)
class Finding:
    """What the knowledge holds for one question."""

    question: Question
    hits: tuple[Hit, ...]  # best first
    confidence: Confidence
    named: tuple[Hit, ...] = ()  # the entries the question names, in the order said (two-entry questions)
    query: str = ""
    heard: str = ""  # the words as heard, when the question was searched respelled (a misheard name)
    signals: tuple[Signals, ...] = ()  # each hit's, in the order of ``hits``

    @property
    def best(self) -> Hit | None:
        return self.hits[0] if self.hits else None

    @property
    def answered(self) -> bool:
        return self.confidence.answered

    @property
    def partial(self) -> bool:
        """The entry asked about is there, but not what was asked of it (a near miss)."""
        return self.confidence.partial

    @property
    def nothing(self) -> bool:
        return not self.answered and not self.partial and not self.confidence.broad

    @property
    def coverage(self) -> float:
        return self.confidence.signals.coverage

    @property
    def unknown(self) -> tuple[str, ...]:
        return self.confidence.signals.unknown


class KnowledgeIndex:
    """The entries of a persona's knowledge files, indexed once (at load, or a persona switch).
    ``embedder``: sentence embeddings (None: by words and names only); ``words``: word vectors for
    "another way to say it"; ``cache``: a folder where unit vectors are kept between starts."""

    def __init__(self, entries: Sequence[Entry], embedder: "Embedder | None" = None, words: "Embedder | None" = None,
                 cache: Path | None = None) -> None:
        from bm25s.stopwords import STOPWORDS_EN

        self.entries = tuple(entries)
        self.units = [u for i, e in enumerate(self.entries) for u in _units_of(i, e)]
        self._unit_entry = np.array([u.entry for u in self.units], dtype=np.int64)
        self._units_of = [np.flatnonzero(self._unit_entry == i) for i in range(len(self.entries))]
        self._sentence_units = {(u.entry, u.sentence): n for n, u in enumerate(self.units) if u.sentence is not None}
        self._function_words = frozenset([*STOPWORDS_EN, *question_words()])
        self._lex = LexicalIndex([u.text for u in self.units], stopwords=sorted(self._function_words))
        names = [(i, n) for i, e in enumerate(self.entries) for n in (e.title, *e.aliases)]
        self.linker = NameLinker(names, common=frozenset(w for w in {t for _, n in names for t in tokens(n)}
                                                          if is_common_word(w) or w in self._function_words),
                                 dictionary=lambda w: is_common_word(w) or w in self._function_words,
                                 skip=self._function_words)
        self.reader = SentenceReader(self.entries, self._lex, self._function_words, self.linker.dictionary, words)
        self.embedder, self.words, self.cache = embedder, words, cache
        self.wordnet: "WordNet | None" = None  # read by ``embed``, in the background
        self._vectors: np.ndarray | None = None  # one row per unit, once embedded
        self._entry_vectors: np.ndarray | None = None  # one row per entry: its names and sentences together
        self._queries: dict[str, np.ndarray] = {}  # this turn's texts, embedded together (prepare)
        self._ready = threading.Event()
        self._stop = threading.Event()  # the robot stops: the embedding ends at its next batch
        self.lock = threading.RLock()  # searches come from worker threads: one at a time
        if embedder is None:
            self._ready.set()

    def __len__(self) -> int:
        return len(self.entries)

    # --- building ------------------------------------------------------------------------

    def embed(self) -> None:
        """Embed every unit (and the entries' words): seconds for thousands of entries, so the
        runtime calls it in a thread at start; until it is done the search goes by words and
        names. Vectors are kept in ``cache`` by their text, so the next start reads them."""
        try:
            if self.embedder is not None or self.words is not None:  # the robot's understanding is wanted
                from memory.recall.knowledge.wordnet import shared

                self.wordnet = shared()
            if self.embedder is not None and len(self.units) > MAX_DENSE_UNITS:
                log.warning("the knowledge has %d entries (%d sentences and names), more than %d to embed: it is "
                            "searched by words and names only", len(self.entries), len(self.units), MAX_DENSE_UNITS)
                self.embedder = None
            if self.embedder is not None and self._vectors is None:
                texts = [_dense_text(self, u) for u in self.units] + [_whole(e) for e in self.entries]
                vectors = cached_embed(self.embedder, texts, self.cache, self._stop)
                if vectors is not None:  # both, or neither: a search by meaning needs the two
                    self._entry_vectors = vectors[len(self.units):]
                    self._vectors = vectors[:len(self.units)]
            self.reader.embed_words(stop=self._stop.is_set)
        finally:
            self._ready.set()

    def stop_embedding(self) -> None:
        """End an embedding in progress at its next batch (the search goes on by words and names).
        A thread left inside numpy when the process exits can hang the exit for good: OpenBLAS
        joins its own threads at exit (seen: ``robot run`` never ending after SIGTERM on a busy
        machine, the embedding still running at a lower priority)."""
        self._stop.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def stopping(self) -> bool:
        """The robot stops: nothing more is embedded."""
        return self._stop.is_set()

    # --- reading a question ----------------------------------------------------------------

    def question(self, text: str) -> Question:
        asking = asking_clauses(text)
        said = " ".join(asking)
        kind = kind_of(asking[0]) if asking else Kind.ANY
        said_kind = kind_words(said)
        content = tuple(dict.fromkeys(w for w in plain_words(said)
                                      if w not in self._function_words and w not in said_kind))
        return Question(text, said, kind, comparison_in(said), content, self._other_words(content))

    def _other_words(self, content: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """For each word the files lack, the files' words that say it another way: WordNet's, and
        for the profile's people words their group's ("grown-up": the files' "adult")."""
        out = []
        known = self.reader.known_stems
        for word in content:
            own = self.reader.stems_of(word)
            # "grown-up" is stemmed "grown", "up": words the files may hold without holding it
            group = tuple(st for st in self.reader.people_stems(word) if st in known and st not in own)
            if any(s in known for s in own) and not group:
                continue
            relatives = sorted(self.wordnet.relatives(word)) if self.wordnet is not None else []
            stems = tuple(dict.fromkeys((*group, *(st for r in relatives if r not in self._function_words
                                                   for st in self._lex.stems(r, all_words=True) if st in known))))
            if stems:
                out.append((word, stems))
        return tuple(out)

    # --- searching -----------------------------------------------------------------------------

    def search(self, question: str | Question, context: Iterable[str] = (), topic: Sequence[int] = (),
               k: int = 5) -> Finding:
        """The entries for the visitor's words; ``context``: the places they named before (rank
        only, never counted as asked); ``topic``: the entries the last answer was about, for a
        question that names nothing ("and how long is it?"). A question that finds nothing as
        heard is tried once more with what sounds like one of the shop's names written as it
        ("how much is the naruto" -> "the nara tour": ``linking.NameLinker.respelled``)."""
        with self.lock:
            return self._search_respelled(question, context, topic, k)

    def _search_respelled(self, question: str | Question, context: Iterable[str], topic: Sequence[int],
                          k: int) -> Finding:
        q = question if isinstance(question, Question) else self.question(question)
        found = self._search(q, context, topic, k)
        if found.nothing and q.is_question:
            for anyway in (False, True):
                respelled = self.linker.respelled(q.text, anyway=anyway)
                if respelled:
                    again = self._search(self.question(respelled), context, topic, k)
                    if not again.nothing:
                        return replace(again, heard=q.text)
        return found

    def _search(self, q: Question, context: Iterable[str], topic: Sequence[int], k: int) -> Finding:
        mentions = self.linker.mentions(q.text)[:MENTIONS]
        lexical = self._lexical(q.text, context, [st for _, stems in q.others for st in stems])
        dense = self._dense(q.text)
        by_meaning = self._entry_dense(q.text, dense)
        fused = self._fused(lexical, by_meaning, mentions, topic if not mentions else ())
        by_mention = {m.entry: m for m in mentions}
        candidates = [self._hit(i, fused[i], lexical, dense, by_mention.get(i), q, mentions)
                      for i in sorted(fused, key=lambda i: -fused[i])[:RERANK]]
        # The entry whose answering sentence holds the most of what was asked, of the kind asked,
        # and whose meaning is nearest (the words of a paraphrase are few) comes first ...
        top = max((c.score for c in candidates), default=1.0) or 1.0
        meaning = {c.index: float(by_meaning[c.index]) if by_meaning is not None else 0.0 for c in candidates}
        fit = {c.index: c.score / top + c.coverage + 0.5 * c.kind_fit + c.answer_dense + meaning[c.index]
               for c in candidates}
        unknown = self.reader.unknown(q)
        signals = {c.index: self._signals(q, c, fit, lexical, by_meaning, topic, mentions, unknown) for c in candidates}
        # ... unless the calibrated model, which weighs the same signals as learnt on the development
        # questions, says which is likelier to hold the answer: then its order. A question that
        # names nothing ("and how long does it take?") is about the last answer's entry.
        # the probability is kept with the signals: the verdict below reads it, not computes it again
        signals = {i: replace(sig, probability=probability(sig, q)) for i, sig in signals.items()}
        chance = {i: sig.probability for i, sig in signals.items()}
        candidates.sort(key=lambda c: (not signals[c.index].topic, -(chance[c.index] or 0.0), -fit[c.index]))
        hits = tuple(candidates[:k])
        named = tuple(self._hit(m.entry, fused.get(m.entry, 0.0), lexical, dense, m, q, mentions)
                      for m in sorted(mentions, key=lambda m: m.start) if m.score >= 0.5)
        best = hits[0] if hits else None
        confidence = judge(signals[best.index] if best is not None else Signals(unknown=unknown, uncovered=q.content), q)
        if hits and not (confidence.answered or confidence.partial):
            # Not sure of the best: a thing the question names whole may still be answered, or
            # answered in part ("the Haruka ticket for a child": the files have the Haruka's adult
            # fare, and "Children and discounts" is nearer in meaning).
            for other in hits[1:]:
                if other.named is not None and other.named.score >= 1.0:
                    again = judge(signals[other.index], q)
                    if again.answered or again.partial:
                        hits, confidence = (other, *[h for h in hits if h is not other]), again
                    break
        return Finding(q, hits, confidence, named, q.text, signals=tuple(signals[h.index] for h in hits))

    def _entry_dense(self, text: str, dense: np.ndarray | None) -> np.ndarray | None:
        """How near each entry is the question in meaning (None without vectors): the cosine of
        its nearest unit (one detail: "is the garden path flat?") plus the cosine of the entry
        read whole (what it is about: "the lesson where you make your own lunch" is near no one
        sentence of the cooking class, and near the class as a whole). On the development sets
        the sum ranked the right entry first 228 times of 266, the nearest unit alone 217, the
        entry whole 222."""
        if dense is None or self._entry_vectors is None:
            return None
        best = np.full(len(self.entries), -1.0)
        np.maximum.at(best, self._unit_entry, dense)
        return best + self._entry_vectors @ self._query_vector(text)

    def _lexical(self, text: str, context: Iterable[str], others: Sequence[str] = ()) -> dict[int, float]:
        """Each entry's best unit's BM25 score for the words, its places' score a third, the files'
        words for what the visitor said another way (``others``) at ``OTHER_WORDS_WEIGHT``."""
        scores = self._lex.scores(self._lex.stems(text))
        places = [s for w in context for s in self._lex.stems(w)]
        for weight, stems in ((CONTEXT_WEIGHT, places), (OTHER_WORDS_WEIGHT, list(others))):
            more = self._lex.scores(stems) if stems else None
            if more is not None:
                scores = weight * more if scores is None else scores + weight * more
        if scores is None:
            return {}
        best = np.zeros(len(self.entries))
        np.maximum.at(best, self._unit_entry, scores)
        return {i: float(s) for i, s in enumerate(best) if s > 0}

    def _dense(self, text: str) -> np.ndarray | None:
        """The question's cosine with every unit (None until embedded, or without a model)."""
        if self._vectors is None or self.embedder is None:
            return None
        return self._vectors @ self._query_vector(text)

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed the texts one turn will search (the question, its clauses, the things it names)
        in one pass: a batch costs little more than one, and each pass has its overhead. Kept
        until the next ``prepare`` only: no visitor's words stay in memory longer."""
        self._queries = {}
        self.reader.new_turn()  # the visitor's words are this turn's only
        if self._vectors is None or self.embedder is None:
            return
        wanted = list(dict.fromkeys(t for t in texts if t))
        self._queries = dict(zip(wanted, self.embedder.embed(wanted)))

    def _query_vector(self, text: str) -> np.ndarray:
        if (v := self._queries.get(text)) is None:
            v = self.embedder.embed([text])[0]  # type: ignore[union-attr]
        return v

    def _fused(self, lexical: dict[int, float], by_meaning: np.ndarray | None, mentions: list[Mention],
               topic: Sequence[int]) -> dict[int, float]:
        rankings: list[list[int]] = [sorted(lexical, key=lambda i: -lexical[i])]
        if by_meaning is not None:
            rankings.append([int(i) for i in np.argsort(-by_meaning)[:TOP]])
        if mentions:
            rankings.append([m.entry for m in mentions])
        if topic:
            rankings.append(list(topic))
        fused: dict[int, float] = {}
        for ranking in rankings:
            for rank, i in enumerate(ranking):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
        for m in mentions:  # a name said whole is a strong sign of what is asked about, not the only one
            fused[m.entry] = fused.get(m.entry, 0.0) + 0.3 * m.score / RRF_K
        return fused

    def _hit(self, i: int, score: float, lexical: dict[int, float], dense: np.ndarray | None, mention: Mention | None,
             q: Question, mentions: Sequence[Mention] = ()) -> Hit:
        units = self._units_of[i]
        best_dense = float(dense[units].max()) if dense is not None and len(units) else 0.0
        j = self._answering(i, q, dense, mentions)
        unit = self._sentence_units.get((i, j))
        answer_dense = float(dense[unit]) if dense is not None and unit is not None else 0.0
        coverage, lacking = self.reader.covered(q, i, j, mentions)
        who: tuple[str, ...] = ()
        if q.kind is Kind.PRICE and (who := self.reader.payer_lacking(q, i, j)):
            coverage, lacking = 0.0, tuple(dict.fromkeys((*who, *lacking)))  # "a child's fare" of a fare for all
        kind_fit = 1.0 if q.kind in OPEN_KINDS or (self.entries[i].sentences and q.kind.value in self.reader.kinds(i, j)) else 0.0
        return Hit(self.entries[i], score, i, best_dense, lexical.get(i, 0.0), mention, j, answer_dense,
                   coverage, lacking, kind_fit, who)

    def _answering(self, i: int, q: Question, dense: np.ndarray | None, mentions: Sequence[Mention] = ()) -> int:
        """The sentence of entry ``i`` that answers: it holds the kind asked, then the most of the
        question's words, then is nearest the question in meaning; the first when nothing tells."""
        sentences = self.entries[i].sentences
        if len(sentences) < 2:
            return 0
        asked = set(self._lex.stems(q.asking or q.text, all_words=True)) - set(self._lex.stems(self.entries[i].title))
        scores = []
        for j, sentence in enumerate(sentences):
            kind_fit = 1.0 if q.kind.value in self.reader.kinds(i, j) else 0.0
            unit = self._sentence_units.get((i, j))
            meaning = float(dense[unit]) if dense is not None and unit is not None else 0.0
            covered, _ = self.reader.covered(q, i, j, mentions)
            words = len(asked & set(self._lex.stems(sentence))) / max(len(asked), 1)  # "include" for "what's included"
            scores.append((kind_fit, covered + meaning + words, -j))
        return max(range(len(sentences)), key=lambda j: scores[j])

    # --- how sure ----------------------------------------------------------------------------

    def _signals(self, q: Question, hit: Hit, fit: dict[int, float], lexical: dict[int, float],
                 by_meaning: np.ndarray | None, topic: Sequence[int], mentions: Sequence[Mention],
                 unknown: tuple[str, ...]) -> Signals:
        """What the search knows of one candidate entry for the question (``confidence.Signals``)."""
        kinds = {k for j in range(len(hit.entry.sentences)) for k in self.reader.kinds(hit.index, j)}
        kind_held = q.kind in OPEN_KINDS or q.kind.value in kinds
        signals = Signals(dense=hit.answer_dense, entry_dense=hit.dense, entry_coverage=self.reader.entry_covered(q, hit.index, hit.named),
                          lexical=hit.lexical, named=hit.named.score if hit.named else 0.0, coverage=hit.coverage,
                          uncovered=hit.lacking, unknown=unknown, kind_held=kind_held,
                          embedded=self._vectors is not None, payer=hit.payer,
                          **_agreement(hit.index, fit, lexical, by_meaning))
        if not mentions and not q.content and hit.index in topic:
            signals = replace(signals, topic=True)  # "and how long does it take?" of the last answer
        return signals

    def closest(self, text: str, among: Sequence[str]) -> tuple[str, float] | None:
        """Of the shop's sentences ``among``, the nearest ``text`` in meaning, and the cosine."""
        if self._vectors is None or self.embedder is None or not among:
            return None
        wanted = set(among)
        units = [n for n, u in enumerate(self.units) if u.sentence is not None
                 and self.entries[u.entry].sentences[u.sentence] in wanted]
        if not units:
            return None
        scores = self._vectors[units] @ self._query_vector(text)
        best = int(np.argmax(scores))
        u = self.units[units[best]]
        return self.entries[u.entry].sentences[u.sentence], float(scores[best])  # type: ignore[index]

    # --- what is said ----------------------------------------------------------------------------

    def best_sentences(self, hit: Hit, finding: Finding | None = None) -> list[str]:
        """The entry's sentences to say: the one that answers first, then the others in order."""
        sentences = list(hit.entry.sentences)
        j = min(hit.sentence, len(sentences) - 1) if sentences else 0
        return sentences[j:j + 1] + [s for n, s in enumerate(sentences) if n != j]

    def notes(self, finding: Finding, max_tokens: int) -> tuple[str, list[Hit]]:
        """The found entries as lines for the reply prompt, best first, within ``max_tokens``."""
        lines, shown, used = [], [], 0
        for hit in finding.hits:
            line = f"- {hit.entry.title}: {' '.join(hit.entry.sentences)}"
            tokens_ = count_tokens(line) + 1
            if used + tokens_ > max_tokens:
                continue
            lines.append(line)
            shown.append(hit)
            used += tokens_
        if not lines:
            return "", []
        return "From the shop's own information:\n" + "\n".join(lines), shown

    def names(self) -> list[str]:
        """Every entry's title and aliases (a shop's names for its things), in order."""
        return list(dict.fromkeys(n for e in self.entries for n in (e.title, *e.aliases)))


def _agreement(best: int, fit: dict[int, float], lexical: dict[int, float],
               by_meaning: np.ndarray | None) -> dict[str, object]:
    """How clearly the entry ``best`` stands out: its lead over the nearest other entry by the
    rerank's fit, and whether the search by meaning and the search by words each put it first
    (each alone is a weak sign; together, with a lead, the entry is the one meant even when few
    words match)."""
    others = [v for i, v in fit.items() if i != best]
    lead = fit.get(best, 0.0) - (max(others) if others else 0.0)
    out: dict[str, object] = {"lead": float(lead), "first_by_words": bool(lexical) and max(lexical, key=lexical.__getitem__) == best}
    if by_meaning is not None and len(by_meaning):
        order = np.argsort(-by_meaning)
        out["first_by_meaning"] = int(order[0]) == best
        out["meaning_lead"] = float(by_meaning[best] - (by_meaning[order[1]] if int(order[0]) == best and len(order) > 1
                                                        else by_meaning[order[0]]))
    return out


def _units_of(i: int, entry: Entry) -> list[Unit]:
    units = [Unit(i, None, n) for n in dict.fromkeys((entry.title, *entry.aliases))]
    # A sentence that does not name its entry ("Plan about 1 hour") is read with its title in front.
    units += [Unit(i, j, s if entry.title.lower() in s.lower() else f"{entry.title}: {s}")
              for j, s in enumerate(entry.sentences)]
    return units


def _dense_text(index: KnowledgeIndex, unit: Unit) -> str:
    return unit.text


def _whole(entry: Entry) -> str:
    """An entry as one text, for its sentence vector: what it is about (the model reads the first
    256 word pieces; a long entry's title and first sentences are what it sees)."""
    return ". ".join((entry.title, *entry.aliases, *entry.sentences))


def p95(values: Sequence[float]) -> float:
    ranked = sorted(values)
    return ranked[max(0, math.ceil(0.95 * len(ranked)) - 1)] if ranked else 0.0
