"""How long a sentence takes to say, and where a first sentence too long for the spoken-length
budget is cut (``robot.reply.stream``; persona ``max_reply_s``)."""

from __future__ import annotations

import re

from robot.gestures.tags import TAG

_CLAUSE_END = re.compile(r"[,;:](?=\s)|\s[-–—](?=\s)")  # a comma, semicolon, colon or dash between words
_COMMA = re.compile(r",(?=\s)")
_STOP_INSIDE = re.compile(r"[.!?](?=\s+\S)")  # a sentence end with more after it ("Hello! I'm Sakura.")
_MIN_HEAD_WORDS = 3  # a shorter head is no clause a listener can follow
# Fitted on pyttsx3/espeak-ng (en-us) at 130, 150 and 180 wpm, the sample persona's knowledge
# sentences and 16 replies (390 renderings of 1 to 31 words): a word takes 0.82 of 60/rate, a
# comma 0.97 of it, a semicolon, colon or dash 1.2, a sentence end inside the text 1.3, and each
# sentence, rendered on its own, carries 0.44 s of silence; the word rounded up to 0.85. Misses:
# p50 0.33 s, p95 0.97 s, at most 1.1 s short. Numbers count as the words espeak-ng reads
# (``spoken_words``): counted as one word each, with the earlier fit (11 sentences without
# numbers), a sentence of prices or opening hours was said in up to 4 s more than estimated
# (85 % of these sentences were estimated short), and the robot went 2 s over its 8 s budget on
# the shop's own answers and its recap.
_WORD_FACTOR, _COMMA_FACTOR, _BREAK_FACTOR, _STOP_FACTOR, _SENTENCE_S = 0.85, 1.0, 1.2, 1.3, 0.45
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_PART = re.compile(r"\w+(?:'\w+)*")  # a word, or a part of a hyphenated one ("I'm" is one)
_SIGNS = re.compile(r"[$€£¥%]")  # each one word more: "dollars", "percent"


def spoken_words(text: str) -> int:
    """Words spoken, as espeak-ng reads them: gesture tags are not; a number is its words
    ("9,800": nine thousand eight hundred), a time its hour and minutes ("9:00": nine zero
    zero, "8:30": eight thirty), a currency sign or % one word more, a hyphenated word a word a part."""
    text = TAG.sub(" ", text)
    count = len(_SIGNS.findall(text))
    text = _TIME.sub(lambda m: f"{m.group(1)} {'0 0' if m.group(2) == '00' else int(m.group(2))}", text)
    for token in text.split():
        numbers = _NUMBER.findall(token)
        # "Kiyomizu-dera", "English-speaking": a word a part
        count += sum(_number_words(n) for n in numbers) if numbers else len(_PART.findall(token))
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
    beats = (words * _WORD_FACTOR + len(_COMMA.findall(text)) * _COMMA_FACTOR
             + (len(_CLAUSE_END.findall(text)) - len(_COMMA.findall(text))) * _BREAK_FACTOR
             + len(_STOP_INSIDE.findall(text)) * _STOP_FACTOR)
    return beats * 60 / words_per_minute + _SENTENCE_S


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
