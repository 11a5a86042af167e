"""Answers from the shop's own knowledge: what a turn does with what the knowledge holds.

For each customer turn (``ShopKnowledge.plan``), the knowledge is searched with the visitor's
words and the places they named before (``memory/recall/knowledge.py``). Then:
- **answered** (the best entry covers the whole question): the robot says that entry's own
  sentences itself, the one that answers best first, in the persona's words
  (``knowledge.answer``: "{entry}"), within the spoken-length budget (the rest is offered);
  the LLM goes on after them only if the budget leaves room. The embedded 135M model mixes
  up facts: said by the robot, a price is the shop's price.
- **nothing** (a question the knowledge cannot answer: no entry, too little of it covered,
  or a name no entry has): the persona's ``no_answer`` line, with its offer to call a member
  of staff, and a ``handover`` event (MQTT, console, /metrics) that calls one.
- a statement that is no question ("we are two adults"): the LLM answers as without the
  knowledge (given the entries, the embedded model read them back turn after turn), and the
  grounding guard (``robot/reply/grounding.py``) checks its every sentence; the best entry's
  sentences are the fallback. It is never handed over.
``KnowledgePlan.notes`` (the entries as prompt lines, within two thirds of the memory's
retrieval room, ``memory.retrieval_tokens``) is there for a caller that wants the LLM to answer
a question from them.

It also chooses the few names speech recognition listens for in a turn (``vocabulary``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from memory.core.base import Message
from memory.recall.facts import facts_of, is_common_word
from memory.core.words import CALENDAR
from memory.recall.knowledge import Finding, KnowledgeIndex
from memory.recall.vocabulary import TurnVocabulary
from robot.reply.grounding import GroundingGuard

# A request for information: a question mark, a question word first, or a request.
_QUESTION = re.compile(r"\?\s*$|^\W*(?:how|what|what's|when|where|which|who|why|is|are|do|does|did|can|could|"
                       r"will|would|should|may|tell me|i need|i'd like to know|i want to know)\b", re.I)
KNOWLEDGE_SHARE = 2 / 3  # of the reply's retrieval room, at most, for the shop's entries


def is_question(text: str) -> bool:
    return any(_QUESTION.search(s.strip()) for s in re.split(r"(?<=[.!?])\s+", text) if s.strip())


@dataclass(frozen=True)
class KnowledgePlan:
    """What the knowledge makes of one turn."""

    finding: Finding
    notes: str = ""  # the found entries, for the reply prompt
    opening: tuple[str, ...] = ()  # sentences the robot says itself, first (an answered question)
    fallback: tuple[str, ...] = ()  # said when the LLM's reply fails the guard twice
    handover: str | None = None  # the no_answer line: nothing found, a member of staff is called
    sources: tuple[str, ...] = field(default=(), compare=False)  # where the entries came from ("tours.yaml:12")
    retrieval_s: float = 0.0

    def guard(self, messages: Sequence[Message]) -> GroundingGuard:
        return GroundingGuard.of_messages(messages, self.opening, self.fallback)


class ShopKnowledge:
    """A persona's knowledge, indexed once (at start, a reload, a persona switch)."""

    def __init__(self, entries: Sequence[object], *, answer: str = "{entry}", no_answer: str,
                 retrieval_tokens: int = 300, vocabulary: Sequence[str] = (), max_names: int = 2) -> None:
        self.index = KnowledgeIndex(entries)  # type: ignore[arg-type]
        self.answer, self.no_answer = answer, no_answer
        self.max_tokens = int(retrieval_tokens * KNOWLEDGE_SHARE)
        self.vocabulary = TurnVocabulary(vocabulary, self.place_names(), max_names)
        self.topic = ""  # what the robot said last (the controller sets it): its names are the topic
        facts_of("Warm Up 1")  # the word lists load now, not in the first reply

    @classmethod
    def of_persona(cls, persona: object, retrieval_tokens: int) -> "ShopKnowledge | None":
        k = getattr(persona, "knowledge", None)
        if k is None:
            return None
        return cls(k.entries, answer=k.answer, no_answer=k.no_answer, retrieval_tokens=retrieval_tokens,
                   vocabulary=getattr(persona, "vocabulary", ()), max_names=k.max_names)

    def plan(self, user_text: str, places: Iterable[str] = ()) -> KnowledgePlan:
        started = time.perf_counter()
        finding = self.index.search(user_text, list(places))
        notes, shown = self.index.notes(finding, self.max_tokens)
        best = finding.best
        fallback = self._said(self.index.best_sentences(best, finding)) if best is not None else ()
        sources = tuple(h.entry.source for h in shown)
        took = time.perf_counter() - started
        if finding.nothing and is_question(user_text):
            return KnowledgePlan(finding, handover=self.no_answer, retrieval_s=took)
        if finding.answered and best is not None and is_question(user_text):
            return KnowledgePlan(finding, notes, opening=fallback, fallback=fallback,
                                 sources=(best.entry.source,), retrieval_s=took)
        # A statement ("we are two adults"): the LLM answers as it would without the knowledge. Given
        # the entries, the embedded 135M model read them back whatever was said, turn after turn.
        return KnowledgePlan(finding, "", fallback=fallback if shown else (), sources=sources, retrieval_s=took)

    def _said(self, sentences: list[str]) -> tuple[str, ...]:
        """The entry's sentences in the persona's words: the template around the first."""
        if not sentences:
            return ()
        return (self.answer.replace("{entry}", sentences[0]), *sentences[1:])

    def place_names(self) -> list[str]:
        """The knowledge's proper names (places, tours, lines) as they are written in titles and
        aliases: what speech recognition should hear right."""
        runs: list[str] = []
        for name in self.index.names():
            for run in re.findall(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*", name):
                words = run.split()
                if any(w.lower() in CALENDAR for w in words):
                    continue  # "April", "New Year": dates, not places
                # one capitalized word is a name only if it is no ordinary word ("Payment", "Which")
                if (len(words) > 1 or not is_common_word(run)) and run not in runs:
                    runs.append(run)
        single = {r for r in runs if " " not in r}
        # "Kyoto Nara" (an alias "Kyoto Nara package") is two names, not a third
        return [r for r in runs if " " not in r or not all(w in single for w in r.split())]

    def turn_vocabulary(self, places: Iterable[str]) -> tuple[str, ...]:
        return self.vocabulary.choose(places, self.topic_names(self.topic))

    def topic_names(self, text: str) -> list[str]:
        """The knowledge's names said in ``text`` (the robot's last reply), in the order said."""
        lowered = text.lower()
        found = [n for n in self.vocabulary.names
                 if re.search(r"\b" + r"[\s-]+".join(map(re.escape, re.findall(r"[\w']+", n.lower()))) + r"\b", lowered)]
        # a name inside a longer one found ("Inari" in "Fushimi Inari") is that one
        found = [n for n in found if not any(n != m and n.lower() in m.lower() for m in found)]
        return sorted(found, key=lambda n: text.lower().find(n.lower()))
