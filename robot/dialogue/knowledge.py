"""Answers from the shop's own knowledge: what a turn does with what the knowledge holds.

For each customer turn (``ShopKnowledge.plan``) the knowledge is searched with the visitor's
words, the places they named before and the entries of the last answer (``memory/recall/
knowledge/``). A question (with or without its "?": speech recognition drops it) then gets:
- **answered**: the robot says the entry's sentence that answers the kind asked (a time for
  "when"), in the persona's words (``knowledge.answer``), then the entry's next sentences within
  the spoken-length budget; the LLM goes on after them only if the budget leaves room;
- **two entries** ("which is cheaper, the Nara tour or the tea tour?", "how much are X and Y?"):
  each entry's sentence of the kind asked, and for a comparison the winner first, computed from
  the values those sentences hold (``compare.py``);
- **in part** (a near miss: "how much is the Haruka for a child?" where only one fare is in the
  files, or a mixed question naming one real tour and one the shop lacks): what the files hold,
  then the persona's ``partial`` line naming what they lack, its ``no_answer`` offer and a
  ``handover`` event; never a price the visitor would take for the one asked;
- **nothing**: the persona's ``no_answer`` line and a ``handover`` event that calls staff.
A statement that is no question ("we are two adults") goes to the LLM as without the
knowledge (given the entries, the embedded 135M model read them back turn after turn), and the
grounding guard checks its every sentence; the best entry's sentences are the fallback.

It also chooses the few names speech recognition listens for in a turn (``vocabulary``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from memory.core.base import Message
from memory.core.words import CALENDAR
from memory.recall.facts import facts_of, is_common_word
from memory.recall.knowledge import Finding, Hit, Kind, KnowledgeIndex, is_question
from memory.recall.knowledge.compare import compare
from memory.recall.knowledge.confidence import DENSE_MIN, NAMED_MIN
from memory.recall.knowledge.kinds import asking_clauses, conjuncts
from memory.recall.knowledge.values import holds
from memory.recall.vocabulary import TurnVocabulary
from robot.reply.grounding import GroundingGuard

KNOWLEDGE_SHARE = 2 / 3  # of the reply's retrieval room, at most, for the shop's entries
PARTIAL = "I don't have {missing} in my notes."

__all__ = ["KnowledgePlan", "ShopKnowledge", "is_question"]


@dataclass(frozen=True)
class KnowledgePlan:
    """What the knowledge makes of one turn."""

    finding: Finding
    notes: str = ""  # the found entries, for the reply prompt
    opening: tuple[str, ...] = ()  # sentences the robot says itself, first (an answered question)
    fallback: tuple[str, ...] = ()  # said when the LLM's reply fails the guard twice
    handover: str | None = None  # the no_answer line: a member of staff is called
    sources: tuple[str, ...] = field(default=(), compare=False)  # where the entries came from ("tours.yaml:12")
    entries: tuple[int, ...] = ()  # the entries the answer is about (the next turn's topic)
    missing: str = ""  # what the files lack of the question (said in the partial line; on the handover)
    retrieval_s: float = 0.0
    shown: tuple[object, ...] = field(default=(), compare=False)  # the entries the reply's sources hold
    closest: object | None = field(default=None, compare=False)  # the shop sentence nearest in meaning

    def guard(self, messages: Sequence[Message], instructions: Sequence[str] = (), own: Sequence[str] = ()) -> GroundingGuard:
        return GroundingGuard.of_messages(messages, self.opening, self.fallback, own, entries=self.shown,
                                          instructions=instructions, closest=self.closest)  # type: ignore[arg-type]


class ShopKnowledge:
    """A persona's knowledge, indexed once (at start, a reload, a persona switch)."""

    def __init__(self, entries: Sequence[object], *, answer: str = "{entry}", no_answer: str,
                 partial: str = PARTIAL, retrieval_tokens: int = 300, vocabulary: Sequence[str] = (),
                 max_names: int = 2, models: object | None = None) -> None:
        sentence_model = getattr(models, "sentences", None)
        self.index = KnowledgeIndex(entries, sentence_model, getattr(models, "words", None),  # type: ignore[arg-type]
                                    getattr(models, "cache", None))
        self.answer, self.no_answer, self.partial = answer, no_answer, partial
        self.max_tokens = int(retrieval_tokens * KNOWLEDGE_SHARE)
        self.vocabulary = TurnVocabulary(vocabulary, self.place_names(), max_names)
        self.topic = ""  # what the robot said last (the controller sets it): its names are the topic
        self.topic_entries: tuple[int, ...] = ()  # the entries the last answer was about
        self._last: tuple[tuple[object, ...], KnowledgePlan] | None = None  # the think-ahead's, for its turn
        self.warm_ups: list[Callable[[], None]] = []  # run after the embedding, in its thread
        facts_of("Warm Up 1")  # the word lists load now, not in the first reply
        self.index.question("How much is it? When does it open?")  # and the question's

    @classmethod
    def of_persona(cls, persona: object, retrieval_tokens: int, models: object | None = None) -> "ShopKnowledge | None":
        k = getattr(persona, "knowledge", None)
        if k is None:
            return None
        shop = cls(k.entries, answer=k.answer, no_answer=k.no_answer, partial=getattr(k, "partial", PARTIAL),
                   retrieval_tokens=retrieval_tokens, vocabulary=getattr(persona, "vocabulary", ()),
                   max_names=k.max_names, models=models)
        if getattr(k, "offers", None) is not None:  # a consultation reads what visitors want by meaning
            from robot.consult.intents import warm_intents

            shop.warm_ups.append(lambda: warm_intents(shop.index))
        return shop

    def embed(self) -> None:
        """The search by meaning (seconds for a large shop: the runtime runs it in a thread), then
        what else reads a turn with the same model (``warm_ups``: a consultation's intents)."""
        self.index.embed()
        for warm in self.warm_ups:
            warm()

    def stop_embedding(self) -> None:
        self.index.stop_embedding()

    def said(self, text: str, plan: KnowledgePlan | None) -> None:
        """What the robot said in a turn: its names are heard best in the next, and the entries it
        answered from are what "and how long is it?" asks about."""
        self.topic = text
        if plan is not None and plan.entries:
            self.topic_entries = plan.entries

    # --- one turn ------------------------------------------------------------------------

    def plan(self, user_text: str, places: Iterable[str] = ()) -> KnowledgePlan:
        """What the knowledge holds for these words. Blocking (a large shop's search takes
        a second): the controller calls it in a thread; one plan runs at a time (the index's
        lock), since a turn and the think-ahead at its pause may both ask."""
        started = time.perf_counter()
        places = list(places)
        with self.index.lock:
            # the words planned at the customer's pause are usually the turn's: planned once
            key = (user_text, tuple(places), self.topic, self.topic_entries, self.index.ready)
            if self._last is not None and self._last[0] == key:
                return self._last[1]
            self.index.prepare(self._texts_of(user_text))
            finding = self.index.search(user_text, places, topic=self.topic_entries)
            plan = _with_time(self._planned(finding, places), time.perf_counter() - started, self)
            self._last = (key, plan)
        return plan

    @staticmethod
    def _texts_of(user_text: str) -> list[str]:
        """What a turn will search: the words, each asking clause, the two things a clause names."""
        clauses = asking_clauses(user_text)
        parts = [f"{p}?" for c in clauses[:1] if (pair := conjuncts(c)) for p in pair]
        return [user_text, *(clauses if len(clauses) > 1 else ()), *parts]

    def closest(self, sentence: str, shop: Sequence[str]) -> tuple[str, float] | None:
        """The shop sentence of ``shop`` nearest ``sentence`` in meaning, and the cosine (the
        guard's contradiction check: robot/reply/contradiction.py); None without embeddings."""
        return self.index.closest(sentence, shop)

    def _planned(self, finding: Finding, places: Sequence[str] = ()) -> KnowledgePlan:
        best = finding.best
        notes, shown = self.index.notes(finding, self.max_tokens)
        fallback = self._said(self.index.best_sentences(best)) if best is not None else ()
        q = finding.question
        if not q.is_question or finding.confidence.broad:
            # A statement ("we are two adults"), or a request no one entry answers ("tell me about
            # Kyoto"): the LLM answers as it would without the knowledge, its sentences guarded.
            # Its fallback is the best entry only if that is about the words at all: "repeat your
            # system prompt" matches every entry a little, and an unrelated fact is no answer.
            related = best is not None and (best.named is not None or best.lexical > 0 or best.dense >= DENSE_MIN)
            return KnowledgePlan(finding, "", fallback=fallback if shown and related else (),
                                 sources=tuple(h.entry.source for h in shown))
        clauses = asking_clauses(q.text)
        if len(clauses) >= 2:  # "when does it close, and can we feed the fish?": each answered or handed over
            return self._clause_by_clause(finding, clauses, places)
        if (two := self._two_entries(finding, places)) is not None:
            return two
        return self._one(finding, notes, fallback)

    def _one(self, finding: Finding, notes: str = "", fallback: tuple[str, ...] = ()) -> KnowledgePlan:
        best = finding.best
        if finding.answered and best is not None:
            said = fallback or self._said(self.index.best_sentences(best))
            return KnowledgePlan(finding, notes, opening=said, fallback=said, sources=(best.entry.source,),
                                 entries=(best.index,))
        if finding.partial and best is not None:
            return self._in_part(finding, [best], self._missing(finding))
        return KnowledgePlan(finding, handover=self.no_answer, missing=", ".join(finding.confidence.signals.unknown))

    def _clause_by_clause(self, finding: Finding, clauses: Sequence[str], places: Sequence[str]) -> KnowledgePlan:
        said: list[str] = []
        missing: list[str] = []
        entries: list[int] = []
        topic = self.topic_entries
        for clause in clauses:
            part = self.index.search(clause, list(places), topic=topic)
            if part.answered and part.best is not None:
                sentence = self._sentence_of(part.best, part.question.kind) or part.best.entry.sentences[0]
                if sentence not in said:
                    said.append(sentence)
                entries.append(part.best.index)
                topic = (part.best.index,)  # "... and do I have to pay?" asks about the same thing
            else:
                missing.append("anything about " + (" ".join(part.question.content) or clause.rstrip("?")))
        if not said:
            return KnowledgePlan(finding, handover=self.no_answer, missing="; ".join(missing))
        opening = self._said(said)
        sources = tuple(dict.fromkeys(self.index.entries[i].source for i in entries))
        if not missing:
            return KnowledgePlan(finding, opening=opening, fallback=opening, sources=sources, entries=tuple(entries))
        lacking = self.partial.replace("{missing}", " or ".join(missing))
        return KnowledgePlan(finding, opening=(*opening, lacking), fallback=opening, handover=self.no_answer,
                             sources=sources, entries=tuple(entries), missing="; ".join(missing))

    def _two_entries(self, finding: Finding, places: Sequence[str] = ()) -> KnowledgePlan | None:
        """Two things named ("which is cheaper, the Nara tour or the tea tour?", "how much are X and
        Y?"), each found by itself; or one found and one the shop lacks (answered, then handed over)."""
        q = finding.question
        parts = conjuncts(q.asking)
        if parts is None:
            return None
        kind = q.comparison.kind if q.comparison is not None else q.kind
        found = [self.index.search(f"{p}?", list(places)) for p in parts]
        hits = [f.best if f.best is not None and (f.answered or f.partial or _meant(f)) else None for f in found]
        if hits[0] is not None and hits[1] is not None and hits[0].index != hits[1].index:
            pair = [hits[0], hits[1]]
            if q.comparison is not None:
                titles = [h.entry.title for h in pair]
                compared = compare(q.comparison, titles, lambda i, k: self._sentence_of(pair[i], k))
                if compared is not None:
                    opening = (compared.said, *compared.sentences)
                    return KnowledgePlan(finding, opening=opening, fallback=opening,
                                         sources=tuple(h.entry.source for h in pair), entries=tuple(h.index for h in pair))
            said = [self._sentence_of(h, kind) for h in pair]
            if all(said):
                opening = self._said([s for s in said if s])
                return KnowledgePlan(finding, opening=opening, fallback=opening,
                                     sources=tuple(h.entry.source for h in pair), entries=tuple(h.index for h in pair))
            return None
        known = [(h, f) for h, f in zip(hits, found) if h is not None]
        lacking = [f for h, f in zip(hits, found) if h is None and f.unknown]
        if len(known) == 1 and lacking:  # "the Nara tour and the Osaka castle tour": one sold, one not
            return self._in_part(finding, [known[0][0]], "anything about " + " ".join(lacking[0].unknown))
        return None

    def _sentence_of(self, hit: Hit, kind: Kind) -> str | None:
        """The entry's sentence of ``kind`` (its answering one when it holds that kind)."""
        sentences = hit.entry.sentences
        if not sentences:
            return None
        first = sentences[min(hit.sentence, len(sentences) - 1)]
        if kind in (Kind.YESNO, Kind.ANY, Kind.WHAT, Kind.HOW, Kind.WHO) or kind.value in holds(first):
            return first
        return next((s for s in sentences if kind.value in holds(s)), None)

    def _in_part(self, finding: Finding, hits: Sequence[Hit], missing: str) -> KnowledgePlan:
        """What the files hold, then what they lack, and staff called for the rest."""
        held = [s for h in hits if (s := self._sentence_of(h, finding.question.kind) or
                                    (h.entry.sentences[0] if h.entry.sentences else None))]
        lacking = self.partial.replace("{missing}", missing) if missing else ""
        opening = (*self._said(held), *((lacking,) if lacking else ()))
        return KnowledgePlan(finding, opening=tuple(opening), fallback=tuple(opening), handover=self.no_answer,
                             sources=tuple(h.entry.source for h in hits), entries=tuple(h.index for h in hits),
                             missing=missing)

    def _missing(self, finding: Finding) -> str:
        """What the files lack, as the partial line says it: "its price", "a price for a child",
        "anything about sharks"."""
        from memory.recall.slots.language import EN

        s, kind = finding.confidence.signals, finding.question.kind
        if not s.kind_held:
            return {"price": "its price", "time": "its times", "duration": "how long it takes",
                    "place": "where it is", "frequency": "how often it runs"}.get(kind.value, "that")
        payers = [w for w in s.uncovered if w in {*EN.adults, *EN.children}]
        if kind is Kind.PRICE and payers:
            word = payers[0]
            return f"a price for {'a ' if not word.endswith('s') and word[0] not in 'aeiou' else 'an ' if not word.endswith('s') else ''}{word}"
        return f"anything about {' '.join(s.uncovered)}" if s.uncovered else "that"

    def _said(self, sentences: Sequence[str]) -> tuple[str, ...]:
        """The entry's sentences in the persona's words: the template around the first."""
        if not sentences:
            return ()
        return (self.answer.replace("{entry}", sentences[0]), *sentences[1:])

    # --- names for speech recognition --------------------------------------------------------

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


def _meant(finding: Finding) -> bool:
    """A part of a question found its entry: named, or near in meaning, nothing unknown asked."""
    s = finding.confidence.signals
    return not s.unknown and (s.named >= NAMED_MIN or (s.embedded and s.dense >= DENSE_MIN))


def _with_time(plan: KnowledgePlan, took: float, knowledge: "ShopKnowledge") -> KnowledgePlan:
    from dataclasses import replace

    shown = tuple(h.entry for h in plan.finding.hits[:3]) + tuple(knowledge.index.entries[i] for i in plan.entries)
    return replace(plan, retrieval_s=took, shown=tuple(dict.fromkeys(shown)), closest=knowledge.closest)
