"""What a visitor wants of a consultation, read by meaning: each clause of the turn, its offers'
names replaced by "it", is compared with examples of each intent (``prompts/consult_examples.txt``)
by the knowledge's sentence model. An intent is read when a clause is near enough its examples and
nearer them than the examples of no intent ("we took the bus instead of the train" is near
"instead", and nearer a remark about the past).

Why by example: the word lists (``consult_words.txt``) read a third of new phrasings
(bench/consult_intents.py: "how do I pay for all this?", "scratch the bamboo tour", "what do we
owe for the lot" were nothing to them) and took "my friend recommended Kyoto" for a request.
Without the sentence model (not loaded yet, or a shop too large) the word lists read the turn.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from memory.recall.knowledge.kinds import clauses
from prompts import load_word_list

if TYPE_CHECKING:
    from memory.recall.embedding import Embedder

NEAR = 0.45  # a clause's cosine with an intent's nearest examples at which it says that intent
MARGIN = 0.05  # ... and by how much nearer those than the nearest examples of no intent
NEAREST = 2  # the examples averaged per intent: one stray example does not decide
VETO = 0.05  # a word list's intent stands unless no intent's examples are nearer by this much
NONE = "none"
PLAN_CHANGES = ("choose", "add", "drop", "instead")  # by meaning only with an offer named: "we'll think about it"
_JOINS = re.compile(r",?\s+\b(?:and then|and also|and|then|but)\b\s+", re.IGNORECASE)


class IntentModel:
    """The intents of one turn by meaning. ``embedder``: the knowledge's sentence model."""

    def __init__(self, embedder: "Embedder", examples: Sequence[tuple[str, str]] | None = None) -> None:
        self.embedder = embedder
        pairs = list(examples) if examples is not None else _examples()
        labels = np.array([label for label, _ in pairs])
        self._masks = {label: labels == label for label in sorted(set(labels.tolist()))}  # each intent's rows
        self._texts = [text for _, text in pairs]
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        """The examples are embedded: until then the word lists read a turn (no turn waits)."""
        return self._vectors is not None

    def warm(self) -> None:
        """Embed the examples (about a hundred short sentences: a fraction of a second). The
        knowledge's background thread calls it after its own vectors (``ShopKnowledge.warm_ups``)."""
        self._example_vectors()

    def read(self, text: str, names: Sequence[tuple[int, int]] = (),
             words: Callable[[str], set[str]] | None = None) -> set[str]:
        """The intents ``text`` says; ``names``: the character spans of the offers it names;
        ``words``: the word lists' reading of a clause. A clause's words that say an intent are
        kept unless the clause is nearer the examples of no intent ("my friend recommended Kyoto");
        the clause also says the intent its meaning is near (a change of the plan only where an
        offer is named): "get rid of it, we'll be too tired" drops, whatever "too" adds."""
        parts = _parts(_masked(text, names))
        if not parts:
            return set()
        vectors = self.embedder.embed(parts)
        examples = self._example_vectors()
        found: set[str] = set()  # the intents' names (robot/consult/intents.py's ``Intent`` values)
        for part, sims in zip(parts, vectors @ examples.T):
            scores, none = self._scores(sims)
            label, best = max(scores.items(), key=lambda kv: kv[1])
            # a word of the lists stands unless the clause is clearly nearer no intent
            said = {i for i in (words(part) if words is not None else set()) if scores.get(i, -1.0) >= none - VETO}
            found |= said
            if best >= NEAR and best - none >= MARGIN and (names or label not in PLAN_CHANGES):
                found.add(label)  # a plan changed by meaning alone names its offer ("it" may be anything)
        return found

    def leaning(self, text: str, names: Sequence[tuple[int, int]] = (), among: Sequence[str] = ()) -> str | None:
        """The intent ``text`` leans to, below the bar ``read`` sets: of the intents ``among`` (all
        when empty) the one whose examples are nearest one of its clauses, where they are at least
        as near as the examples of no intent.
        A consultation asks it only where the turn's context makes a request likely (an open
        question, the visitor's wishes told, nothing recommended yet): "Anything quick?"."""
        parts = _parts(_masked(text, names))
        if not parts:
            return None
        best: tuple[float, str] | None = None
        for sims in self.embedder.embed(parts) @ self._example_vectors().T:
            scores, none = self._scores(sims)
            label, score = max(((k, v) for k, v in scores.items() if not among or k in among), key=lambda kv: kv[1])
            if score >= none and (best is None or score > best[0]):
                best = (score, label)
        return None if best is None else best[1]

    def _scores(self, sims: np.ndarray) -> tuple[dict[str, float], float]:
        """Each intent's closeness to a clause (its ``NEAREST`` examples' mean cosine), and no intent's."""
        scores = {label: float(np.sort(sims[mask])[-NEAREST:].mean()) for label, mask in self._masks.items()}
        return scores, scores.pop(NONE, -1.0)

    def _example_vectors(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                self._vectors = self.embedder.embed(self._texts)
            return self._vectors


def _examples() -> list[tuple[str, str]]:
    out = []
    for line in load_word_list("consult_examples"):
        label, _, text = line.partition(":")
        if text.strip():
            out.append((label.strip(), text.strip()))
    return out


def _masked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """The offers' names said as "it": the intent is in the other words ("drop the Nara tour" and
    "add the Nara tour" are near in meaning through the name they share)."""
    out, at = [], 0
    for start, end in sorted(spans):
        if start < at:
            continue
        out += [text[at:start], "it"]
        at = end
    out.append(text[at:])
    return re.sub(r"\b(?:the|a)\s+it\b", "it", "".join(out), flags=re.IGNORECASE)


def _parts(text: str) -> list[str]:
    """The clauses of a turn, and what is joined by "and" / "then" ("add it and then let's pay")."""
    return [p.strip(" ,.") for c in clauses(text) for p in _JOINS.split(c) if p.strip(" ,.")]
