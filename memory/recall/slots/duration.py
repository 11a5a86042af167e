"""`duration` slots: the time a visitor has ("we have a day", "just the morning", "about three
hours", "an hour and a half"), said back one way ("1 day", "half a day", "3 hours", "90
minutes", "a morning") and read back in minutes by ``minutes_of`` (the recommender's time limit).

Number words are digits already (text2num). A time counts as the visitor's when it is said of
them, not asked of an offer: "how long is the tour?", "the tour takes 4 hours?", "2 hours by
train" and "I've been walking all day" give nothing, because a question word, a verb of the
offer ("takes", "lasts"), a means of travel or time already spent stands in its clause; "we
have 2 hours", "only a morning", "a day in Kyoto" and "one day" as the whole answer do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.recall.slots.said import Found, Said

# Per language: the words of each unit, the parts of a day, "half", and what makes a stretch of
# time the offer's or the journey's rather than the visitor's.
_UNITS = {
    "en": {"minute": ("minute", "minutes", "mins", "min"), "hour": ("hour", "hours", "hrs", "hr"),
           "day": ("day", "days")},
    "de": {"minute": ("minute", "minuten"), "hour": ("stunde", "stunden"), "day": ("tag", "tage", "tagen")},
}
# A part of the day said as the hours it gives (a morning or an afternoon of sightseeing: 4 hours).
_PARTS = {"en": {"morning": "4 hours", "afternoon": "4 hours", "evening": "3 hours"},
          "de": {"vormittag": "4 hours", "nachmittag": "4 hours", "abend": "3 hours"}}
# Words between the count and its unit that do not change it: "two full days", "a good hour".
_WHOLE = {"en": ("full", "whole", "entire", "good", "solid", "clear"), "de": ("ganze", "ganzen", "volle", "vollen")}
_HALF = {"en": ("half a", "half"), "de": ("halben", "halbe", "einen halben", "einen halb")}
_AND_HALF = {"en": ("and a half",), "de": ("einhalb", "und eine halbe")}
# "all day": the whole day
_ONE = {"en": ("a", "an", "one", "the", "1", "all"), "de": ("ein", "eine", "einen", "1")}
_NOT_THEIRS = {
    "en": ("how long", "how many", "take", "takes", "taking", "took", "last", "lasts", "long is", "by train",
           "by bus", "by car", "by taxi", "on foot", "walk", "drive", "ride", "flight", "away", "ago", "every",
           "each", "per", "stay", "staying", "nights", "night",
           # time already spent, not time they have: "I've been walking all day", "we spent a day in Osaka"
           "been", "spent", "was", "were"),
    "de": ("wie lange", "dauert", "dauer", "mit dem zug", "mit dem bus", "zu fuß", "fahrt", "jede", "jeden", "pro",
           "gewesen", "verbracht", "war", "waren"),
}
MINUTES = {"a morning": 240, "an afternoon": 240, "an evening": 180, "half a day": 240}
DAY_MINUTES = 8 * 60  # "a day" of sightseeing: what a full-day tour (8 hours) fits


@dataclass(frozen=True)
class DurationReader:
    code: str

    @classmethod
    def of(cls, code: str) -> "DurationReader":
        return cls(code if code in _UNITS else "en")

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.digits_lower
        found = [f for f in (*self._amounts(said, text), *self._parts(said, text)) if f is not None]
        return sorted(found, key=lambda f: f.at)

    def _amounts(self, said: Said, text: str) -> list[Found | None]:
        out = []
        units = _UNITS[self.code]
        unit_words = "|".join(re.escape(w) for ws in units.values() for w in sorted(ws, key=len, reverse=True))
        ones = "|".join(re.escape(w) for w in _ONE[self.code])
        halves = "|".join(re.escape(w) for w in _HALF[self.code])
        and_half = "|".join(re.escape(w) for w in _AND_HALF[self.code])
        whole = "|".join(re.escape(w) for w in _WHOLE[self.code])
        pattern = re.compile(
            rf"\b(?:(?P<half>{halves})\s+(?:(?:{ones})\s+)?|(?P<n>\d+(?:[.,]5)?)\s*|(?P<one>{ones})\s+(?:couple of\s+)?)"
            rf"(?:(?:{whole})\s+)?(?P<unit>{unit_words})\b(?:\s+(?P<andhalf>{and_half})\b)?")
        for m in pattern.finditer(text):
            unit = next(u for u, ws in units.items() if m.group("unit") in ws)
            if m.group("half"):
                value = "half a day" if unit == "day" else "30 minutes" if unit == "hour" else None
            else:
                n = float(m.group("n").replace(",", ".")) if m.group("n") else 1.0
                if m.group("one") and "couple" in m.group(0):
                    n = 2.0
                if m.group("andhalf"):
                    n += 0.5
                value = _said_back(n, unit)
            if value and self._theirs(said, text, m.start(), m.end()):
                out.append(Found(m.start(), value, dropped=said.negated(text, m.start())))
        return out

    def _parts(self, said: Said, text: str) -> list[Found | None]:
        out = []
        for word, value in _PARTS[self.code].items():
            for m in re.finditer(rf"\b(?:the|a|an|one|this|tomorrow|only|just|all|den|einen|am)\s+(?:whole\s+|entire\s+|"
                                 rf"full\s+|ganzen\s+)?{word}s?\b", text):
                if self._theirs(said, text, m.start(), m.end(), cue_needed=True):
                    out.append(Found(m.start(), value, dropped=said.negated(text, m.start())))
        return out

    def _theirs(self, said: Said, text: str, start: int, end: int, cue_needed: bool = False) -> bool:
        """Said of the visitor's time: nothing of an offer or a journey in the clause, and a cue
        ("have", "only", "for", "in Kyoto") near, or the time is the whole answer."""
        c_start, c_end = said.clause(text, start)
        clause = text[c_start:c_end]
        if said.lower.rstrip().endswith("?") and re.search(r"\b(?:how|wie)\b", clause):
            return False
        if any(re.search(rf"\b{re.escape(w)}\b", clause) for w in _NOT_THEIRS[self.code]):
            return False
        before = text[c_start:start]
        cue = re.search(r"\b(?:have|has|got|only|just|spare|free|for|about|around|maybe|we've|i've|like|want|need|"
                        r"spend|plan|haben|habe|nur|knapp|etwa|ungefähr)\b", before) or re.search(r"^\s*(?:in|at|around)\b", text[end:c_end])
        if cue:
            return True
        whole = re.fullmatch(r"\W*(?:(?:um|uh|well|maybe|probably|just|only|about)\W+)*", before) and \
            re.fullmatch(r"\W*(?:(?:i think|probably|maybe|tops)\W*)*", text[end:c_end])
        return bool(whole) and not cue_needed


_MOST = {"minute": 600, "hour": 24, "day": 30}  # more is no time a visitor has for a visit


def _said_back(n: float, unit: str) -> str | None:
    if n <= 0 or n > _MOST[unit]:
        return None
    if unit == "hour" and n != int(n):
        return f"{int(n * 60)} minutes"
    whole = int(n) if n == int(n) else n
    if unit == "day" and n == 0.5:
        return "half a day"
    names = {"minute": ("minute", "minutes"), "hour": ("hour", "hours"), "day": ("day", "days")}[unit]
    return f"{whole} {names[0] if whole == 1 else names[1]}"


def minutes_of(value: str) -> int | None:
    """A duration slot's value, or an offer's duration as the files write it ("4 hours", "one
    hour", "2 days and 1 night", "25 minutes"), in minutes; None when it names no time."""
    text = value.lower()
    if text in MINUTES:
        return MINUTES[text]
    words = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "half": 0.5}
    total, seen = 0.0, False
    for m in re.finditer(r"(\d+(?:\.\d+)?|one|two|three|four|five|six|an?|half)\s*(?:an?\s+)?(minute|hour|day)s?\b", text):
        n = float(m.group(1)) if m.group(1)[0].isdigit() else words[m.group(1)]
        total += n * {"minute": 1, "hour": 60, "day": DAY_MINUTES}[m.group(2)]
        seen = True
        if m.group(2) == "day":
            break  # "2 days and 1 night": the nights are in the days
    return int(round(total)) if seen else None
