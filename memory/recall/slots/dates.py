"""`date` slots: when, as a date. Months ("April"), days ("3 May", "10 to 17 May"), parts of
a month ("early April"), seasons ("next spring" -> "spring 2027"), relative dates resolved
against the day they were said ("next week" -> "week of 30 November 2026", "in two weeks" ->
"around 9 December 2026": a returning visitor's plan stays right), and the persona's named
periods ("cherry blossom season", "Golden Week").

dateparser resolves the relative spans and days in the persona's language ("in 2 weeks",
"übermorgen", "3rd of May"); it is given only the span found here, never the whole
utterance (its search over free text is slow, and takes "may" and "march" for months). A
date right after "last" or before "ago" is the past ("last spring"): no plan.
"""

from __future__ import annotations

import calendar
import logging
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Mapping

from memory.recall.slots.language import LANGUAGES, Language
from memory.recall.slots.said import Found, Said
from memory.core.words import words_alternation

log = logging.getLogger(__name__)

SEASON_STARTS = {"spring": 3, "summer": 6, "autumn": 9, "winter": 12}  # meteorological, northern hemisphere
SEASON_MONTHS = 3
THIS_SEASON_LEFT_DAYS = 28  # "this fall" with less of it left means the next one
_ORDINAL = r"(?:st|nd|rd|th|\.)?"
_PAST_BEFORE = {"last", "previous", "letzten", "letztes", "letzte", "letztem", "vergangenen", "vergangenes",
                "vergangene"}
_PAST_AFTER = {"ago", "her"}
# What may follow a day of the month said alone ("on the 3rd we go", "until the 9th and then")
_AFTER_DAY = {"and", "or", "but", "so", "then", "if", "we", "i", "please", "instead", "at", "in", "would", "is",
              "works", "could", "maybe", "too", "because", "as", "when"}
_SEASON_KEYS = {"en": {"spring": "spring", "summer": "summer", "autumn": "autumn", "winter": "winter"},
                "de": {"Frühling": "spring", "Sommer": "summer", "Herbst": "autumn", "Winter": "winter"}}
_WEEKDAYS = {"en": {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())},
             "de": {d: i for i, d in enumerate("montag dienstag mittwoch donnerstag freitag samstag sonntag".split())}}
AMBIGUOUS_SEASONS = {"fall", "spring"}  # "did you fall", "a hot spring": a season only after "in", "this", ...


def _alt(words) -> str:
    return "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(words, key=len, reverse=True))


@lru_cache(maxsize=8)
def _pattern(code: str) -> re.Pattern[str]:
    lang = LANGUAGES[code]
    month = "|".join(f"(?-i:{m}|{m.upper()})" if m.lower() in lang.ambiguous_months else re.escape(m)
                     for m in lang.months)
    month = rf"(?:{month})(?![\w])"
    # after a day or a part of the month, "may", "march" and "august" can only be months
    any_month = rf"(?:{_months(lang)})(?![\w])"
    parts = _alt(lang.parts).replace(r"mid\-", r"mid-?")
    seasons = _alt(lang.seasons)
    next_this = _alt(lang.next_words + lang.this_words)
    units = _alt(lang.units)
    ins = _alt(lang.in_words)
    tomorrow = _alt(lang.tomorrow)
    to = _alt(lang.range_words)
    day = rf"(?:the\s+|am\s+|den\s+)?(?P<{{n}}>\d{{{{1,2}}}}){_ORDINAL}"
    d1, d2, d3 = (day.format(n=n) for n in ("d1", "d2", "d3"))
    year = r"(?:,?\s+(?P<{n}>\d{{4}}))?"
    next_year = _alt(lang.next_year)
    return re.compile(
        rf"(?P<range>{d1}\s*(?:{to})\s*{d2}\s+(?:of\s+)?(?P<rm>{month})"
        rf"|(?P<rm2>{month})\s+{d3}\s*(?:{to})\s*(?:the\s+)?(?P<d4>\d{{1,2}}){_ORDINAL})(?!\w)"
        rf"|(?P<day>(?:the\s+|am\s+|den\s+)?(?P<dd>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<dm>{any_month}){year.format(n='dy')}"
        rf"|(?P<dm2>{month})\s+(?:the\s+)?(?P<dd2>\d{{1,2}}){_ORDINAL}(?![\d:]){year.format(n='dy2')})"
        rf"|(?P<part>(?P<pw>{parts})\s*(?P<pm>{any_month}|{seasons}))"
        rf"|(?P<month>(?:(?P<mnext>{_alt(lang.next_words)})\s+)?(?P<mm>{month})"
        rf"(?:\s+(?P<my>\d{{4}})|\s+(?P<mny>{next_year}))?)"
        rf"|(?P<season>(?:(?P<sw>{next_this}|{ins}(?:\s+the)?|the|im|über\s+den|zum)\s+)?(?P<ss>{seasons}))(?!\w)"
        rf"|(?P<rel>(?P<rw>{next_this})\s+(?P<ru>{units})"
        rf"|(?:{ins})\s+(?:(?:about|around|roughly|etwa|ungefähr|circa)\s+)?(?P<rn>\d+|an?|einem|einer)\s+(?P<ru2>{units})"
        rf"|(?P<rt>{tomorrow})"
        rf"|(?:the\s+|der\s+)?(?P<ru3>{units})\s+(?:{_alt(lang.after_next) or '(?!)'}))(?!\w)"
        rf"|(?P<year>(?:{ins})\s+(?P<yy>\d{{4}}))(?!\d)",
        re.IGNORECASE)


@dataclass(frozen=True)
class DateReader:
    language: Language
    periods: re.Pattern[str] | None
    period_names: tuple[str, ...]

    @classmethod
    def of(cls, language: Language, periods: Mapping[str, tuple[str, ...]]) -> "DateReader":
        groups, names = [], []
        for name, aliases in periods.items():
            for phrase in sorted((name, *aliases), key=len, reverse=True):
                if alternation := words_alternation([phrase]):
                    groups.append(f"(?P<p{len(groups)}>{alternation})")
                    names.append(name)
        _pattern(language.code)  # compiled once, when the persona is loaded
        _warm(language.code)
        pattern = re.compile("|".join(groups), re.IGNORECASE) if groups else None
        return cls(language, pattern, tuple(names))

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.digits
        found = []
        taken: list[tuple[int, int]] = []
        if self.periods is not None:
            for m in self.periods.finditer(text):
                found.append(Found(m.start(), self.period_names[int(m.lastgroup[1:])],  # type: ignore[index]
                                   dropped=said.negated(text, m.start())))
                taken.append(m.span())
        for m in _pattern(self.language.code).finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken) or self._past(text, m):
                continue
            value = self._value(said, text, m)
            if value:
                found.append(Found(m.start(), value, dropped=said.negated(text, m.start())))
                until = self._other_month_end(text, m.end()) if m.group("day") else None
                taken.append((m.start(), m.end() + (until[2] if until else 0)))  # "28 March to 4 April": one
        found += self._weekdays(said, text, taken)
        found += self._bare_days(said, text, taken)
        return sorted(found, key=lambda f: f.at)

    def _bare_days(self, said: Said, text: str, taken: list[tuple[int, int]]) -> list[Found]:
        """"What if we moved it to the 30th?", "on the 3rd": a day of the month said alone is the
        next such day (a visitor at a kiosk means the coming one); only after "on", "to", "for",
        "until", "from", "by" or ending its clause, so "the 2nd one" and "the 3rd floor" are none."""
        if self.language.code != "en":
            return []
        out = []
        for m in re.finditer(r"\b(?P<lead>on|to|for|until|till|from|by)?\s*\bthe\s+(?P<d>\d{1,2})(?:st|nd|rd|th)\b"
                             r"(?P<end>\s*(?:[.,!?;]|$))?", text, re.IGNORECASE):
            after = text[m.end():].split()[:1]
            ends = m.group("end") is not None or (m.group("lead") and (not after or after[0].lower() in _AFTER_DAY))
            if any(a < m.end() and m.start() < b for a, b in taken) or not ends:
                continue  # "on the 3rd floor": a noun follows
            s_start = said.sentence(text, m.start())[0]
            if any(s_start <= a and b <= m.start() for a, b in taken):
                continue  # "on the 3rd of May and leave on the 9th": the month said before is its month
            day, today = int(m.group("d")), said.today
            month, year = (today.month, today.year) if day >= today.day else \
                ((today.month % 12) + 1, today.year + (today.month == 12))
            if not _valid(year, month, day):
                continue
            out.append(Found(m.start("d"), self._day(day, month, None), dropped=said.negated(text, m.start())))
        return out

    def _weekdays(self, said: Said, text: str, taken: list[tuple[int, int]]) -> list[Found]:
        """"on Saturday", "this Sunday", "next Tuesday", "Friday works": the first such day after
        the day it was said (a visitor at a kiosk means the coming one). "On Fridays" is a habit,
        not a date."""
        names = _WEEKDAYS.get(self.language.code, {})
        out = []
        for m in re.finditer(rf"\b(?:(?P<lead>on|this|next|coming|this coming|by|until|am|diesen|nächsten|kommenden)\s+)?"
                             rf"(?P<day>{'|'.join(names)})\b(?!s\b)", text, re.IGNORECASE):
            if any(a < m.end() and m.start() < b for a, b in taken) or self._past(text, m):
                continue
            weekday = names[m.group("day").lower()]
            ahead = (weekday - said.today.weekday() - 1) % 7 + 1  # 1..7 days: never today itself
            when = said.today + timedelta(days=ahead)
            out.append(Found(m.start(), self._full_day(when), dropped=said.negated(text, m.start())))
        return out

    def _past(self, text: str, m: re.Match[str]) -> bool:
        before = text[:m.start()].split()[-1:]
        after = text[m.end():].split()[:1]
        return bool(before and before[0].lower() in _PAST_BEFORE) or bool(
            after and after[0].lower().strip(".,!?") in _PAST_AFTER)

    def _value(self, said: Said, text: str, m: re.Match[str]) -> str | None:
        lang, today = self.language, said.today
        if m.group("range"):
            month = self._month(m.group("rm") or m.group("rm2"))
            first, last = int(m.group("d1") or m.group("d3")), int(m.group("d2") or m.group("d4"))
            return self._day_range(first, last, month) if _valid(today.year, month, first) else None
        if m.group("day"):
            month = self._month(m.group("dm") or m.group("dm2"))
            day = int(m.group("dd") or m.group("dd2"))
            year = m.group("dy") or m.group("dy2")
            if not _valid(int(year) if year else 2000, month, day):  # 2000: a leap year, 29 February
                return None
            if (until := self._other_month_end(text, m.end())) and not year:
                return lang.words_back["range"].format(a=self._day(day, month, None), b=self._day(*until[:2], None))
            last = self._range_end(said, text, m.end(), day)
            if last:
                return self._day_range(day, last, month)
            parsed = _parse(m.group("day"), lang.code, today)  # dateparser: the day as said
            if parsed is not None and (parsed.month, parsed.day) != (month, day):
                return None
            return self._day(day, month, int(year) if year else None)
        if m.group("part"):
            part = lang.parts[_key(m.group("pw"), lang.parts)]
            said_month = m.group("pm")
            name = self._season_name(said_month) if _key(said_month, lang.seasons) else lang.months[self._month(said_month) - 1]
            return f"{part} {name}"
        if m.group("month"):
            month = self._month(m.group("mm"))
            after = text[m.end("mm"):m.end("mm") + 8].lstrip().lower()
            if lang.code == "en" and m.group("mm").lower() in lang.ambiguous_months and re.match(r"(?:i|we|you|he|she|it|they)\b", after):
                return None  # "May I ask ...?"
            name = lang.months[month - 1]
            if m.group("my"):
                return f"{name} {m.group('my')}"
            if m.group("mny") or m.group("mnext"):
                return f"{name} {today.year + 1 if month <= today.month else today.year}"
            return name
        if m.group("season"):
            word = m.group("sw")
            season = self._season_name(m.group("ss"))
            if m.group("ss").lower() in AMBIGUOUS_SEASONS and not word:
                return None
            if word and _key(word, dict.fromkeys(lang.next_words + lang.this_words)):
                this = _key(word, dict.fromkeys(lang.this_words)) is not None
                return f"{season} {_season_year(self._season_key(season), today, this)}"
            return season
        if m.group("rel"):
            return self._relative(said, m)
        if m.group("year"):
            year = int(m.group("yy"))
            return str(year) if today.year <= year <= today.year + 5 else None
        return None

    def _relative(self, said: Said, m: re.Match[str]) -> str | None:
        lang, today = self.language, said.today
        if m.group("rt"):
            days = lang.tomorrow[_key(m.group("rt"), lang.tomorrow)]
            return self._full_day(today + timedelta(days=days))
        unit = lang.units[_key(m.group("ru") or m.group("ru2") or m.group("ru3"), lang.units)]
        if m.group("ru3"):  # "the week after next"
            n = 2
        elif m.group("rw"):
            step = 0 if _key(m.group("rw"), dict.fromkeys(lang.this_words)) is not None else 1
            n = step
        else:
            raw = m.group("rn")
            n = int(raw) if raw.isdigit() else 1
        if unit == "weekend":
            saturday = today + timedelta(days=(5 - today.weekday()) % 7 + 7 * n)
            return lang.words_back["weekend_of"].format(date=self._full_day(saturday))
        if unit == "year":
            return str(today.year + n)
        parsed = _parse(m.group("rel"), lang.code, today) if n and not m.group("ru3") else None
        when = parsed or _add(today, unit, n)
        if unit == "day":
            return self._full_day(when)
        if unit == "month":
            return f"{lang.months[when.month - 1]} {when.year}"
        if m.group("rw") or m.group("ru3"):  # next week, this week: the week, from its Monday
            monday = when - timedelta(days=when.weekday())
            return lang.words_back["week_of"].format(date=self._full_day(monday))
        return lang.words_back["around"].format(date=self._full_day(when))

    def _range_end(self, said: Said, text: str, at: int, first: int) -> int | None:
        """"Arriving May 10th, leaving the 17th": a later bare day of the same sentence."""
        end = said.sentence(text, at)[1]
        m = re.search(r"\b(?:the|den|zum|bis)\s+(\d{1,2})(?:st|nd|rd|th|\.)", text[at:end], re.IGNORECASE)
        return int(m.group(1)) if m and first < int(m.group(1)) <= 31 else None

    def _other_month_end(self, text: str, at: int) -> tuple[int, int, int] | None:
        """"March 28th to April 4th", "28 March - 4 April": the day and month a range ends on, and
        the characters that say it."""
        m = _month_end_pattern(self.language.code).match(text, at)
        if not m:
            return None
        day, month = int(m.group("d") or m.group("d2")), self._month(m.group("m") or m.group("m2"))
        return (day, month, m.end() - at) if _valid(2000, month, day) else None

    def _month(self, said: str) -> int:
        lowered = said.lower()
        return next(i for i, name in enumerate(self.language.months, 1) if name.lower() == lowered)

    def _season_name(self, said: str) -> str:
        return self.language.seasons[_key(said, self.language.seasons)]

    def _season_key(self, name: str) -> str:
        return _SEASON_KEYS.get(self.language.code, _SEASON_KEYS["en"]).get(name, name)

    def _day(self, day: int, month: int, year: int | None) -> str:
        text = self.language.day_format.format(day=day, month=self.language.months[month - 1])
        return f"{text} {year}" if year else text

    def _day_range(self, first: int, last: int, month: int) -> str:
        lang = self.language
        return lang.words_back["range"].format(a=f"{first}{'.' if lang.code == 'de' else ''}", b=self._day(last, month, None))

    def _full_day(self, when: date) -> str:
        return self._day(when.day, when.month, when.year)


def _months(lang: Language) -> str:
    return "|".join(re.escape(m) for m in lang.months)


@lru_cache(maxsize=8)
def _month_end_pattern(code: str) -> re.Pattern[str]:
    """"... to April 4th", "... - 4 April": where a range that names two months ends."""
    lang = LANGUAGES[code]
    months = _months(lang)
    return re.compile(rf"\s*(?:{_alt(lang.range_words)})\s*(?:the\s+|den\s+)?"
                      rf"(?:(?P<d>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<m>{months})"
                      rf"|(?P<m2>{months})\s+(?:the\s+)?(?P<d2>\d{{1,2}}){_ORDINAL})(?!\w)", re.IGNORECASE)


def _key(said: str, table: Mapping[str, object]) -> str | None:
    flat = " ".join(said.lower().replace("-", " ").split())
    for key in table:
        if " ".join(key.lower().replace("-", " ").split()) == flat:
            return key
    return None


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= day <= calendar.monthrange(year, month)[1]


def _season_year(season: str, today: date, this: bool) -> int:
    """The year a season said with "this" or "next" starts in (winter: its December)."""
    start_month = SEASON_STARTS[season]
    for year in (today.year - 1, today.year, today.year + 1):
        start = date(year, start_month, 1)
        end = _add(start, "month", SEASON_MONTHS)
        if start <= today < end and (end - today).days > THIS_SEASON_LEFT_DAYS and this:
            return year
        if start > today:
            return year
    return today.year + 1


def _add(day: date, unit: str, n: int) -> date:
    if unit == "day":
        return day + timedelta(days=n)
    if unit == "week":
        return day + timedelta(weeks=n)
    if unit == "month":
        month = day.month - 1 + n
        year = day.year + month // 12
        month = month % 12 + 1
        return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
    return date(day.year + n, day.month, min(day.day, 28 if day.month == 2 else day.day))


def _parse(span: str, code: str, today: date) -> date | None:
    import dateparser

    try:
        parsed = dateparser.parse(span, languages=[code], settings={
            "RELATIVE_BASE": datetime(today.year, today.month, today.day), "PREFER_DATES_FROM": "future"})
    except Exception as exc:  # noqa: BLE001 - a parser error costs one date, never the utterance
        log.debug("dateparser could not read a date (%d characters): %s", len(span), exc)
        return None
    return parsed.date() if parsed else None


@lru_cache(maxsize=8)
def _warm(code: str) -> None:
    """dateparser loads a language's data on its first use (0.1 s): at load, not mid-turn."""
    _parse("in 2 days" if code == "en" else "morgen", code, date.today())
