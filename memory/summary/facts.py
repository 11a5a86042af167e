"""The fact guard: what the person said about themselves survives even a weak summarizer.

A small model (the embedded SmolLM2-135M) often drops a name or a budget from its summary.
Amnesia-free means such a drop must not lose the fact, so after each summary the person's
own statements of identity and constraints (found by plain patterns: a stated name, an
amount with a currency sign, or a sentence with one of the persona's fact words) are kept
verbatim on one marked line under the summary (``Customer's own words: "..."``, after the
user label). The line is carried from version to version whether or not the LLM's text also
says it (a later, weaker summary may drop what an earlier one kept), and it is bounded: the
newest ``max_facts`` statements stay.
"""

from __future__ import annotations

import re
from typing import Iterable

from memory.core.records import StoredRemark
from memory.core.words import words_alternation

_NAME = re.compile(r"\b(?:my name is|my name's|name is|call me)\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)", re.I)
_MONEY = r"[$€£¥]\s?\d"  # an amount with a currency sign is a fact whatever the words
# Any "<label>'s own words:" line, so a marker written under another user label still reads back.
_MARKER_LINE = re.compile(r"^\s*[^\s\"'.:][^\"\n:]{0,40}'s own words:")
_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
# A time stamp a transcript carries ("[2:01 pm on 23 January, 2022]") is no statement of the person's.
TIME_STAMP = re.compile(r"\[[^\]\n]{0,60}\b\d{1,2}:\d{2}[^\]\n]{0,60}\]")
_MAX_WORDS = 25


def marker(user_label: str) -> str:
    """The marker that opens the guard's line: ``Customer's own words:``."""
    return f"{user_label}'s own words:"


def fact_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """The fact words (``memory/core/words.py``), or an amount with a currency sign."""
    alternation = words_alternation(words)
    return re.compile(f"{alternation}|{_MONEY}" if alternation else _MONEY, re.I)


def split_marker(summary: str) -> tuple[str, list[str]]:
    """A summary's own text and the facts on its marker line (if any)."""
    body, facts = [], []
    for line in summary.splitlines():
        if _MARKER_LINE.match(line):
            facts += [f.strip().rstrip(".") for f in re.findall(r'"([^"]+)"', line)]
        else:
            body.append(line)
    return "\n".join(body).strip(), facts


class FactGuard:
    """Finds the person's statements of fact and keeps them on the summary's marker line."""

    def __init__(self, words: Iterable[str], user_label: str = "User", max_facts: int = 8) -> None:
        self.marker = marker(user_label)
        self.max_facts = max_facts
        self.pattern = fact_pattern(words)  # also ranks the extractive summary's sentences

    def extract(self, turns: Iterable[StoredRemark]) -> list[str]:
        """The person's statements of name and constraints, in order, as short quotes."""
        facts: list[str] = []
        for turn in turns:
            if turn.role != "user":
                continue  # the robot's suggestions are the LLM summary's business
            for match in _NAME.finditer(turn.text):
                facts.append(f"my name is {match.group(1)}")
            for sentence in _SENTENCE.findall(TIME_STAMP.sub(" ", turn.text)):
                sentence = sentence.strip()
                if sentence and self.pattern.search(sentence) and not _NAME.search(sentence):
                    facts.append(" ".join(sentence.split()[:_MAX_WORDS]).rstrip(".!?"))
        return facts

    def apply(self, summary: str, previous_summary: str, new_turns: Iterable[StoredRemark]) -> str:
        """``summary`` with a marker line quoting the newest ``max_facts`` guarded facts."""
        body, _ = split_marker(summary)  # a marker line the LLM copied is rebuilt, not trusted
        _, old_facts = split_marker(previous_summary)
        facts: list[str] = []
        for fact in old_facts + self.extract(new_turns):
            if fact.lower() not in (f.lower() for f in facts):
                facts.append(fact)
        kept = facts[-self.max_facts:] if self.max_facts > 0 else []
        if not kept:
            return body
        quoted = " ".join(f'"{f}."' for f in kept)
        return f"{body}\n{self.marker} {quoted}".strip()
