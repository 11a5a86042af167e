"""Retrieval over the archive: the turns a summary has absorbed, found again by their words.

A small model's summary drops details (measured on LoCoMo: the rsum context holds the
answer's words for about 10 % of questions, full history for about 70 %). Every turn stays in
the store, so the archive is searched for each reply and the best pieces, within
``retrieval_tokens``, go into that reply's prompt ("Earlier in this conversation").

Segments are exchanges: a customer's utterance with the replies that follow it, in one
session (SeCom's finding: a unit between a turn and a session retrieves best; topic
segmentation is not done here). They are ranked with BM25 (bm25s, English stop words,
Snowball stems, so "planned" finds "plan"); a segment scoring under ``min_score`` is left
out even when room is left (relevance-based pruning: no context beats a wrong one). Each
segment carries its date, which answers "when" questions.

The index lives in RAM only (nothing of it is written anywhere, so a forget has no file to
clean); it is rebuilt in a worker thread when a summary absorbs turns.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import AbstractSet, Iterable, Sequence

from memory.core.records import StoredRemark
from memory.core.settings import SpeakerLabels
from memory.core.tokens import TokenCounter, count_tokens
from memory.recall.index import LexicalIndex

MAX_SEGMENT_TURNS = 6  # a long monologue is cut into pieces a prompt can take
MAX_TURN_CHARS = 400  # one turn's share of a segment as shown
DEFAULT_MIN_SCORE = 1.0  # BM25 score under which a segment is not shown (bench/memory_locomo.py)


@dataclass(frozen=True)
class Segment:
    """One exchange of the archive: consecutive turns of one session, a customer's first."""

    turns: tuple[StoredRemark, ...]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(t.id for t in self.turns)

    @property
    def text(self) -> str:  # what is indexed: the words, without speaker labels
        return " ".join(t.text for t in self.turns)

    def render(self, labels: SpeakerLabels) -> str:
        said = " ".join(f"{labels.of(t.role)}: {_short(t.text)}" for t in self.turns)
        return f"({_date(self.turns[0].ts)}) {said}"


@dataclass(frozen=True)
class Found:
    segment: Segment
    score: float
    tokens: int


def segments_of(turns: Iterable[StoredRemark]) -> list[Segment]:
    """Exchanges: a new segment at each customer turn, a new session, or a full segment."""
    out: list[list[StoredRemark]] = []
    for turn in turns:
        current = out[-1] if out else None
        if (current is None or turn.role == "user" and current[-1].role != "user"
                or turn.session_id != current[-1].session_id or len(current) >= MAX_SEGMENT_TURNS):
            out.append([turn])
        else:
            current.append(turn)
    return [Segment(tuple(s)) for s in out]


class _Index:
    """An immutable BM25 index of some segments (rebuilt, never changed: searches in other
    threads read one index or the next, never half of one): ``memory/recall/index.py``."""

    def __init__(self, segments: list[Segment]) -> None:
        self.segments = segments
        self._index = LexicalIndex([s.text for s in segments])

    def search(self, query: str, k: int) -> list[tuple[Segment, float]]:
        return [(self.segments[d], score) for d, score in self._index.search_text(query, k)]


class ArchiveIndex:
    """The searchable archive of one visitor's memory."""

    def __init__(self, labels: SpeakerLabels, min_score: float, counter: TokenCounter | None = None) -> None:
        self.labels = labels
        self.min_score = min_score
        self._counter = counter  # the reply model's tokens; None: characters / 4
        self._turns: list[StoredRemark] = []
        self._index: _Index | None = None
        self._version = 0  # bumped by every change of the turns: an older build never wins
        self._lock = threading.Lock()  # one build at a time

    @property
    def size(self) -> int:
        """Segments indexed (0 before the first build)."""
        return len(self._index.segments) if self._index else 0

    @property
    def turn_count(self) -> int:
        return len(self._turns)

    async def replace(self, turns: Sequence[StoredRemark]) -> None:
        """Index exactly these turns (a user loaded, reloaded or forgotten)."""
        self._turns = sorted((t for t in turns if t.id > 0), key=lambda t: t.id)
        await self._rebuild()

    async def add(self, turns: Iterable[StoredRemark]) -> None:
        """Turns a summary has just absorbed."""
        known = {t.id for t in self._turns}
        new = [t for t in turns if t.id not in known and t.id > 0]
        if new:
            self._turns = sorted(self._turns + new, key=lambda t: t.id)
            await self._rebuild()

    async def _rebuild(self) -> None:
        self._version += 1
        version, turns = self._version, list(self._turns)
        index = await asyncio.to_thread(self._build, turns)  # bm25s indexing is CPU work: off the loop
        if version == self._version:  # a newer change started its own build meanwhile: that one wins
            self._index = index

    def _build(self, turns: list[StoredRemark]) -> _Index:
        with self._lock:
            return _Index(segments_of(turns))

    async def search(self, query: str, max_tokens: int, exclude: AbstractSet[int] = frozenset()) -> list[Found]:
        """The best segments for ``query`` that fit ``max_tokens``, best first; none under
        ``min_score``; none that share a turn with ``exclude`` (already in the prompt)."""
        index = self._index
        if index is None or not index.segments or max_tokens <= 0 or not query.strip():
            return []
        ranked = await asyncio.to_thread(index.search, query, 20)
        found: list[Found] = []
        room = max_tokens
        for segment, score in ranked:
            if score < self.min_score:
                break  # ranked best first: the rest are lower
            if exclude.intersection(segment.ids):
                continue
            tokens = await self.tokens(segment.render(self.labels)) + 2  # "- " and a line break
            if tokens <= room:
                found.append(Found(segment, score, tokens))
                room -= tokens
        return found

    async def tokens(self, text: str) -> int:
        """``text``'s tokens in the reply model's own count (the room it takes)."""
        return count_tokens(text) if self._counter is None else await self._counter(text)

    def render(self, found: Sequence[Found]) -> str:
        """"Earlier in this conversation" lines, oldest first (the order things were said)."""
        if not found:
            return ""
        ordered = sorted(found, key=lambda f: f.segment.turns[0].id)
        return "Earlier in this conversation:\n" + "\n".join(f"- {f.segment.render(self.labels)}" for f in ordered)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TURN_CHARS else text[: MAX_TURN_CHARS - 3].rstrip() + "..."


def _date(ts: float) -> str:
    return time.strftime("%d %B %Y", time.localtime(ts)).lstrip("0")
