"""What the robot says and does at once: one ``Sentence`` to speak with its gestures, the LLM's
tags and the ones the planner chose (``PlannedGesture``, tied to the word they go with)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PlannedGesture:
    """A gesture for a sentence, and the word it goes with."""

    name: str
    word_index: int  # the word's number among the sentence's words (split on spaces), from 0
    char_offset: int  # where the word starts in the sentence's text
    word: str  # the words matched ("Kyoto", "of course")

    def fraction(self, text: str) -> float:
        """How far into the sentence the word starts, as a share of its characters: the TTS
        gives no word timings, and speech time follows characters more closely than words."""
        return self.char_offset / len(text) if text else 0.0


@dataclass(frozen=True)
class Sentence:
    """One sentence to speak, with the gestures to perform: the LLM's tags as it starts,
    the planner's (robot/gestures/planner.py) as their word is said."""

    text: str
    gestures: tuple[str, ...] = ()  # the LLM's [gesture:NAME] tags
    planned: tuple[PlannedGesture, ...] = ()  # the persona's gesture_rules chose these (no tag here)
    ready_at: float = field(default=0.0, compare=False)  # monotonic time it was complete
