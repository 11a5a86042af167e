"""The last rung of the fold ladder: a summary made of the person's own sentences.

When the LLM cannot summarize a chunk (it copies the transcript, loses the entities, times
out, or is down), retrying the same request forever stalls the backlog (issue 18). Instead,
the chunk is kept *extractively*: the previous summary's sentences and the person's own
sentences of the chunk, as the fact guard quotes them, ranked by what they carry (entities,
fact words) and cut to the summary's token cap. No LLM is involved, so it always succeeds;
the next LLM summary gets it as its previous memory and can rewrite it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.core.records import StoredRemark
from memory.core.tokens import count_tokens
from memory.summary.entities import entities
from memory.summary.facts import TIME_STAMP

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_MIN_WORDS = 4  # "Hey Nate!" and "Thanks." say nothing worth a place in the memory


@dataclass(frozen=True)
class _Candidate:
    order: int
    text: str
    quoted: bool  # the person's words (quoted) or a sentence of the previous summary
    score: int


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


class ExtractiveCompressor:
    def __init__(self, user_label: str, fact: re.Pattern[str], max_tokens: int) -> None:
        """``fact``: what makes a sentence a fact (the fact guard's ``pattern``)."""
        self.user_label = user_label
        self.max_tokens = max_tokens
        self._fact = fact
        self._opening = f"{user_label} said:"

    def compress(self, previous_body: str, turns: list[StoredRemark]) -> str:
        said = [s for t in turns if t.role == "user"
                for s in _sentences(TIME_STAMP.sub(" ", t.text))
                if len(s.split()) >= _MIN_WORDS and not s.endswith("?")]  # a question states nothing
        # The previous summary: its own sentences, and the quotes an earlier compression kept.
        old_quotes = re.findall(r'"([^"]+)"', previous_body)
        old = _sentences(re.sub(r'"[^"]+"', " ", previous_body).replace(self._opening, " "))
        parts = [(s, False) for s in old] + [(q, True) for q in old_quotes + said]
        names = entities([text for text, _ in parts], ignore={self.user_label})
        candidates = [_Candidate(i, text, quoted, self._score(text, names))
                      for i, (text, quoted) in enumerate(parts)]
        # Most informative first; among equals the newer (a changed fact replaces the old one).
        ranked = sorted(candidates, key=lambda c: (-c.score, -c.order))
        kept: list[_Candidate] = []
        for candidate in ranked:
            if count_tokens(self._render(kept + [candidate])) <= self.max_tokens:
                kept.append(candidate)
        return self._render(kept)

    def _score(self, text: str, names: set[str]) -> int:
        words = set(re.findall(r"[\w'’-]+", text))
        return 2 * len(words & names) + (2 if self._fact.search(text) else 0) + 1

    def _render(self, kept: list[_Candidate]) -> str:
        ordered = sorted(kept, key=lambda c: c.order)
        plain = " ".join(c.text for c in ordered if not c.quoted)
        quotes = " ".join(f'"{c.text}"' for c in ordered if c.quoted)
        return f"{plain} {self._opening} {quotes}".strip() if quotes else plain
