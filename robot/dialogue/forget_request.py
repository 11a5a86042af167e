"""A visitor asks the robot itself to forget them ("Please forget everything I told you").

An operator can forget a visitor (console, MQTT, ``robot memory forget``), but the person at
the kiosk asks the robot. The robot then asks to confirm (persona ``forget.confirm``): a
misheard sentence must not delete anyone. A yes (``prompts/forget_yes.txt``) deletes all of
the visitor's memory, as the operator's forget does (every stored turn, summary, profile and
role prompt; the visitor now talking starts afresh) and the robot says so (``forget.done``);
a no (``prompts/forget_no.txt``) keeps it (``forget.kept``); anything else is a new turn and
nothing is deleted. Nothing of this exchange is stored: the request, the question and the
answer are not conversation, and after a yes there is nothing left to store them in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Sequence

from memory.core.words import words_pattern
from prompts import load_word_list
from robot.dialogue.more import YesWords


class Forget(Enum):
    ASK = "ask"  # a request: ask to confirm
    CONFIRMED = "confirmed"  # a yes to the question: delete
    KEPT = "kept"  # a no to the question: keep
    NONE = "none"  # not about forgetting: a turn like any other


@dataclass(frozen=True)
class ForgetWords:
    """What asks to be forgotten, and what answers yes or no (a persona's, else prompts/)."""

    request: re.Pattern[str]
    yes: YesWords
    no: YesWords

    @classmethod
    def of(cls, words: Sequence[str] | None = None, yes: Sequence[str] | None = None,
           no: Sequence[str] | None = None) -> ForgetWords:
        return _forget_words(*(tuple(x) if x is not None else None for x in (words, yes, no)))


@lru_cache(maxsize=8)
def _forget_words(words: tuple[str, ...] | None, yes: tuple[str, ...] | None,
                  no: tuple[str, ...] | None) -> ForgetWords:
    request = words_pattern(load_word_list("forget_words") if words is None else words)
    assert request is not None  # a persona's list has at least one phrase; the default ships
    return ForgetWords(request, YesWords.of(load_word_list("forget_yes") if yes is None else yes),
                       YesWords.of(load_word_list("forget_no") if no is None else no))


# "Don't forget my name", "you will never forget me": the opposite of a request.
_NEGATED = re.compile(r"\b(?:don't|do not|never|won't|will not|not)\s*$", re.IGNORECASE)
_NOBODY = object()


@dataclass
class ForgetRequests:
    """What an utterance means for forgetting, given whether the robot has just asked."""

    asked: object = _NOBODY  # whom the robot asked to confirm (a visitor), until they answer

    def hear(self, text: str, words: ForgetWords | None = None, visitor: str | None = None) -> Forget:
        """``visitor``: who is talking; only the one who was asked can confirm (a yes from
        the next visitor, after a session changed, deletes nobody)."""
        words = words or ForgetWords.of()
        asked, self.asked = self.asked == visitor, _NOBODY
        if asked and words.yes.match(text):
            return Forget.CONFIRMED
        if asked and words.no.match(text):
            return Forget.KEPT
        if any(not _NEGATED.search(text[: m.start()]) for m in words.request.finditer(text)):
            self.asked = visitor
            return Forget.ASK
        return Forget.NONE
