"""What the shop sells, as typed rows: the persona's offers tables read by the meaning of their
fields (``knowledge.offers``, config/offers_schema.py).

Every value comes from a row as the shop wrote it: prices with their currency ("9,800 yen",
"5 pounds"), durations ("4 hours", "2 days and 1 night", "one hour"), start times (the clock times
of the meeting point), lists ("Kyoto, Nara"), yes/no fields. A field a row lacks is unknown, never
assumed: a tour without ``step_free`` is not known to be step-free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Mapping, Sequence

from memory.recall.knowledge.values import FREE, Money, clock_times, durations, first_money

YES = frozenset({"yes", "true", "y", "1"})
NO = frozenset({"no", "false", "n", "0"})


@dataclass(frozen=True)
class Offer:
    """One row of an offers table, by the meaning of its fields."""

    name: str
    entry: object  # the knowledge entry (its sentences are what may be said of it)
    index: int  # the entry's position in the knowledge
    price_adult: Money | None = None
    price_child: Money | None = None
    price_person: Money | None = None
    price_group: Money | None = None
    group_size: int | None = None
    room: str | None = None  # a package priced per adult in this room ("twin room")
    single_supplement: Money | None = None
    free: bool = False
    duration_min: int | None = None
    duration_said: str = ""  # as the row says it ("4 hours")
    starts: tuple[str, ...] = ()  # clock times
    places: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    step_free: bool | None = None
    meal: bool = False
    diets: tuple[str, ...] = ()
    min_age: int | None = None
    child_ages: tuple[int, int] | None = None  # who pays the child price (a row's own rule)
    free_under: int | None = None
    price_family: Money | None = None
    family_party: tuple[int, int] | None = None  # (adults, children) of the family ticket
    participants: str = "everyone"  # who takes part and pays the person price: everyone, children, adults

    @property
    def priced(self) -> bool:
        return self.free or any(p is not None for p in (self.price_adult, self.price_person, self.price_group))

    @property
    def currency(self) -> str | None:
        for p in (self.price_adult, self.price_person, self.price_group, self.price_child, self.price_family):
            if p is not None:
                return p.currency
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *getattr(self.entry, "aliases", ()))


@dataclass(frozen=True)
class ShopRules:
    """The shop's rules for every offer (the persona's ``knowledge.offers``)."""

    noun: str = "offer"
    child_ages: tuple[int, int] | None = None
    free_under: int | None = None
    group_people: int | None = None
    group_percent: Decimal | None = None
    closed: tuple[str, ...] = ()
    step_free_needs: tuple[str, ...] = ()
    food_needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class OfferBook:
    """The shop's offers and its rules; ``admission`` is added to every offer's quote."""

    offers: tuple[Offer, ...]
    rules: ShopRules = field(default_factory=ShopRules)
    admission: Offer | None = None

    def named(self, name: str) -> Offer | None:
        wanted = name.lower()
        return next((o for o in self.offers if o.name.lower() == wanted), None)

    def by_entry(self, index: int) -> Offer | None:
        return next((o for o in self.offers if o.index == index), None)

    @classmethod
    def of_persona(cls, offers_spec: object, entries: Sequence[object], persona_dir: Path | None) -> "OfferBook":
        """The rows of the spec's tables among ``entries`` (the persona's loaded knowledge)."""
        tables = {_resolved(t, persona_dir) for t in getattr(offers_spec, "tables", ())}
        roles = dict(getattr(offers_spec, "fields", {}) or {})
        rows = [(i, e) for i, e in enumerate(entries) if _resolved(getattr(e, "path", None), None) in tables]
        offers = tuple(read_offer(e, i, roles) for i, e in rows)
        admission_name = getattr(offers_spec, "admission", None)
        admission = None
        if admission_name:
            found = [(i, e) for i, e in enumerate(entries) if getattr(e, "title", "").lower() == admission_name.lower()]
            admission = read_offer(found[0][1], found[0][0], roles) if found else None
        discount = getattr(offers_spec, "group_discount", None)
        rules = ShopRules(
            noun=getattr(offers_spec, "noun", "offer"), child_ages=_age_range(getattr(offers_spec, "child_ages", None)),
            free_under=getattr(offers_spec, "free_under", None),
            group_people=discount.people if discount else None,
            group_percent=Decimal(str(discount.percent)) if discount else None,
            closed=tuple(getattr(offers_spec, "closed", ()) or ()),
            step_free_needs=tuple(getattr(offers_spec, "step_free_needs", ()) or ()),
            food_needs=tuple(getattr(offers_spec, "food_needs", ()) or ()))
        return cls(offers, rules, admission)


def read_offer(entry: object, index: int, roles: Mapping[str, str] | None = None) -> Offer:
    """A knowledge row as an offer: each role read from its field (``roles`` maps a role to the
    table's own column where the names differ)."""
    fields: Mapping[str, str] = getattr(entry, "fields", {}) or {}
    roles = roles or {}

    def raw(role: str) -> str:
        return str(fields.get(roles.get(role, role), "") or "").strip()

    def money(role: str) -> Money | None:
        return first_money(raw(role))

    def number(role: str) -> int | None:
        m = re.search(r"\d+", raw(role))
        return int(m.group(0)) if m else None

    duration = raw("duration")
    found = durations(duration)
    if not found and re.search(r"\bone hour\b|\ban hour\b", duration, re.IGNORECASE):
        found = [60]
    family = re.findall(r"\d+", raw("family_party"))
    return Offer(
        name=str(getattr(entry, "title", "")), entry=entry, index=index,
        price_adult=money("price_adult"), price_child=money("price_child"), price_person=money("price_person"),
        price_group=money("price_group"), group_size=number("group_size"), room=raw("room") or None,
        single_supplement=money("single_supplement"), free=bool(FREE.search(raw("free"))) if raw("free") else False,
        duration_min=found[0] if found else None, duration_said=duration,
        starts=tuple(clock_times(raw("starts") or raw("meeting_point"))),
        places=_listed(raw("places")), tags=_listed(raw("tags")),
        step_free=_yes_no(raw("step_free")), meal=_yes_no(raw("meal")) is True, diets=_listed(raw("diets")),
        min_age=number("min_age"), child_ages=_age_range(raw("child_ages") or None), free_under=number("free_under"),
        price_family=money("price_family"),
        family_party=(int(family[0]), int(family[1])) if len(family) >= 2 else None,
        participants=(raw("participants") or "everyone").lower())


def _listed(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in re.split(r"[,;|]", value) if v.strip())


def _yes_no(value: str) -> bool | None:
    v = value.lower()
    return True if v in YES else False if v in NO else None


def _age_range(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    numbers = [int(n) for n in re.findall(r"\d+", value)]
    return (numbers[0], numbers[1]) if len(numbers) >= 2 else None


def _resolved(path: object, base: Path | None) -> str | None:
    if path is None:
        return None
    p = Path(str(path))
    if base is not None and not p.is_absolute():
        p = base / p
    try:
        return str(p.resolve())
    except (OSError, RuntimeError):  # a symlink loop: the path as written
        return str(p)
