"""The fact guard: what the customer said about themselves survives even a weak summarizer.

A small model (the embedded SmolLM2-135M) often drops a name or a budget from its summary.
Amnesia-free means such a drop must not lose the fact, so after each summary the customer's
own statements of identity and constraints (found by plain patterns) are kept verbatim on one
marked line under the summary. The line is carried from version to version whether or not the
LLM's text also says it (a later, weaker summary may drop what an earlier one kept), and it is
bounded: the newest ``max_facts`` statements stay.
"""

from __future__ import annotations

import re
from typing import Iterable

from memory.records import StoredTurn

MARKER = "Customer's own words:"

_NAME = re.compile(r"\b(?:my name is|my name's|name is|call me)\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)", re.I)
# Words that make a sentence a constraint or a preference worth keeping word for word.
_CONSTRAINT = re.compile(
    r"\b(budget|dollars?|yen|euros?|pounds?|allerg\w*|vegetarian|vegan|halal|kosher|gluten|"
    r"wheelchair|mobility|stairs|walking|cane|crutches|pregnan\w*|kids?|child(?:ren)?|baby|"
    r"wife|husband|partner|family|adults?|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|weekend|nights?|days?|weeks?|can't eat|cannot eat|"
    r"don't eat|no pork|no meat|spicy|hate|love|prefer\w*)\b|[$€£¥]\s?\d",
    re.I,
)
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORD = re.compile(r"[A-Za-z0-9$€£¥']+")
_MAX_WORDS = 25


def extract_facts(turns: Iterable[StoredTurn]) -> list[str]:
    """The customer's statements of name and constraints, in order, as short quotes."""
    facts: list[str] = []
    for turn in turns:
        if turn.role != "user":
            continue  # the consultant's suggestions are the LLM summary's business
        for match in _NAME.finditer(turn.text):
            facts.append(f"my name is {match.group(1)}")
        for sentence in _SENTENCE.findall(turn.text):
            sentence = sentence.strip()
            if sentence and _CONSTRAINT.search(sentence) and not _NAME.search(sentence):
                facts.append(" ".join(sentence.split()[:_MAX_WORDS]).rstrip(".!?"))
    return facts


def key_words(fact: str) -> list[str]:
    """The words of a fact that a summary must contain to count as carrying it:
    names, numbers and the constraint words themselves."""
    words = _WORD.findall(fact)
    keep = [w for i, w in enumerate(words) if any(ch.isdigit() for ch in w) or (i > 0 and w[0].isupper())]
    keep += [m.group(0) for m in _CONSTRAINT.finditer(fact)]
    return [w.lower() for w in keep] or [w.lower() for w in words]


def carried(fact: str, text: str) -> bool:
    lowered = text.lower()
    # Compare word stems loosely ("dollars" ~ "dollar"), so a rephrased fact still counts.
    return all(w[: max(4, len(w) - 2)] in lowered for w in key_words(fact))


def split_marker(summary: str) -> tuple[str, list[str]]:
    """A summary's own text and the facts on its marker line (if any)."""
    body, facts = [], []
    for line in summary.splitlines():
        if line.strip().startswith(MARKER):
            facts += [f.strip().rstrip(".") for f in re.findall(r'"([^"]+)"', line)]
        else:
            body.append(line)
    return "\n".join(body).strip(), facts


def guard(summary: str, previous_summary: str, new_turns: Iterable[StoredTurn], max_facts: int = 8) -> str:
    """``summary`` with a marker line quoting the newest ``max_facts`` guarded facts."""
    body, _ = split_marker(summary)  # a marker line the LLM copied is rebuilt, not trusted
    _, old_facts = split_marker(previous_summary)
    facts: list[str] = []
    for fact in old_facts + extract_facts(new_turns):
        if fact.lower() not in (f.lower() for f in facts):
            facts.append(fact)
    kept = facts[-max_facts:] if max_facts > 0 else []
    if not kept:
        return body
    quoted = " ".join(f'"{f}."' for f in kept)
    return f"{body}\n{MARKER} {quoted}".strip()
