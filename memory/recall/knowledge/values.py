"""The values a shop's sentence states: prices with their currency, durations, clock times.

Read with price-parser's amount rules where a currency is named ("9,800 yen", "£14", "5
pounds", "€45"), and plain patterns for durations ("45 minutes", "2 days and 1 night", "one
hour") and clock times ("8:30", "17:00"). What a sentence holds decides which answer it is
(``kinds.py``: "when" wants the sentence with a time); the numbers are compared and added
exactly (``compare.py``, the consultation's quotes) with ``Decimal``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

# Currency words and signs as shops write them -> the ISO code, and how an amount is said back.
CURRENCIES = {"yen": "JPY", "¥": "JPY", "jpy": "JPY", "pound": "GBP", "pounds": "GBP", "£": "GBP", "gbp": "GBP",
              "euro": "EUR", "euros": "EUR", "€": "EUR", "eur": "EUR", "dollar": "USD", "dollars": "USD", "$": "USD",
              "usd": "USD", "franc": "CHF", "francs": "CHF", "chf": "CHF"}
SAID = {"JPY": "{n} yen", "GBP": "{n} pounds", "EUR": "{n} euros", "USD": "{n} dollars", "CHF": "{n} francs"}
SAID_ONE = {"GBP": "1 pound", "EUR": "1 euro", "USD": "1 dollar", "CHF": "1 franc"}
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?"
_AMOUNT = re.compile(
    rf"(?P<sign>[¥£€$])\s?(?P<n1>{_NUMBER})|(?P<n2>{_NUMBER})\s?(?P<word>yen|pounds?|euros?|dollars?|francs?|jpy|gbp|eur|usd|chf)\b",
    re.IGNORECASE)
_CLOCK = re.compile(r"(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])")
_DURATION = re.compile(r"\b(\d+(?:\.\d+)?|an?|one|two|three|four|five|six|half an?)[\s-]+(minute|hour|day|night)s?\b",
                       re.IGNORECASE)
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "half a": 0.5,
                 "half an": 0.5}
# When something happens, in words: times of day, days, months, seasons ("every day except December 31",
# "the first week of April", "from early June to mid July", "closed on Mondays").
_WHEN = re.compile(
    r"\b(?:every hour|on the hour|half hour|all day|24 hours|open all|morning|evening|afternoon|noon|midnight|"
    r"daily|every day|week|weekend|weekdays?|season|spring|summer|autumn|fall|winter|(?:mon|tues|wednes|thurs|fri|"
    r"satur|sun)days?|january|february|march|april|may|june|july|august|september|october|november|december)\b",
    re.IGNORECASE)
FREE = re.compile(r"\b(?:free|no charge|at no cost|nothing to pay)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str  # ISO code
    at: int = 0  # where in the text it was said

    def said(self) -> str:
        """"6,500 yen", "14 pounds", "1 pound": as the shops write amounts."""
        if self.amount == 1 and self.currency in SAID_ONE:
            return SAID_ONE[self.currency]
        n = f"{self.amount:,.2f}".rstrip("0").rstrip(".") if self.amount != self.amount.to_integral() else f"{int(self.amount):,}"
        return SAID.get(self.currency, "{n} " + self.currency).format(n=n)

    def __add__(self, other: "Money") -> "Money":
        if other.currency != self.currency:
            raise ValueError(f"cannot add {other.currency} to {self.currency}")
        return Money(self.amount + other.amount, self.currency)

    def times(self, n: int | Decimal) -> "Money":
        return Money(self.amount * Decimal(n), self.currency)


def money_in(text: str) -> list[Money]:
    """Every amount with its currency in ``text``, in order."""
    out = []
    for m in _AMOUNT.finditer(text):
        number = (m.group("n1") or m.group("n2")).replace(",", "")
        key = (m.group("sign") or m.group("word")).lower()
        out.append(Money(Decimal(number), CURRENCIES.get(key, CURRENCIES.get(key.rstrip("s"), key.upper())), m.start()))
    return out


def first_money(text: str) -> Money | None:
    found = money_in(text)
    return found[0] if found else None


def clock_times(text: str) -> list[str]:
    """Clock times in ``text`` as written, "9:00", "13:30"."""
    return [f"{int(h)}:{mm}" for h, mm in _CLOCK.findall(text)]


def minutes_of_clock(time: str) -> int:
    h, m = time.split(":")
    return int(h) * 60 + int(m)


def durations(text: str) -> list[int]:
    """Stretches of time in ``text``, in minutes ("2 days and 1 night" is two days: nights are in them)."""
    out, skip_nights = [], False
    for m in _DURATION.finditer(text):
        raw, unit = m.group(1).lower(), m.group(2).lower()
        n = float(raw) if raw[0].isdigit() else _WORD_NUMBERS.get(raw, 1)
        if unit == "night":
            if skip_nights:
                continue
            unit = "day"
        skip_nights = unit == "day"
        out.append(int(round(n * {"minute": 1, "hour": 60, "day": 8 * 60}[unit])))
    return out


@lru_cache(maxsize=4096)
def holds(text: str) -> frozenset[str]:
    """What a sentence states: "price" (an amount or "free"), "time" (a clock time, "every hour"),
    "duration" (minutes, hours, days), a shop's own words aside."""
    kinds = set()
    if _AMOUNT.search(text) or FREE.search(text):
        kinds.add("price")
    if _CLOCK.search(text) or _WHEN.search(text):
        kinds.add("time")
    if _DURATION.search(text):
        kinds.add("duration")
    if re.search(r"\bevery\s+(?:\d+\s+)?(?:minutes?|hours?|day)\b|\b(?:daily|weekly|hourly)\b", text, re.IGNORECASE):
        kinds.add("frequency")
    if re.search(r"\b(?:floor|station|exit|gate|entrance|hall|lobby|shop|studio|street|near|next to|beside|"
                 r"opposite|minutes? (?:on foot|walk)|walk from|from the|at the|in the)\b", text, re.IGNORECASE):
        kinds.add("place")
    return frozenset(kinds)
