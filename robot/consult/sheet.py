"""The consultation sheet: what a member of staff needs at a glance to book what the visitor
chose, carried by the ``handover`` event (MQTT, the console's card) and kept with the visitor's
memory: who, the party, the dates, the needs, the plan with each offer's quote and the total,
and the questions left open (what the robot could not answer or price)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

from robot.consult.quote import Quote


@dataclass(frozen=True)
class PlanItem:
    offer: str
    total: str | None  # "16,200 yen"; None: not priced by the files
    lines: tuple[str, ...] = ()  # "2 adults at 6,500 yen: 13,000 yen"
    missing: tuple[str, ...] = ()

    @classmethod
    def of(cls, q: Quote) -> "PlanItem":
        if not q.party.known:  # priced for nobody yet: staff ask who is coming
            return cls(q.offer.name, None, (), ("the party (who is coming)",))
        lines = tuple(f"{line.label}: {line.amount.said()}" for line in q.lines)
        if q.discount is not None:
            lines += (f"group discount: -{q.discount.said()}",)
        return cls(q.offer.name, q.total.said() if q.total is not None else None, lines, q.missing)


@dataclass(frozen=True)
class Sheet:
    reason: str  # "booking", "a question the files cannot answer"
    visitor: str | None
    name: str | None
    party: str | None
    dates: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    plan: tuple[PlanItem, ...] = ()
    total: str | None = None  # the plan's, when every item is priced
    open: tuple[str, ...] = ()  # questions left for staff
    profile: Mapping[str, Sequence[str]] = field(default_factory=dict)  # every slot, by its label

    def to_dict(self) -> dict:
        data = asdict(self)
        data["plan"] = [asdict(p) for p in self.plan]
        data["profile"] = {k: list(v) for k, v in self.profile.items()}
        return data

    def lines(self) -> list[str]:
        """The sheet as a staff member reads it (the console's card, a log line)."""
        out = [f"Consultation sheet ({self.reason})"]
        for label, value in (("Visitor", self.name or self.visitor), ("Party", self.party),
                             ("Dates", ", ".join(self.dates)), ("Needs", ", ".join(self.needs))):
            if value:
                out.append(f"{label}: {value}")
        for item in self.plan:
            out.append(f"- {item.offer}: {item.total or 'price not in the files'}")
            out += [f"    {line}" for line in item.lines]
        if self.total:
            out.append(f"Total: {self.total}")
        out += [f"Open: {q}" for q in self.open]
        return out


def complete(sheet: Mapping) -> bool:
    """Every part a sheet must have for staff to book: who travels, and the plan priced (or its
    open question said)."""
    plan = sheet.get("plan") or []
    priced = all(p.get("total") or p.get("missing") for p in plan)
    return bool(sheet.get("party")) and bool(plan) and priced and (bool(sheet.get("total")) or bool(sheet.get("open")))
