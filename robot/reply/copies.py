"""What an LLM sentence must not be: a line said before, the robot's own bookkeeping, or the
visitor's words in the visitor's voice. A small model (the embedded 135M one) writes all three;
``robot.reply.stream`` skips such a sentence and says the model's next one.
"""

from __future__ import annotations

import re
from typing import Collection, Sequence

from memory.core.base import Message
from memory.core.words import COMMON_WORDS, share_of_words_in

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_NUMBER = re.compile(r"\d+")
_QUOTED = re.compile(r'"([^"\n]+)"')
REPEAT_SHARE = 0.8  # of an LLM sentence's words (common ones aside) in one said before: a repeat


def sentences_of(text: str) -> list[str]:
    """``text``'s sentences, as the copy checks compare them (at ., ! or ? and a space)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def said_before(messages: Sequence[Message], role: str = "assistant") -> set[str]:
    """The sentences of ``role`` earlier in the conversation, lower-cased: the robot's (an LLM
    sentence among them is not said again: the embedded 135M model repeats its last reply's
    lines) or the visitor's ("user")."""
    return {s.lower() for m in messages if m["role"] == role for s in sentences_of(m["content"])}


def visitor_lines(messages: Sequence[Message]) -> set[str]:
    """The visitor's words the LLM is shown, lower-cased: their turns' sentences, and what the
    system prompt quotes (the summary keeps a visitor's words in quotes: "Customer's own words:
    \"my name is Ken.\"", memory/summary/facts.py). A model copies either back."""
    quoted = {q.strip().lower() for m in messages if m["role"] == "system" for q in _QUOTED.findall(m["content"])}
    return said_before(messages, "user") | {q for q in quoted if q}


def copies(sentence: str, earlier: Collection[str], common: frozenset[str] = COMMON_WORDS) -> bool:
    """``sentence`` says again most of the words of a line of ``earlier``, and no number that
    line lacks ("Noted: when April." after "Noted: travellers 2 adults; when April."): a model
    copying its last reply, stale or not. "Part 1 line 3" is no copy of "Part 1 line 2": a
    different number is a different fact."""
    numbers = _NUMBER.findall(sentence)
    return any(_in_order(numbers, _NUMBER.findall(line)) and (share := share_of_words_in(sentence, line, common)) is not None
               and share >= REPEAT_SHARE for line in earlier)


def imitates(sentence: str, own_heads: Sequence[str]) -> bool:
    """``sentence`` (lower case) begins as one of the robot's own fixed lines does ("Noted:"):
    the small model writing the robot's bookkeeping about words it never had ("Noted: in April;
    carried lessons."), which only the robot's slot and recap lines may say."""
    return any(sentence.startswith(head) for head in own_heads)


def speaks_as_visitor(sentence: str, visitor_lines: Collection[str], first_person: Collection[str]) -> bool:
    """``sentence`` (lower case) says the visitor's words again in the visitor's own person: it
    keeps a first-person phrase of one of their lines (a first-person word and the word after
    it: "my name", "we want"), and most of its other words and all its numbers are theirs
    ("Hello, we're two adults and we want to go in April." after "Hello, my name is Ken." and
    "We are two adults. We want to go in April."): the small model going on with the customer's
    words instead of answering them. The robot's own first person is no copy ("I can help with
    Kyoto and Nara."), nor are the visitor's facts said back ("Kyoto and Nara in April.")."""
    own = _first_person_pairs(sentence, first_person) if first_person else set()
    if not own or not any(own & _first_person_pairs(line, first_person) for line in visitor_lines):
        return False
    theirs = " ".join(visitor_lines)
    share = share_of_words_in(sentence, theirs, COMMON_WORDS | frozenset(first_person))
    return share is not None and share >= REPEAT_SHARE and set(_NUMBER.findall(sentence)) <= set(_NUMBER.findall(theirs))


def _first_person_pairs(text: str, first_person: Collection[str]) -> set[tuple[str, str]]:
    words = [w.replace("’", "'") for w in _WORD.findall(text.lower())]
    return {(a, b) for a, b in zip(words, words[1:]) if a in first_person}


def _in_order(numbers: list[str], within: list[str]) -> bool:
    """``numbers`` all appear in ``within``, in the same order (as a subsequence)."""
    rest = iter(within)
    return all(n in rest for n in numbers)
