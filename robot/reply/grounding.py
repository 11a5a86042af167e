"""The grounding guard: a reply may say no number and no name that it cannot point to.

Every sentence the LLM writes is checked before it is spoken (so the first sentence still
plays while the LLM writes the second): each number (prices, times, dates, durations, in
digits or words) and each proper name in it must appear in a source, i.e. in what the LLM
was given: the persona's role prompt, the visitor's memory (summary, history, profile), the
shop's entries retrieved for this turn, the customer's own words, and what the robot says
itself from an entry. A sentence that fails makes the reply ask the LLM once more; a second
failure makes the robot say the best entry's own sentences instead (``robot/reply/stream.py``).

The facts are read by ``memory/recall/facts.py``; a name is found when each of its words is
in a source (any case: "the golden pavilion" in an entry grounds "Golden Pavilion").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from memory.core.base import Message
from memory.recall.facts import facts_of, name_found, numbers_of, quantities_of, words_of


@dataclass
class GroundingGuard:
    """Built once per reply from its sources; ``unsupported(sentence)`` per sentence."""

    numbers: set[str]
    words: set[str]
    quantities: set[str] = field(default_factory=set)  # "2 hour": a number and its unit, together
    checked_s: float = 0.0  # time spent checking, for the bench and the turn's figures
    rejected: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (sentence, its unsupported facts)

    @classmethod
    def of(cls, sources: Iterable[str]) -> "GroundingGuard":
        text = "\n".join(s for s in sources if s)
        return cls(numbers_of(text), words_of(text), quantities_of(text))

    @classmethod
    def of_messages(cls, messages: Iterable[Message], *more: Iterable[str]) -> "GroundingGuard":
        """Everything the LLM was given (role prompt, memory, notes, the utterance), and ``more``
        (what the robot itself says: an entry's sentences)."""
        return cls.of([m["content"] for m in messages] + [s for group in more for s in group])

    def unsupported(self, sentence: str) -> tuple[str, ...]:
        """The numbers and names of ``sentence`` that no source holds (empty: it may be said)."""
        started = time.perf_counter()
        facts = facts_of(sentence)
        missing = sorted(n for n in facts.numbers if n not in self.numbers)
        missing += sorted(q for q in facts.quantities if q not in self.quantities)
        missing += sorted(n for n in facts.names if not name_found(n, self.words))
        self.checked_s += time.perf_counter() - started
        if missing:
            self.rejected.append((sentence, tuple(missing)))
        return tuple(missing)
