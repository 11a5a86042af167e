"""A visitor asks the robot itself to forget them ("Please forget everything I told you").

An operator can forget a visitor (console, MQTT, ``robot memory forget``), but the person at
the kiosk asks the robot. The robot then asks to confirm (persona ``forget_confirm``): a
misheard sentence must not delete anyone. A yes (``prompts/forget_yes.txt``) deletes all of
the visitor's memory, as the operator's forget does (every stored turn, summary, profile and
role prompt; the visitor now talking starts afresh) and the robot says so (``forgotten``); a
no (``prompts/forget_no.txt``) keeps it (``forget_kept``); anything else is a new turn and
nothing is deleted. Nothing of this exchange is stored: the request, the question and the
answer are not conversation, and after a yes there is nothing left to store them in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from memory.words import words_pattern
from prompts import load_word_list
from robot.more import YesWords


class Forget(Enum):
    ASK = "ask"  # a request: ask to confirm
    CONFIRMED = "confirmed"  # a yes to the question: delete
    KEPT = "kept"  # a no to the question: keep
    NONE = "none"  # not about forgetting: a turn like any other


_NOBODY = object()


@dataclass
class ForgetRequests:
    """What an utterance means for forgetting, given whether the robot has just asked."""

    asked: object = _NOBODY  # whom the robot asked to confirm (a visitor), until they answer

    def hear(self, text: str, visitor: str | None = None) -> Forget:
        """``visitor``: who is talking; only the one who was asked can confirm (a yes from
        the next visitor, after a session changed, deletes nobody)."""
        asked, self.asked = self.asked == visitor, _NOBODY
        if asked and _answers("forget_yes").match(text):
            return Forget.CONFIRMED
        if asked and _answers("forget_no").match(text):
            return Forget.KEPT
        if any(not _NEGATED.search(text[: m.start()]) for m in _requests().finditer(text)):
            self.asked = visitor
            return Forget.ASK
        return Forget.NONE


# "Don't forget my name", "you will never forget me": the opposite of a request.
_NEGATED = re.compile(r"\b(?:don't|do not|never|won't|will not|not)\s*$", re.IGNORECASE)


@lru_cache(maxsize=None)
def _answers(name: str) -> YesWords:
    return YesWords.of(load_word_list(name))


@lru_cache(maxsize=None)
def _requests() -> re.Pattern[str]:
    pattern = words_pattern(load_word_list("forget_words"))
    assert pattern is not None  # the list ships with the package
    return pattern
