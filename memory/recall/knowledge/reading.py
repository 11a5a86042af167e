"""What one entry's sentences hold for one question: the words asked that a sentence says (as the
visitor said them, stemmed, another way by WordNet or by word vectors), the kinds of answer it
states, for whom it gives a price, and which of the visitor's words no entry holds at all.

``search.KnowledgeIndex`` ranks the entries; this reads them. Per-sentence work (stems, word
vectors) is computed once and kept; the visitor's words are kept for one turn only (``new_turn``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Container, Protocol, Sequence

import numpy as np

from memory.core.words import CALENDAR
from memory.recall.facts import facts_of, is_common_word
from memory.recall.index import LexicalIndex
from memory.recall.knowledge.confidence import SYNONYM_MIN
from memory.recall.knowledge.kinds import Question
from memory.recall.knowledge.linking import Mention, tokens
from memory.recall.knowledge.values import holds
from prompts import load_word_list

if TYPE_CHECKING:
    from memory.recall.embedding import Embedder


class Entry(Protocol):
    title: str
    aliases: tuple[str, ...]
    sentences: tuple[str, ...]
    source: str


# The profile's words for children that say no age (memory/recall/slots/language.py has more).
CHILDREN_OF_ANY_AGE = frozenset({"kid", "kids", "child", "children"})


class SentenceReader:
    """Reads the entries of one knowledge for a question; ``words``: word vectors for "another way
    to say it" (None: words and stems only)."""

    def __init__(self, entries: Sequence[Entry], lex: LexicalIndex, function_words: frozenset[str],
                 dictionary: Container[str] = frozenset(), words: "Embedder | None" = None) -> None:
        self.entries, self.lex, self.function_words, self.words = entries, lex, function_words, words
        self.entry_stems = [set(lex.stems(" ".join((e.title, *e.aliases, *e.sentences)), all_words=True))
                            for e in entries]
        self.known_stems: set[str] = set().union(*self.entry_stems) if self.entry_stems else set()
        self.dictionary = dictionary  # ordinary words: one of the visitor's not in it is a name
        self.word_vectors: dict[str, np.ndarray] = {}  # the files' words, once embedded (``embed_words``)
        # computed once per sentence: its names and words, their stems, its word vectors
        self._said: dict[tuple[int, int], tuple[str, frozenset[str]]] = {}
        self._text_vectors: dict[str, np.ndarray] = {}
        self._word_stems: dict[str, list[str]] = {}
        self._kin_stems = _kin_stems(lex)  # the profile's words, not the visitor's: kept

    def embed_words(self, stop: Callable[[], bool] = lambda: False) -> None:
        """The word vectors of every word of the files (the background thread, at start)."""
        if self.words is None or self.word_vectors or stop():
            return
        vocabulary = sorted({w for e in self.entries for w in plain_words(" ".join((e.title, *e.aliases, *e.sentences)))
                             if w not in self.function_words})
        self.word_vectors = dict(zip(vocabulary, self.words.embed(vocabulary)))

    def new_turn(self) -> None:
        """Forget the last visitor's words (kept for one turn only)."""
        self._word_stems.clear()

    def stems_of(self, word: str) -> list[str]:
        if (known := self._word_stems.get(word)) is None:
            known = self._word_stems[word] = self.lex.stems(word, all_words=True)
        return known

    def kinds(self, i: int, j: int) -> frozenset[str]:
        """What sentence ``j`` of entry ``i`` states, its entry's names left out (the "Morning" of
        "Fushimi Inari Early Morning Walk" is no time the walk starts)."""
        e = self.entries[i]
        text = e.sentences[j]
        for name in sorted((e.title, *e.aliases), key=len, reverse=True):
            text = re.sub(re.escape(name), " ", text, flags=re.IGNORECASE)
        return holds(text)

    def said(self, i: int, j: int) -> tuple[str, frozenset[str]]:
        """Entry ``i``'s names and sentence ``j``, and their stems (computed once)."""
        if (known := self._said.get((i, j))) is None:
            e = self.entries[i]
            said = " ".join((e.title, *e.aliases, e.sentences[j] if e.sentences else ""))
            known = self._said[(i, j)] = (said, frozenset(self.lex.stems(said, all_words=True)))
        return known

    def covered(self, q: Question, i: int, j: int, mentions: Sequence[Mention] = ()) -> tuple[float, tuple[str, ...]]:
        """The share of the question's content words that entry ``i``'s sentence ``j`` and its names
        hold (the word, its stem, or another way to say it: ``SYNONYM_MIN``), and the words it lacks.
        A name the question says counts as held where the sentence names that entry ("is the Golden
        Pavilion step-free?" and "Kinkaku-ji ... are step-free")."""
        if not q.content:
            return 1.0, ()
        said, stems = self.said(i, j)
        lowered = said.lower()
        named: set[str] = set()
        for m in mentions:
            other = self.entries[m.entry]
            if m.entry == i or any(n.lower() in lowered for n in (other.title, *other.aliases)):
                named |= set(tokens(m.name))
        lacking = []
        others = dict(q.others)
        for word in q.content:
            if word in named or any(s in stems for s in (*self.stems_of(word), *others.get(word, ()))):
                continue
            if is_common_word(word) and self.synonym_in(word, said):
                continue  # a name ("Osaka") is itself or not there: names have no synonyms
            lacking.append(word)
        return 1.0 - len(lacking) / len(q.content), tuple(lacking)

    def entry_covered(self, q: Question, i: int, named: Mention | None) -> float:
        """The share of the asking words entry ``i`` holds anywhere (its names, any sentence), said
        as the visitor said them or another way (WordNet), or named."""
        if not q.content:
            return 1.0
        stems, others = self.entry_stems[i], dict(q.others)
        said = set(tokens(named.name)) if named is not None else set()
        held = [w for w in q.content if w in said or any(st in stems for st in (*self.stems_of(w), *others.get(w, ())))]
        return len(held) / len(q.content)

    def payer_lacking(self, q: Question, i: int, j: int) -> tuple[str, ...]:
        """For a price: who it is asked for ("for a child", "kids") and the answering sentence does
        not say (it says the adult's, or one price for all): the price said would be taken for
        theirs. The words of people are the profile's (memory/recall/slots/language.py)."""
        from memory.recall.slots.language import EN

        sentence = self.entries[i].sentences[j] if self.entries[i].sentences else ""
        held = set(self.lex.stems(sentence, all_words=True))
        people = {*EN.adults, *EN.children}
        return tuple(w for w in q.content if w in people and not any(s in held for s in self.people_stems(w))
                     and not (self.words is not None and self.synonym_in(w, sentence)))

    def people_stems(self, word: str) -> tuple[str, ...]:
        """The stems of ``word`` and, for a word of the profile's adults or of children of any age,
        of every word of its group: a price "for a grown-up" is the sentence's "Adult £22.50";
        "kids" are its "Child" fare. A teenager or a baby is not any child: the fare of one may
        be its own ("Under 3s go free"), so theirs stays a near miss where the files do not say it.
        (The search puts the group's stems the files hold in ``Question.others``, so coverage
        reads them there.)"""
        return (*self.stems_of(word), *self._kin_stems.get(word, ()))

    def synonym_in(self, word: str, text: str) -> bool:
        """A word of ``text`` is near ``word`` by word vectors (``SYNONYM_MIN``): "kids", "children"."""
        if self.words is None or not self.word_vectors:
            return False
        if (matrix := self._text_vectors.get(text)) is None:
            rows = [self.word_vectors[w] for w in plain_words(text) if w in self.word_vectors]
            matrix = self._text_vectors[text] = np.stack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
        return bool(len(matrix)) and float((matrix @ self._word_vector(word)).max()) >= SYNONYM_MIN

    def _word_vector(self, word: str) -> np.ndarray:
        if (v := self.word_vectors.get(word)) is None:
            v = self.words.embed([word])[0]  # type: ignore[union-attr]
        return v

    def unknown(self, q: Question) -> tuple[str, ...]:
        """Names in the asking words that no entry has ("Hiroshima", "ramen"): a thing the shop's
        files do not hold. A capitalized word, or one no dictionary has."""
        names = {n.lower() for n in facts_of(q.asking).names} if q.asking else set()
        out = []
        others = dict(q.others)
        for word in q.content:
            if word in self.known_stems or word in others or any(s in self.known_stems for s in self.stems_of(word)):
                continue
            if word.rstrip("s") in CALENDAR:
                continue  # "mondays", "april": a day or month asked about, not a thing the shop lacks
            if word in names or (word not in self.dictionary and len(word) > 2):
                out.append(word)
        return tuple(out)


def _kin_stems(lex: LexicalIndex) -> dict[str, tuple[str, ...]]:
    """For each word of a people group (``people_stems``), the stems of its group's words."""
    from memory.recall.slots.language import EN

    groups = (EN.adults, tuple(w for w in EN.children if w in CHILDREN_OF_ANY_AGE))
    return {w: tuple(dict.fromkeys(s for kin in group for s in lex.stems(kin, all_words=True)))
            for group in groups for w in group}


_PLAIN = re.compile(r"[a-z][a-z'-]*[a-z]|[a-z]")
# "time's", "we're", "you'll": the word and a clitic; the word is what an entry or a kind holds
# ("what time's the first train" asks a time). "n't" stays on its word: "don't" is not "do".
_CLITIC = re.compile(r"'(?:s|re|ll|ve|d|m)$")


def plain_words(text: str) -> list[str]:
    words = (_CLITIC.sub("", w).strip("'-") for w in _PLAIN.findall(text.lower().replace("’", "'")))
    return [w for w in words if len(w) > 1]


def question_words() -> tuple[str, ...]:
    return tuple(w for line in load_word_list("function_words") for w in line.split())
