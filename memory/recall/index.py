"""One lexical index for everything the robot looks up: the visitor's archived exchanges
(``memory/recall/archive.py``) and the shop's knowledge (``memory/recall/knowledge.py``).

BM25 (bm25s) over stemmed words (Snowball, through PyStemmer: "planned" finds "plan",
"tours" finds "tour"), without a few English stop words. The index is immutable: built once
(at load, or in a worker thread when the archive grows), searched from any thread; a change
builds a new one. Searching is CPU work of a few milliseconds; callers on the event loop run
it in a thread when the index may be large.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy

_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s's own splitter: the index and a query split alike


def _bm25s():  # imported here: ~0.2 s, only where retrieval is used
    import bm25s
    import Stemmer

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # its import sets it to DEBUG: a line per index
    return bm25s, Stemmer


class LexicalIndex:
    """BM25 over ``texts`` (document i is ``texts[i]``); ``stopwords``: a language code bm25s
    knows ("en") or a list of words."""

    def __init__(self, texts: Sequence[str], stopwords: str | Iterable[str] = "en") -> None:
        bm25s, Stemmer = _bm25s()
        self.size = len(texts)
        words = stopwords if isinstance(stopwords, str) else list(stopwords)
        self._stemmer = Stemmer.Stemmer("english")
        self._tokenizer = bm25s.tokenization.Tokenizer(stopwords=words, stemmer=self._stemmer.stemWord)
        self._stopwords = frozenset(self._tokenizer.stopwords or ())
        self._bm25 = bm25s.BM25()
        self._vocab: dict[str, int] = {}
        if texts:
            ids = self._tokenizer.tokenize(list(texts), show_progress=False)
            self._bm25.index(ids, show_progress=False)
            self._vocab = self._tokenizer.get_vocab_dict()
        self._doc_stems: list[frozenset[str]] | None = None
        self._texts = texts

    def stems(self, text: str, all_words: bool = False) -> list[str]:
        """``text``'s stems, stop words left out unless ``all_words``, in order (also stems no
        document has)."""
        words = _WORD.findall(text.lower()) if all_words else self.words(text)
        return self._stemmer.stemWords(words) if words else []

    def words(self, text: str) -> list[str]:
        """``text``'s words as ``stems`` sees them, before stemming (same order, same count)."""
        return [w for w in _WORD.findall(text.lower()) if w not in self._stopwords]

    def known(self, stem: str) -> bool:
        """Whether some document has this stem."""
        return stem in self._vocab

    def doc_stems(self, doc: int) -> frozenset[str]:
        """The stems of document ``doc`` (computed for all documents on first use)."""
        if self._doc_stems is None:
            tokens = self._tokenizer.tokenize(list(self._texts), update_vocab=False, return_as="string",
                                              show_progress=False)
            self._doc_stems = [frozenset(t) for t in tokens]
        return self._doc_stems[doc]

    def search(self, stems: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The best ``k`` documents for these stems (``stems()`` of a query), best first, with
        their BM25 scores; those scoring 0 are left out. A stem no document has cannot match."""
        known = [self._vocab[s] for s in stems if s in self._vocab]
        if not known or not self.size:
            return []
        bm25s, _ = _bm25s()
        docs, scores = self._bm25.retrieve([known], k=min(k, self.size), show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]

    def scores(self, stems: Sequence[str]) -> "numpy.ndarray | None":
        """Every document's BM25 score for these stems (None when no document has any of
        them): to weigh the parts of a query before ranking (``best``)."""
        known = [self._vocab[s] for s in stems if s in self._vocab]
        if not known or not self.size:
            return None
        return self._bm25.get_scores_from_ids(known)

    @staticmethod
    def best(scores: "numpy.ndarray", k: int) -> list[tuple[int, float]]:
        """The ``k`` best documents of a score array, best first, those scoring 0 left out."""
        import numpy as np

        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(top.tolist(), key=lambda d: -scores[d])
        return [(d, float(scores[d])) for d in ranked if scores[d] > 0]

    def search_text(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.search(self.stems(query), k)
