"""How long a sentence takes to say, and where a first sentence too long for the spoken-length
budget is cut (``robot.reply.stream``; persona ``max_reply_s``)."""

from __future__ import annotations

import re

from robot.gestures.tags import TAG

CLAUSE_END = re.compile(r"[,;:](?=\s)|\s[-–—](?=\s)")  # a comma, semicolon, colon or dash between words
_MIN_HEAD_WORDS = 3  # a shorter head is no clause a listener can follow
# Fitted on pyttsx3/espeak-ng at 150 wpm, eleven sentences of 1 to 17 words (1.5 to 6.8 s):
# espeak speaks a word in 0.74 of 60/rate, and each sentence, rendered on its own, carries
# about 0.48 s of silence around it, each comma a 0.36 s pause. Rounded up, so that a budget
# errs short: the fit's worst misses were 0.6 s. Numbers count as the words espeak-ng reads
# (``spoken_words``): counted as one word each, a sentence of prices or opening hours was said
# in up to 4 s more than estimated (390 renderings of the sample persona's knowledge sentences
# and replies at 130, 150 and 180 wpm: misses p50 0.63 s, p95 2.29 s; with numbers read, 0.38
# and 1.37 s, at most 2.4 s short, on the longest sentences at 130 wpm). A refit on those
# (syllables, or words with their own pause lengths) was closer on long sentences but put 0.3-0.6
# s on short plain ones, and cut replies that fit.
_WORD_FACTOR, _SENTENCE_S, _PAUSE_S = 0.75, 0.5, 0.35
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_PART = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")  # a word, or a part of a hyphenated one ("I'm" is one)
_SIGNS = re.compile(r"[$€£¥%]")  # each a word more: "dollars", "percent"


def spoken_words(text: str) -> int:
    """Words spoken, as espeak-ng reads them: gesture tags are not; a number is its words
    ("9,800": nine thousand eight hundred, four), a time its hour and minutes ("9:00": nine
    zero zero, "8:30": eight thirty), a currency sign or % a word more, a hyphenated word a
    word a part."""
    text = TAG.sub(" ", text)
    count = len(_SIGNS.findall(text))
    text = _TIME.sub(lambda m: f"{m.group(1)} {'0 0' if m.group(2) == '00' else int(m.group(2))}", text)
    for token in text.split():
        numbers = _NUMBER.findall(token)
        count += sum(map(_number_words, numbers)) if numbers else len(_PART.findall(token))
    return count


def _number_words(number: str) -> int:
    whole, _, decimals = number.replace(",", "").partition(".")
    return _integer_words(int(whole)) + (1 + len(decimals) if decimals else 0)  # "point", a word a digit


def _integer_words(n: int) -> int:
    """Words of an integer read out: 21 -> twenty one (2), 9800 -> nine thousand eight hundred (4)."""
    if n < 20:
        return 1
    if n < 100:
        return 1 + (n % 10 > 0)
    if n < 1000:
        return 2 + (_integer_words(n % 100) if n % 100 else 0)
    for scale in (10 ** 9, 10 ** 6, 1000):
        if n >= scale:
            return _integer_words(n // scale) + 1 + (_integer_words(n % scale) if n % scale else 0)
    raise AssertionError("unreachable")


def _words(text: str) -> int:
    """Words written (gesture tags are not): what a clause needs to be followed."""
    return len(TAG.sub(" ", text).split())


def spoken_seconds(text: str, words_per_minute: int) -> float:
    """About how long the TTS takes to say ``text``, one sentence rendered on its own."""
    words = spoken_words(text)
    if not words:
        return 0.0
    pauses = len(CLAUSE_END.findall(text))
    return words * _WORD_FACTOR * 60 / words_per_minute + _SENTENCE_S + pauses * _PAUSE_S


def clause_cut(raw: str, max_seconds: float, words_per_minute: int) -> tuple[str, str] | None:
    """A sentence too long for the budget, cut after its last clause that fits: (head, rest),
    both raw (gesture tags kept). None when no clause of at least three words fits: the
    sentence is then said whole, since a cut mid-clause is harder to follow than a long one."""
    best = None
    for match in CLAUSE_END.finditer(raw):
        head = raw[:match.end()].strip()
        if spoken_seconds(head, words_per_minute) > max_seconds:
            break
        if _words(head) >= _MIN_HEAD_WORDS:
            best = match.end()
    if best is None:
        return None
    head, rest = raw[:best].strip(), raw[best:].strip().lstrip("-–—").strip()
    return (head, rest) if rest else None
