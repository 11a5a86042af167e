"""The quality gate of a summary: names, numbers, dates and places must survive.

A weak summarizer writes fluent text that loses what matters. Before a summary is accepted,
the entities of what it replaces (the previous summary and the turns it folds) are looked up
in it; if too few survive (``SummaryPolicy.min_entity_recall``), it is rejected and the next
rung of the fold ladder is tried (``memory/summary/folding.py``).

Entities are found by plain patterns: numbers (digits), month and weekday names, and
capitalized words that are not at the start of a sentence (a word that starts a sentence
counts only when it is also capitalized elsewhere: "Kyoto is far" and "go to Kyoto").
Clock times of time stamps ("[2:01 pm on 23 January, 2022]") are not entities; the date is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}(?:\s*[ap]\.?m\.?)?", re.I)
_SENTENCES = re.compile(r"[^.!?\n]+")
_TOKEN = re.compile(r"[A-Za-z][\w'’-]*|\d+(?:[.,]\d+)*")
# Capitalized for grammar, not because they name something.
_NOT_NAMES = frozenset("""I I'm I've I'd I'll OK Okay Hey Hi Hello Thanks Thank Yes Yeah No Oh Wow Sure Well
Mr Mrs Ms Dr""".split())


@dataclass(frozen=True)
class GateResult:
    recall: float  # share of the required entities found in the summary (1.0: none required)
    missing: tuple[str, ...]  # what it lost, for the log


def _number(token: str) -> str:
    return token.replace(",", "")


def _word(token: str) -> str:
    return re.sub(r"['’]s$", "", token)  # "Ken's" names Ken


def entities(texts: Iterable[str], ignore: Iterable[str] = ()) -> set[str]:
    """The entities of ``texts``: numbers, and capitalized words that are names (see above)."""
    skip = _NOT_NAMES | set(ignore)
    inner: set[str] = set()
    initial: set[str] = set()
    for text in texts:
        for sentence in _SENTENCES.findall(CLOCK_TIME.sub(" ", text)):
            for i, token in enumerate(_TOKEN.findall(sentence)):
                if token[0].isdigit():
                    inner.add(_number(token))
                elif token[0].isupper() and _word(token) not in skip:
                    (inner if i else initial).add(_word(token))
    return inner | {t for t in initial if t in inner}


def _present(text: str) -> set[str]:
    return {_number(t) if t[0].isdigit() else _word(t) for t in _TOKEN.findall(text)}


def check(summary: str, required: set[str]) -> GateResult:
    """How many of the ``required`` entities the summary keeps (same spelling, same case:
    a name is written with its capital; "May" the month is not "may")."""
    if not required:
        return GateResult(1.0, ())
    present = _present(summary)
    missing = tuple(sorted(required - present))
    return GateResult(1 - len(missing) / len(required), missing)
