"""The offer to tell more: what a cut reply held back, and whether the customer wants it.

A reply stops at the persona's spoken-length budget (``robot.reply.stream``), holding back the
next sentence it had already generated, and ends with "Shall I tell you more?". If the
customer's next words are a yes, the new reply starts with the held sentence (no wait for
the LLM) and the LLM is asked to go on after it; anything else is a new turn and the held
sentence is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from memory.core.base import Message
from prompts import load_prompt, load_word_list

_WORD = re.compile(r"[a-z']+")
_MAX_WORDS = 8  # a longer answer is a new request, whatever words it starts with


@dataclass(frozen=True)
class YesWords:
    """Phrases that say yes (``prompts/more_yes.txt`` or the persona's ``more_yes``) and the
    filler words that may stand around them (``prompts/more_filler.txt``). Other answers of
    a few words (a goodbye: robot/dialogue/farewell.py) are matched the same way with their
    own lists."""

    phrases: tuple[tuple[str, ...], ...]  # longest first, so "go on" wins over a bare "go"
    filler: frozenset[str]
    max_words: int = _MAX_WORDS

    @classmethod
    def of(cls, phrases: Iterable[str] | None = None, filler: str = "more_filler",
           max_words: int = _MAX_WORDS) -> "YesWords":
        return _yes_words(tuple(phrases) if phrases is not None else load_word_list("more_yes"), filler, max_words)

    def match(self, text: str) -> bool:
        """True when ``text`` is a yes to the offer (or what the lists say): one of the phrases
        and otherwise only filler."""
        words = _WORD.findall(text.lower())
        if not words or len(words) > self.max_words:
            return False
        said_yes, i = False, 0
        while i < len(words):
            phrase = next((p for p in self.phrases if tuple(words[i:i + len(p)]) == p), None)
            if phrase is not None:
                said_yes, i = True, i + len(phrase)
            elif words[i] in self.filler:
                i += 1
            else:
                return False
        return said_yes


@lru_cache(maxsize=16)
def _yes_words(phrases: tuple[str, ...], filler: str, max_words: int) -> YesWords:
    split = {tuple(_WORD.findall(p.lower())) for p in phrases}
    ordered = tuple(sorted((p for p in split if p), key=len, reverse=True))
    return YesWords(ordered, frozenset(w.lower() for w in load_word_list(filler)), max_words)


def continuation_messages(messages: list[Message], held: Iterable[str]) -> list[Message]:
    """The conversation for the LLM after a yes: ``messages`` (memory's, ending with the yes),
    the held sentences as the robot's words so far, and the request to go on after them."""
    said = " ".join(held).strip()  # as the LLM wrote it, gesture tags included
    return [*messages, {"role": "assistant", "content": said},
            {"role": "user", "content": load_prompt("more_continue").strip()}]
