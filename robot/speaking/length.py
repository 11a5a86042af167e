"""How long a sentence takes to say, and where a first sentence too long for the spoken-length
budget is cut (``robot.reply.stream``; persona ``max_reply_s``)."""

from __future__ import annotations

import re

from robot.gestures.tags import TAG

_CLAUSE_END = re.compile(r"[,;:](?=\s)|\s[-–—](?=\s)")  # a comma, semicolon, colon or dash between words
_MIN_HEAD_WORDS = 3  # a shorter head is no clause a listener can follow
# Fitted on pyttsx3/espeak-ng at 150 wpm, eleven sentences of 1 to 17 words (1.5 to 6.8 s):
# espeak speaks a word in 0.74 of 60/rate, and each sentence, rendered on its own, carries
# about 0.48 s of silence around it, each comma a 0.36 s pause. Rounded up, so that a budget
# errs short: the fit's worst misses were 0.6 s.
_WORD_FACTOR, _SENTENCE_S, _PAUSE_S = 0.75, 0.5, 0.35


def _words(text: str) -> int:
    """Words spoken: gesture tags are not."""
    return len(TAG.sub(" ", text).split())


def spoken_seconds(text: str, words_per_minute: int) -> float:
    """About how long the TTS takes to say ``text``, one sentence rendered on its own."""
    words = _words(text)
    if not words:
        return 0.0
    pauses = len(_CLAUSE_END.findall(text))
    return words * _WORD_FACTOR * 60 / words_per_minute + _SENTENCE_S + pauses * _PAUSE_S


def clause_cut(raw: str, max_seconds: float, words_per_minute: int) -> tuple[str, str] | None:
    """A sentence too long for the budget, cut after its last clause that fits: (head, rest),
    both raw (gesture tags kept). None when no clause of at least three words fits: the
    sentence is then said whole, since a cut mid-clause is harder to follow than a long one."""
    best = None
    for match in _CLAUSE_END.finditer(raw):
        head = raw[:match.end()].strip()
        if spoken_seconds(head, words_per_minute) > max_seconds:
            break
        if _words(head) >= _MIN_HEAD_WORDS:
            best = match.end()
    if best is None:
        return None
    head, rest = raw[:best].strip(), raw[best:].strip().lstrip("-–—").strip()
    return (head, rest) if rest else None
