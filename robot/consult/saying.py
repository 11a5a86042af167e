"""How the robot says a recommendation, a quote and the plan, in the persona's lines
(``knowledge.offers.lines``). Every offer, number and name comes from the recommender and the
quote: the files' prices and the totals computed from them, never generated."""

from __future__ import annotations

from typing import Sequence

from memory.recall.knowledge.values import Money
from robot.consult.offers import Offer
from robot.consult.quote import Party, Quote
from robot.consult.recommend import Fit, Recommendation, Wishes

_NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                 10: "ten"}


def facts(q: Quote, with_duration: bool = True) -> str:
    """"4 hours, 6,500 yen for each adult and 3,200 yen for your child, 16,200 yen for the three of you"."""
    o, party = q.offer, q.party
    parts = []
    if with_duration and o.duration_said:
        parts.append(o.duration_said)
    parts.append(_prices(o, party))
    if q.total is not None and not q.missing and party.known:
        parts.append(f"{q.total.said()} for {party.said()}" + (" with the entry tickets" if _has_tickets(q) else ""))
    elif q.missing:
        parts.append(f"I don't have {q.missing[0]} in my notes")
    return ", ".join(p for p in parts if p)


def _has_tickets(q: Quote) -> bool:
    return any("ticket" in line.label for line in q.lines)


def _prices(o: Offer, party: Party) -> str:
    if o.free:
        return "free"
    if o.price_group is not None:
        return f"{o.price_group.said()} for a group of up to {o.group_size}" if o.group_size else o.price_group.said()
    if o.room is not None and o.price_adult is not None:
        extra = f", {o.single_supplement.said()} more for a single room" if o.single_supplement and party.adults % 2 else ""
        return f"{o.price_adult.said()} for each adult in a {o.room}{extra}"
    if o.price_person is not None:
        who = {"children": "for each child who takes part"}.get(o.participants, "each")
        return f"{o.price_person.said()} {who}"
    if o.price_adult is not None:
        if party.children and o.price_child is not None:
            child = "your child" if party.children == 1 else "each child"
            return f"{o.price_adult.said()} for each adult and {o.price_child.said()} for {child}"
        return f"{o.price_adult.said()} for each adult"
    return ""


def recommendation(rec: Recommendation, wishes: Wishes, lines: object, noun: str) -> list[str]:
    """The best one or two offers with why they fit and what they cost the party; or what rules
    everything out, and the nearest."""
    out = []
    if rec.budget_not_compared and wishes.budget is not None:
        out.append(f"Our prices are in {_currency_name(rec)}, so I can't compare them with your budget of "
                   f"{wishes.budget.said()}.")
    if rec.fits:
        best = rec.fits[0]
        out.append(getattr(lines, "recommend").replace("{offer}", best.offer.name)
                   .replace("{fit}", _fit(best)).replace("{facts}", facts(best.quote)))
        if len(rec.fits) > 1:
            second = rec.fits[1]
            out.append(getattr(lines, "also").replace("{offer}", second.offer.name).replace("{facts}", facts(second.quote)))
        return out
    wish = _wish(rec.ruling_wish, wishes)
    out.append(getattr(lines, "nothing").replace("{noun}", noun).replace("{wish}", wish))
    if rec.nearest is not None:
        out.append(getattr(lines, "nearest").replace("{offer}", rec.nearest.offer.name)
                   .replace("{facts}", facts(rec.nearest.quote)))
        if rec.nearest.unmet and rec.nearest.unmet[0] != rec.ruling_wish:
            # it may keep the wish just named and break another ("no tour fits within 10,000 yen",
            # and the nearest costs 9,000 but has stairs): said, or the two lines contradict
            out.append(unfit_said(rec.nearest.offer, rec.nearest.unmet, wishes, lines)[0])
    return out


def unfit_said(offer: Offer, unmet: Sequence[str], wishes: Wishes, lines: object) -> tuple[str, str]:
    """What the robot says of a chosen offer that breaks the wishes ``unmet`` (the first of them),
    and the open question it leaves for staff ("The Coding workshop does not fit children of 6")."""
    said = getattr(lines, "unfit").replace("{offer}", offer.name).replace("{wish}", _wish(unmet[0], wishes))
    return said, f"The {offer.name} was chosen, though it does not fit {_wish(unmet[0], wishes, 'the visitor’s')}"


def plan_said(quotes: Sequence[Quote], total: Money | None, lines: object) -> str:
    """"Your plan: the Uji Tea Tasting Tour, 20,400 yen for the three of you." Without a party
    told, no total (it would be one adult's, and a teacher with a class hears it as the class's):
    each offer's prices, and the persona's ``ask_party`` question."""
    if not quotes:
        return ""
    party = quotes[0].party
    if not party.known:  # a total for a party nobody told: prices as the files give them, and the question
        items = [f"the {q.offer.name}" + (f", {price}" if (price := _prices(q.offer, party)) else "") for q in quotes]
        said = items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
        ask = getattr(lines, "ask_party", None)
        return getattr(lines, "plan").replace("{plan}", said) + (f" {ask}" if ask else "")
    items = [f"the {q.offer.name}" + (f", {q.total.said()}" if q.total is not None and not q.missing else "")
             for q in quotes]
    said = items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
    if total is not None and len(quotes) > 1:
        said += f"; {total.said()} in all for {party.said()}"
    elif total is not None and party.known:
        said += f" for {party.said()}"
    return getattr(lines, "plan").replace("{plan}", said)


def _fit(fit: Fit) -> str:
    reasons = list(fit.reasons)
    if not reasons:
        return "you"
    return reasons[0] if len(reasons) == 1 else f"{', '.join(reasons[:-1])} and {reasons[-1]}"


def _wish(wish: str | None, wishes: Wishes, whose: str = "your") -> str:
    party = wishes.party
    if wish == "budget" and wishes.budget is not None:
        per = " each" if wishes.per_person else f" for {party.said()}" if party.people > 1 else ""
        return f"within {wishes.budget.said()}{per}"
    if wish == "dates" and wishes.dates:
        return f"on {wishes.dates[0]}: nothing runs that day"
    if wish == "time" and wishes.time_min is not None:
        return f"in the time you have ({_minutes_said(wishes.time_min)})"
    if wish == "needs" and wishes.needs:
        return f"{whose} needs ({' and '.join(wishes.needs)})"
    if wish == "places" and wishes.places:
        return f"{whose} wish to see {' or '.join(wishes.places)}"
    if wish == "ages" and party.ages:
        return f"children of {' and '.join(str(a) for a in party.ages)}"
    return "everything you asked for"


def _minutes_said(minutes: int) -> str:
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{_NUMBER_WORDS.get(hours, str(hours))} hour{'s' if hours > 1 else ''}"
    return f"{minutes} minutes"


def _currency_name(rec: Recommendation) -> str:
    names = {"JPY": "yen", "GBP": "pounds", "EUR": "euros", "USD": "dollars"}
    for fit in (*rec.fits, *((rec.nearest,) if rec.nearest else ())):
        if fit.offer.currency:
            return names.get(fit.offer.currency, fit.offer.currency)
    return "another currency"
