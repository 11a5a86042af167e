"""Exact quotes: an offer's price for the visitor's party, computed from the files' own prices.

The party is the profile's (``Party.of``: "2 adults, 1 child", "4 people", with the children's
ages when they were said). Arithmetic is ``Decimal``, never the LLM's:
- a row's adult and child prices, or one price per person (children who pay, at it), or a
  price per group of up to ``group_size`` (as many groups as the party fills);
- a package per adult in a twin room, one single supplement for an odd adult; a child's package
  price is in no file, so a party with children gets no total (said so, and left to staff);
- children under the shop's free age go free; children in its child ages pay the child price,
  older ones the adult price, one of unknown age the child price;
- the shop's group discount for a party of its size, rounded to the currency's unit;
- an entry ticket on top of every offer where the shop has one (the museum): per person, or the
  family ticket for exactly its party when that is cheaper.
Each quote keeps the lines it was made of (what a staff member checks on the sheet), and what it
could not price (``missing``): a total is given only when nothing is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from memory.recall.knowledge.values import Money
from memory.recall.slots.ages import ages_of
from robot.consult.offers import Offer, OfferBook


@dataclass(frozen=True)
class Party:
    adults: int
    children: int
    ages: tuple[int, ...] = ()  # the children's, youngest first, those said
    known: bool = True  # the profile said who travels (else one adult is assumed for a per-person price)

    @property
    def people(self) -> int:
        return self.adults + self.children

    @classmethod
    def of(cls, party: str | None, ages: str | None = None) -> "Party":
        """From the profile's values ("2 adults, 1 child", "4 people"; ages "3 and 7")."""
        said_ages = tuple(sorted(ages_of(ages))) if ages else ()
        if not party:
            if said_ages:
                return cls(1, len(said_ages), said_ages, known=False)
            return cls(1, 0, (), known=False)
        counts = {k: int(n) for n, k in re.findall(r"(\d+)\s+(adult|child|people|person)", party)}
        adults, children = counts.get("adult", 0), counts.get("child", 0)
        if re.search(r"(?<!\d )\bchildren\b", party) and "child" not in counts:
            # "2 adults, children": how many children is not said; their ages, when said, count them
            return cls(adults, len(said_ages), said_ages, known=bool(said_ages))
        if "people" in counts or "person" in counts:
            people = counts.get("people", counts.get("person", 0))
            children = max(children, len(said_ages))
            adults = max(people - children, 0)
        children = max(children, len(said_ages)) if children else children
        return cls(adults, children, said_ages[:children] if children else (), known=True)

    def said(self) -> str:
        """"the three of you", "you two", "you": how the robot names the party in a quote."""
        words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
        if self.people <= 1:
            return "you"
        return f"the {words.get(self.people, str(self.people))} of you"


@dataclass(frozen=True)
class Line:
    label: str  # "2 adults at 6,500 yen"
    amount: Money


@dataclass(frozen=True)
class Quote:
    offer: Offer
    party: Party
    lines: tuple[Line, ...] = ()
    total: Money | None = None
    missing: tuple[str, ...] = ()  # what the files do not price for this party
    discount: Money | None = None

    @property
    def complete(self) -> bool:
        return self.total is not None and not self.missing


@dataclass
class _Bill:
    lines: list[Line] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def add(self, label: str, amount: Money) -> None:
        self.lines.append(Line(label, amount))


def quote(offer: Offer, party: Party, book: OfferBook) -> Quote:
    bill = _Bill()
    _offer_price(offer, party, book, bill)
    if book.admission is not None:
        _admission(book.admission, party, book, bill)
    discount = None
    if not bill.missing and bill.lines:
        currencies = {line.amount.currency for line in bill.lines}
        if len(currencies) > 1:
            bill.missing.append("a total in one currency")
    if bill.missing or not bill.lines and not offer.free:
        return Quote(offer, party, tuple(bill.lines), None, tuple(bill.missing))
    currency = bill.lines[0].amount.currency if bill.lines else (offer.currency or "")
    total = Money(sum((line.amount.amount for line in bill.lines), Decimal(0)), currency)
    rules = book.rules
    if rules.group_people and rules.group_percent and party.people >= rules.group_people and total.amount:
        off = (total.amount * rules.group_percent / 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)
        discount = Money(off, currency)
        total = Money(total.amount - off, currency)
    return Quote(offer, party, tuple(bill.lines), total, (), discount)


def _paying(party: Party, book: OfferBook, offer: Offer) -> tuple[int, int, int]:
    """(adults paying as adults, children at the child price, children free) for an offer."""
    free_under = offer.free_under or book.rules.free_under
    child_ages = offer.child_ages or book.rules.child_ages
    adults, child, free = party.adults, 0, 0
    ages = list(party.ages) + [None] * (party.children - len(party.ages))
    for age in ages:
        if age is not None and free_under is not None and age < free_under:
            free += 1
        elif age is not None and child_ages is not None and age > child_ages[1]:
            adults += 1  # older than the child ages: the adult price
        else:
            child += 1
    return adults, child, free


def _offer_price(offer: Offer, party: Party, book: OfferBook, bill: _Bill) -> None:
    adults, child, free = _paying(party, book, offer)
    if offer.free:
        return
    if offer.price_group is not None:
        size = offer.group_size or party.people
        groups = -(-party.people // size)
        bill.add(f"{groups} group{'s' if groups > 1 else ''} of up to {size} at {offer.price_group.said()}",
                 offer.price_group.times(groups))
        return
    if offer.room is not None and offer.price_adult is not None:  # a package per adult in a twin room
        if party.children:
            bill.missing.append(f"a child's price for the {offer.name}")
        bill.add(f"{party.adults} adult{'s' if party.adults > 1 else ''} at {offer.price_adult.said()}",
                 offer.price_adult.times(party.adults))
        if party.adults % 2 and offer.single_supplement is not None:
            bill.add(f"a single room at {offer.single_supplement.said()}", offer.single_supplement)
        return
    if offer.price_person is not None:
        who = {"children": child, "adults": adults}.get(offer.participants, adults + child)
        if offer.participants == "children" and party.children and len(party.ages) < party.children:
            bill.missing.append(f"the children's ages for the {offer.name}")
        if who:
            bill.add(f"{who} at {offer.price_person.said()}", offer.price_person.times(who))
        return
    if offer.price_adult is not None:
        if adults:
            bill.add(f"{adults} adult{'s' if adults > 1 else ''} at {offer.price_adult.said()}",
                     offer.price_adult.times(adults))
        if child:
            if offer.price_child is None:
                bill.missing.append(f"a child's price for the {offer.name}")
            else:
                bill.add(f"{child} child{'ren' if child > 1 else ''} at {offer.price_child.said()}",
                         offer.price_child.times(child))
        return
    bill.missing.append(f"the price of the {offer.name}")


def _admission(ticket: Offer, party: Party, book: OfferBook, bill: _Bill) -> None:
    """Entry tickets for the party: per person, or the family ticket for exactly its party."""
    adults, child, free = _paying(party, book, ticket)
    per_person: list[Line] = []
    if ticket.price_adult is not None and adults:
        per_person.append(Line(f"{adults} adult ticket{'s' if adults > 1 else ''} at {ticket.price_adult.said()}",
                               ticket.price_adult.times(adults)))
    if child:
        if ticket.price_child is None:
            bill.missing.append("a child's ticket price")
            return
        per_person.append(Line(f"{child} child ticket{'s' if child > 1 else ''} at {ticket.price_child.said()}",
                               ticket.price_child.times(child)))
    if ticket.price_family is not None and ticket.family_party == (adults, child) and per_person:
        if ticket.price_family.amount < sum(line.amount.amount for line in per_person):
            bill.add(f"a family ticket at {ticket.price_family.said()}", ticket.price_family)
            return
    bill.lines.extend(per_person)
