"""Recommendation: the shop's offers that fit what the visitor said, best first.

The visitor's wishes are the profile's slots, read by type: the party and the children's ages
(the quote), the budget (money), the needs (need), the dates (date), the time they have
(duration), places and interests (choice). **Hard** wishes filter, each with the offer's field
it constrains:
- budget: the party's total (or, for a budget per person, the total per person) at or under it,
  in the offers' currency; a total the files cannot make is no fit for a budget; a budget in
  another currency is not compared (the robot says so);
- needs: a step-free need (the persona's ``step_free_needs``) only a ``step_free: yes`` offer
  meets; a food need (``food_needs``) an offer with a meal meets only if its ``diets`` name it;
- dates: no offer runs on the shop's ``closed`` days;
- time: the offer's duration within the time they have (an open-ended drop-in always fits);
- ages: an offer's ``min_age`` above a child's age.
**Soft** wishes rank what is left: the places they named (an offer's ``places``), their
interests (its ``tags``), then the cheaper total, then the shorter. When nothing fits, the wish
that rules the most out is named, and the offer that breaks the fewest wishes is the nearest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Mapping, Sequence

from memory.recall.knowledge.values import Money, first_money
from memory.recall.slots.duration import minutes_of
from robot.consult.offers import Offer, OfferBook
from robot.consult.quote import Party, Quote, quote

_CURRENCY_OF_SIGN = {"¥": "JPY", "$": "USD", "€": "EUR", "£": "GBP"}
_MONTHS = "january february march april may june july august september october november december".split()


@dataclass(frozen=True)
class Wishes:
    """What the visitor said they want, from the profile (slot name -> values)."""

    party: Party
    budget: Money | None = None
    per_person: bool = False
    needs: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    time_min: int | None = None
    places: tuple[str, ...] = ()
    interests: tuple[str, ...] = ()

    @property
    def told(self) -> bool:
        """The visitor has said something of what they want that the recommender weighs."""
        return bool(self.party.known or self.budget is not None or self.needs or self.dates
                    or self.time_min is not None or self.places or self.interests)

    @classmethod
    def of(cls, profile: Mapping[str, Sequence[str]], types: Mapping[str, str]) -> "Wishes":
        """``types``: each slot's type (money, party, need, date, duration, ages, choice)."""
        def first(kind: str) -> str | None:
            return next((vs[0] for name, vs in profile.items() if types.get(name) == kind and vs), None)

        def every(kind: str, name_hint: str = "") -> tuple[str, ...]:
            return tuple(v for name, vs in profile.items() if types.get(name) == kind and name_hint in name for v in vs)

        budget_text = first("money")
        budget = _money(budget_text) if budget_text else None
        time = first("duration")
        return cls(Party.of(first("party"), first("ages")), budget, bool(budget_text and "per person" in budget_text),
                   every("need"), every("date"), minutes_of(time) if time else None,
                   tuple(v for name, vs in profile.items() if types.get(name) == "choice" and "interest" not in name
                         for v in vs),
                   tuple(v for name, vs in profile.items() if types.get(name) == "choice" and "interest" in name
                         for v in vs))


@dataclass(frozen=True)
class Fit:
    offer: Offer
    quote: Quote
    score: float
    reasons: tuple[str, ...] = ()  # in the visitor's terms: "a family", "your budget", "a wheelchair"
    unmet: tuple[str, ...] = ()  # the hard wishes it breaks (the nearest offer, when nothing fits)


@dataclass(frozen=True)
class Recommendation:
    fits: tuple[Fit, ...]  # every offer meeting every hard wish, best first
    ruled_out: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # wish -> the offers it removes
    nearest: Fit | None = None  # when nothing fits: the offer that breaks the fewest wishes
    budget_not_compared: bool = False  # the budget is in another currency than the offers

    @property
    def best(self) -> tuple[Fit, ...]:
        return self.fits[:2]

    @property
    def ruling_wish(self) -> str | None:
        """The wish that rules out the most offers (what to say when nothing fits)."""
        if not self.ruled_out:
            return None
        return max(self.ruled_out, key=lambda w: len(self.ruled_out[w]))


def unserved_places(book: OfferBook, places: Sequence[str]) -> tuple[str, ...]:
    """The visitor's places when no offer goes to any of them ("Hiroshima", to a Kyoto agency);
    () when one does, or when the shop's offers name no places to judge by."""
    served = {p.lower() for o in book.offers for p in o.places}
    if not served or any(p.lower() in served for p in places):
        return ()
    return tuple(places)


def recommend(book: OfferBook, wishes: Wishes, today: date | None = None) -> Recommendation:
    today = today or date.today()
    fits, broken = [], {}
    ruled: dict[str, list[str]] = {}
    foreign = wishes.budget is not None and any(o.currency and o.currency != wishes.budget.currency for o in book.offers)
    # a place the shop goes nowhere near is a hard wish: "fits you" would be said of every offer
    elsewhere = bool(unserved_places(book, wishes.places))
    for offer in book.offers:
        q = quote(offer, wishes.party, book)
        why = (["places"] if elsewhere else []) + _breaks(offer, q, wishes, book, today, foreign)
        if why:
            broken[offer.name] = (why, q)
            for w in why:
                ruled.setdefault(w, []).append(offer.name)
            continue
        fits.append(Fit(offer, q, _score(offer, q, wishes), _reasons(wishes, foreign)))
    fits.sort(key=lambda f: (-f.score, f.quote.total.amount if f.quote.total else Decimal(10**12),
                             f.offer.duration_min or 0))
    nearest = None
    if not fits and broken:
        name = min(broken, key=lambda n: (len(broken[n][0]), broken[n][1].total.amount if broken[n][1].total else 10**12))
        offer = book.named(name)
        if offer is not None:
            nearest = Fit(offer, broken[name][1], 0.0, unmet=tuple(broken[name][0]))
    return Recommendation(tuple(fits), {w: tuple(n) for w, n in ruled.items()}, nearest, foreign)


def unmet_wishes(offer: Offer, wishes: Wishes, book: OfferBook, today: date | None = None) -> list[str]:
    """The hard wishes ``offer`` breaks ("budget", "needs", "dates", "time", "ages"; [] when it fits):
    what to tell a visitor who chooses it all the same."""
    foreign = wishes.budget is not None and bool(offer.currency) and offer.currency != wishes.budget.currency
    return _breaks(offer, quote(offer, wishes.party, book), wishes, book, today or date.today(), foreign)


def _breaks(offer: Offer, q: Quote, wishes: Wishes, book: OfferBook, today: date, foreign: bool) -> list[str]:
    why = []
    if wishes.budget is not None and not foreign:
        if q.total is None:
            why.append("budget")
        else:
            total = q.total.amount / max(wishes.party.people, 1) if wishes.per_person else q.total.amount
            if total > wishes.budget.amount:
                why.append("budget")
    rules = book.rules
    needs = {n.lower() for n in wishes.needs}
    if needs & {n.lower() for n in rules.step_free_needs} and offer.step_free is not True:
        why.append("needs")
    food = needs & {n.lower() for n in rules.food_needs}
    if food and offer.meal and not food <= {d.lower() for d in offer.diets}:
        why.append("needs")
    if wishes.dates and rules.closed and any(_closed_on(d, rules.closed, today) for d in wishes.dates):
        why.append("dates")
    if wishes.time_min is not None and offer.duration_min is not None and offer.duration_min > wishes.time_min:
        why.append("time")
    if offer.min_age is not None and any(a < offer.min_age for a in wishes.party.ages):
        why.append("ages")
    return list(dict.fromkeys(why))


def _score(offer: Offer, q: Quote, wishes: Wishes) -> float:
    """The share of the visitor's places the offer goes to (an offer that goes everywhere, a private
    guide, counts a little less than one that goes where they said), and their interests in its tags."""
    places = {p.lower() for p in wishes.places}
    tags = {t.lower() for t in offer.tags}
    score = 0.0
    if places and offer.places:
        covered = sum(1 for p in places if p in {o.lower() for o in offer.places})
        score += 2.0 * covered / len(places) + (0.5 / len(offer.places) if covered else 0.0)
    score += 1.5 * sum(1 for i in wishes.interests if i.lower() in tags or i.lower().rstrip("s") in tags)
    return score


def _reasons(wishes: Wishes, foreign: bool) -> tuple[str, ...]:
    out = []
    if wishes.party.children:
        out.append("a family")
    if wishes.budget is not None and not foreign:
        out.append("your budget")
    if wishes.needs:
        out.append(" and ".join(wishes.needs[:2]))
    if wishes.time_min is not None:
        out.append("the time you have")
    return tuple(out)


def _money(text: str) -> Money | None:
    found = first_money(text.replace("¥", "¥ ").replace(",", ","))
    if found is not None:
        return found
    m = re.match(r"\s*([¥$€£])\s*([\d,]+(?:\.\d+)?)", text)
    if m:
        return Money(Decimal(m.group(2).replace(",", "")), _CURRENCY_OF_SIGN[m.group(1)])
    return None


def _closed_on(value: str, closed: Sequence[str], today: date) -> bool:
    """A date value ("31 December", "1 January 2027", "30 to 31 December 2026") that falls on a closed day."""
    days = _days(value)
    shut = {_day_month(c) for c in closed}
    return any(d in shut for d in days)


def _days(value: str) -> list[tuple[int, int]]:
    """The (month, day) pairs a date value names (a range of days inclusive)."""
    text = value.lower()
    months = [m for m in _MONTHS if m in text]
    numbers = [int(n) for n in re.findall(r"\b(\d{1,2})\b", text)]
    if not months or not numbers:
        return []
    month = _MONTHS.index(months[-1]) + 1
    if " to " in text and len(numbers) >= 2:
        start = _MONTHS.index(months[0]) + 1 if len(months) > 1 else month
        if start == month:
            return [(month, d) for d in range(numbers[0], numbers[1] + 1)]
        return [(start, numbers[0]), (month, numbers[1])]
    return [(month, numbers[0])]


def _day_month(text: str) -> tuple[int, int] | None:
    days = _days(text)
    return days[0] if days else None
