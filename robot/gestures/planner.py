"""The gesture planner: gestures chosen from what a sentence says, by the persona's rules.

A small model rarely writes ``[gesture:NAME]`` tags (SmolLM2-135M wrote none in 20 turns),
so the body would never move while the robot talks. The planner reads each sentence the
robot is about to say and picks a gesture by the persona's ``gesture_rules`` (data, not
code: greeting words -> bow, a place of the persona's vocabulary -> point, ...), tied to
the word it belongs to so the speaker can make it as that word is said.

What it decides, and why:
- The LLM's tags win: a sentence that carries a tag gets nothing planned (the model meant it).
- At most one planned gesture per sentence, from the first rule that matches (rule order
  is priority): a body that moved at every keyword would look restless.
- Within that rule, the earliest matching word in the sentence is the one the gesture goes with.
- A persona without rules plans nothing.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import AsyncIterator, Protocol, Sequence

from memory.core.words import words_pattern
from robot.gestures.sentence import PlannedGesture, Sentence


class Rule(Protocol):
    """One rule as the persona states it (``config.schema.GestureRule``)."""

    gesture: str
    when: str  # "words" | "vocabulary"
    words: list[str]


@dataclass(frozen=True)
class _CompiledRule:
    gesture: str
    pattern: re.Pattern[str]


class GesturePlanner:
    """Picks a sentence's gesture by the persona's ordered rules; ``vocabulary`` is the
    persona's list of names (places, products) that ``when: vocabulary`` rules match."""

    def __init__(self, rules: Sequence[Rule], vocabulary: Sequence[str] = ()) -> None:
        self._rules = [compiled for rule in rules if (compiled := _compile(rule, vocabulary)) is not None]

    @property
    def empty(self) -> bool:
        return not self._rules

    def plan(self, text: str) -> tuple[PlannedGesture, ...]:
        """The gesture for one sentence (tags already cut out): none, or one, from the first
        rule that matches, at the earliest word it matches."""
        for rule in self._rules:
            match = rule.pattern.search(text)
            if match is not None:
                start = match.start()
                return (PlannedGesture(rule.gesture, len(text[:start].split()), start, match.group(0)),)
        return ()

    def annotate(self, sentence: Sentence) -> Sentence:
        """The sentence with its planned gesture, unless the LLM tagged it (its tags win)."""
        if sentence.gestures or not sentence.text or self.empty:
            return sentence
        planned = self.plan(sentence.text)
        return dataclasses.replace(sentence, planned=planned) if planned else sentence

    async def annotated(self, sentences: AsyncIterator[Sentence]) -> AsyncIterator[Sentence]:
        """``annotate`` over a stream. Closing this closes ``sentences`` (the LLM request)."""
        try:
            async for sentence in sentences:
                yield self.annotate(sentence)
        finally:
            aclose = getattr(sentences, "aclose", None)
            if aclose is not None:
                await aclose()


def _compile(rule: Rule, vocabulary: Sequence[str]) -> _CompiledRule | None:
    words = vocabulary if rule.when == "vocabulary" else rule.words
    pattern = words_pattern(words)
    return None if pattern is None else _CompiledRule(rule.gesture, pattern)
