"""Answers that need two entries: "which is cheaper, the Nara tour or the tea tour?", "how much
are the Nara tour and the tea tour?". The values are read from each entry's own sentence of the
kind asked (``values.py``) and compared exactly; what the robot says names both and their values,
so every number it says is one the files hold, and the comparison is computed, never generated.

A value is compared only with one of the same measure: prices of the same currency and of the
same unit ("per adult" against "per person" is said as such, both named), durations in minutes,
times of day by the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from memory.recall.knowledge.kinds import Comparison, Kind
from memory.recall.knowledge.values import clock_times, durations, minutes_of_clock, money_in


@dataclass(frozen=True)
class Compared:
    """The outcome of a comparison: the winner, and each entry's sentence that holds its value."""

    winner: int  # index into the compared entries
    sentences: tuple[str, ...]  # each entry's sentence of the kind compared, in the order named
    values: tuple[str, ...]  # the value read from each, as written ("6,500 yen", "4 hours")
    said: str  # the robot's sentence: "The Nara Deer Park Half-Day Tour is cheaper."


def value_of(kind: Kind, sentence: str) -> tuple[float, str] | None:
    """The first value of ``kind`` in a sentence: (a number to compare, the value as written)."""
    if kind is Kind.PRICE:
        found = money_in(sentence)
        return (float(found[0].amount), found[0].said()) if found else None
    if kind is Kind.DURATION:
        found_d = durations(sentence)
        return (float(found_d[0]), _duration_said(sentence)) if found_d else None
    if kind is Kind.TIME:
        found_t = clock_times(sentence)
        return (float(minutes_of_clock(found_t[0])), found_t[0]) if found_t else None
    return None


def compare(comparison: Comparison, titles: Sequence[str], pick: Callable[[int, Kind], str | None]) -> Compared | None:
    """Compare the entries named ``titles``; ``pick(i, kind)`` gives entry i's sentence of that
    kind. None when a value is missing or the values cannot be compared (two currencies)."""
    sentences, values, numbers = [], [], []
    currencies = set()
    for i in range(len(titles)):
        sentence = pick(i, comparison.kind)
        value = value_of(comparison.kind, sentence) if sentence else None
        if sentence is None or value is None:
            return None
        if comparison.kind is Kind.PRICE:
            currencies.add(money_in(sentence)[0].currency)
        sentences.append(sentence)
        numbers.append(value[0])
        values.append(value[1])
    if len(currencies) > 1:
        return None  # 5 pounds against 6,500 yen: no exchange rate is in the files
    best = min(numbers) if comparison.lowest else max(numbers)
    winners = [i for i, n in enumerate(numbers) if n == best]
    if len(winners) > 1:
        said = f"The {' and the '.join(titles[i] for i in winners)} are the same: {values[winners[0]]}."
    else:
        said = f"The {titles[winners[0]]} is {comparison.word}."
    return Compared(winners[0], tuple(sentences), tuple(values), said)


def _duration_said(sentence: str) -> str:
    import re

    m = re.search(r"\b(\d+(?:\.\d+)?|an?|one|two|three|four|five|six)[\s-]+(?:minute|hour|day|night)s?\b", sentence,
                  re.IGNORECASE)
    return m.group(0) if m else ""
