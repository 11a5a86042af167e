"""Which of the shop's things a question names: its entries' titles and aliases found in the
visitor's words, whole, in part, or as speech recognition misheard them.

- **whole**: the name's words in a row ("the Nara tour"), hyphens and spaces aside
  ("kinkakuji" is "Kinkaku-ji");
- **part**: some of the name's words, weighed by how few names share them ("the deer park" of
  "Nara Deer Park Half-Day Tour": "deer" and "park" name few things, "tour" many);
- **sound** (``respelled``): a stretch of words that sounds like one of the shop's proper names
  (jellyfish's Metaphone codes and the letters, compared by Jaro-Winkler: rapidfuzz's, one
  vectorized pass over every name, so a shop of 100,000 names answers in a tenth of a second,
  not two) is written as that
  name, and the question searched again: "Naruto" for "Nara tour", "Ken's side" for "Kansai".
  Only when the question as heard finds nothing, above ``SOUND_MIN`` (``SOUND_RESCUE_MIN`` for
  ordinary words) and with a margin of ``SOUND_MARGIN`` over the next name: a guess between two
  names that sound alike is no guess.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from memory.recall.facts import lemmas

_TOKEN = re.compile(r"[a-z0-9]+")
SOUND_MIN = 0.84  # a word no dictionary has, sounding like a name: "naruto"/"nara tour" 0.92, "tours"/"tokyo" 0.58
SOUND_MARGIN = 0.03  # over the next name that sounds alike: a guess between two is no guess
SOUND_RESCUE_MIN = 0.85  # ordinary words sounding like a name ("kens side"), tried only when nothing else fits
PART_MIN = 0.5  # share of a name's weight its words said must reach to count as named in part
AMBIGUOUS = 2  # words said that name more entries in part than this name none of them
RECENT_TEXTS = 4  # the texts whose mentions are kept: one turn asks for them up to three times


@dataclass(frozen=True)
class Mention:
    entry: int  # the entry's index
    name: str  # the title or alias it matched, as written
    score: float  # 1.0 whole; the weight share said in part; the sound similarity, a little less
    how: str  # "whole", "part", "sound"
    start: int  # token span in the question
    end: int


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("’", "'").replace("'s ", " "))


def token_spans(text: str) -> list[tuple[int, int]]:
    """The character span in ``text`` of each of its ``tokens`` (a ``Mention``'s start and end
    are token positions)."""
    return [m.span() for m in _TOKEN.finditer(text.lower().replace("’", "'").replace("'s ", "   "))]


@lru_cache(maxsize=65536)
def _sound(text: str) -> str:
    import jellyfish

    return jellyfish.metaphone(text)


class NameLinker:
    """The names of entries, indexed once; ``mentions(text)`` per question."""

    def __init__(self, names: Sequence[tuple[int, str]], common: frozenset[str] = frozenset(),
                 dictionary: Callable[[str], bool] = lambda w: False, skip: frozenset[str] = frozenset()) -> None:
        """``names``: (entry index, a title or alias); ``common``: ordinary words of the names, which
        alone never name a thing in part ("tour", "the"); ``dictionary``: is a word an ordinary one."""
        self.names = [(e, n, tokens(n)) for e, n in names if tokens(n)]
        counts = Counter(t for _, _, ts in self.names for t in set(ts))
        total = max(len(self.names), 1)
        # a word shared by many names says little of which one is meant
        self.weight = {t: math.log(1 + total / c) for t, c in counts.items()}
        self.common = common
        self.skip = skip  # function words: never part of a misheard name
        self.dictionary = _Dictionary(dictionary)
        # What a misheard word may have been: the proper names (and their proper words) of the shop.
        self._proper = {t for _, _, ts in self.names for t in ts if t not in self.dictionary and len(t) >= 4}
        names_proper = {" ".join(ts) for _, _, ts in self.names if any(t in self._proper for t in ts)}
        self._targets = {"".join(n.split()): n for n in sorted(names_proper, key=len, reverse=True)}
        self._targets.update({t: t for t in self._proper if t not in self._targets})
        self._target_keys = list(self._targets)
        self._target_sounds = [_sound(t) for t in self._target_keys]
        self._target_lengths = np.array([len(t) for t in self._target_keys])
        self._soundless = np.array([not code for code in self._target_sounds], dtype=bool)
        self._compact: dict[str, list[tuple[int, str]]] = {}
        self._recent = lru_cache(maxsize=RECENT_TEXTS)(self._mentions)
        self._by_word: dict[str, list[int]] = {}  # a word -> the names (their positions) that have it
        for k, (e, n, ts) in enumerate(self.names):
            self._compact.setdefault("".join(ts), []).append((e, n))
            for t in set(ts):
                self._by_word.setdefault(t, []).append(k)

    def mentions(self, text: str) -> list[Mention]:
        """The names ``text`` says, best first, one per entry (its best), spans not overlapping a
        better mention. A turn asks it up to three times (the consultation's intents and offers,
        the knowledge search): the last few texts' answers are kept (thread-safe, in this object)."""
        return list(self._recent(text))

    def _mentions(self, text: str) -> tuple[Mention, ...]:
        words = tokens(text)
        found = self._whole(words) + self._part(words)
        best: dict[int, Mention] = {}
        for m in sorted(found, key=lambda m: (-m.score, m.start)):
            if m.entry not in best:
                best[m.entry] = m
        return tuple(sorted(best.values(), key=lambda m: (-m.score, m.start)))

    def _having(self, words: Sequence[str]) -> list[tuple[int, str, list[str]]]:
        """The names with at least one of ``words`` (an inverted index: a shop of 5,000 rows)."""
        return [self.names[k] for k in sorted({k for w in set(words) for k in self._by_word.get(w, ())})]

    def _whole(self, words: list[str]) -> list[Mention]:
        out = []
        for e, name, ts in self._having(words):
            n = len(ts)
            for i in range(len(words) - n + 1):
                if words[i:i + n] == ts:
                    out.append(Mention(e, name, 1.0, "whole", i, i + n))
        # "kinkakuji" for "kinkaku ji", "todaiji" for "todai-ji": one word for a hyphenated name
        for i, w in enumerate(words):
            for span in (1, 2):
                compact = "".join(words[i:i + span])
                for e, name in self._compact.get(compact, ()):
                    if len(tokens(name)) != span:
                        out.append(Mention(e, name, 1.0, "whole", i, i + span))
        return out

    def _part(self, words: list[str]) -> list[Mention]:
        said = set(words)
        out = []
        for e, name, ts in self._having([w for w in said if w not in self.common]):
            distinct = [t for t in dict.fromkeys(ts) if t not in self.common]
            if not distinct or len(ts) < 2:
                continue
            hit = [t for t in distinct if t in said]
            if not hit:
                continue
            share = sum(self.weight.get(t, 0.0) for t in hit) / sum(self.weight.get(t, 0.0) for t in distinct)
            if share >= PART_MIN and share < 1.0 or (share >= 1.0 and len(hit) < len(ts)):
                positions = [i for i, w in enumerate(words) if w in hit]
                out.append((frozenset(hit), Mention(e, name, round(min(share, 0.95), 3), "part", min(positions),
                                                    max(positions) + 1)))
        # The same words naming many things ("Kyoto" of the Kyoto tour, the Kyoto train, the Kyoto
        # class ...) name none of them.
        by_words: dict[frozenset[str], set[int]] = {}
        for hit, m in out:
            by_words.setdefault(hit, set()).add(m.entry)
        return [m for hit, m in out if len(by_words[hit]) <= AMBIGUOUS]

    def respelled(self, text: str, anyway: bool = False) -> str | None:
        """``text`` with a stretch of words that sounds like one of the shop's proper names written
        as that name ("how much is the naruto" -> "... the nara tour", "kens side airport" ->
        "kansai airport"); None when nothing sounds like one. A stretch must hold a word no
        dictionary has, unless ``anyway`` (asked when nothing else fits: "all door guide")."""
        words = tokens(text)
        bar = SOUND_RESCUE_MIN if anyway else SOUND_MIN
        found: list[tuple[float, int, int, str]] = []
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                span = words[i:i + n]
                if any(w in self.skip for w in span) or all(w in self.common or w in self._proper for w in span):
                    continue  # grammar, or the shop's own words: nothing misheard
                if not anyway and all(w in self.dictionary for w in span):
                    continue
                heard = "".join(span)
                found += self._sounding_like(heard, bar - SOUND_MARGIN, i, i + n)
        if not found:
            return None
        found.sort(key=lambda f: -f[0])
        top = found[0][0]
        if top < bar:
            return None
        # A name inside another ("nara" in "nara tour") reads the same: no rival; the longest wins.
        near = [f for f in found if top - f[0] < SOUND_MARGIN]
        chosen = max(near, key=lambda f: (len(f[3]), f[2] - f[1]))
        if any(not (f[3] in chosen[3] or chosen[3] in f[3]) for f in near):
            return None  # two names sound alike: a guess between them is no guess
        _, i, j, written = chosen
        return " ".join([*words[:i], written, *words[j:]])

    def _sounding_like(self, heard: str, floor: float, start: int, end: int) -> list[tuple[float, int, int, str]]:
        """Every name ``heard`` sounds like at ``floor`` or more, of a length it could have been
        misheard as. The likeness of two words: the mean of the Jaro-Winkler similarity of their
        letters and of their Metaphone codes ("naruto"/"naratour" 0.92, "kens side"/"kansai"
        0.85, "guided tour"/"kyoto" 0.61)."""
        from rapidfuzz.distance import JaroWinkler
        from rapidfuzz.process import cdist

        if not self._target_keys:
            return []
        letters = cdist([heard], self._target_keys, scorer=JaroWinkler.normalized_similarity)[0]
        sound = np.zeros_like(letters)
        if said_sound := _sound(heard):
            sound = cdist([said_sound], self._target_sounds, scorer=JaroWinkler.normalized_similarity)[0]
            sound[self._soundless] = 0.0
        score = (letters + sound) / 2
        fits = np.abs(self._target_lengths - len(heard)) <= np.maximum(3, self._target_lengths // 2)
        return [(float(score[k]), start, end, self._targets[self._target_keys[k]])
                for k in np.flatnonzero(fits & (score >= floor))]


def _within_margin(scored: list[Mention]) -> list[Mention]:
    """The best sound match, and those of other entries within ``SOUND_MARGIN`` of it (the other
    signals choose between names that sound alike); [] when there is none."""
    if not scored:
        return []
    scored.sort(key=lambda m: -m.score)
    top = scored[0].score
    return [m for m in scored if top - m.score < SOUND_MARGIN * 0.9]


class _Dictionary:
    """``word in dictionary``: an ordinary word (cached: the sound search asks it often). The
    cache forgets all once it holds ``KEPT`` words: a kiosk hears new words (numbers, names)
    for as long as it runs."""

    KEPT = 50_000

    def __init__(self, is_word: Callable[[str], bool]) -> None:
        self._is_word = is_word
        self._known: dict[str, bool] = {}

    def __contains__(self, word: str) -> bool:
        if word not in self._known:
            if len(self._known) >= self.KEPT:
                self._known.clear()
            self._known[word] = word.isdigit() or any(self._is_word(w) for w in lemmas(word))
        return self._known[word]



