"""Consulting: the turn handler that recommends, quotes, keeps the visitor's plan and hands it to
staff (``robot/consult/``). Asked before the recap and the knowledge's answer, and the LLM
never: every offer, number and name it says comes from the recommender and the quote.

- "what would you recommend for us?" (and every way of asking, ``prompts/consult_words.txt``): the
  best one or two offers that meet every hard wish of the visitor's profile, why they fit and
  their total for the party; or which wish rules everything out, and the nearest offer;
- "let's take the tea tour", "that one", "add the Nara tour too", "drop Nara", "make it the
  morning walk instead": the plan changes, and is said back with its total;
- "how much would that be for all of us?": the plan's total (or the offer recommended last);
- "can you book it?", "I'd like to pay": staff are called with the consultation sheet (the
  ``handover`` event carries it; the visitor's memory keeps it);
- a recap request with a plan: the profile and the plan said back.
The plan and the questions left open are kept with the visitor's profile: a returning visitor
finds them, a persona switch and a summary keep them, a forget request deletes them.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Callable, Mapping

from memory.recall.knowledge import Kind, is_question
from memory.recall.knowledge.kinds import asking_clauses, kind_of
from memory.recall.knowledge.values import Money
from memory.recall.reply_prompt import asks_for_recap
from robot.consult.intents import Intent, Named, intents, leaning, named_offers
from robot.consult.offers import Offer, OfferBook
from robot.consult.quote import Quote, quote
from robot.consult.recommend import Recommendation, Wishes, recommend, unmet_wishes, unserved_places
from robot.consult.saying import plan_said, recommendation, unfit_said
from robot.consult.sheet import PlanItem, Sheet
from robot.core.events import EventPublisher, HandoverEvent
from robot.dialogue.more import YesWords
from robot.dialogue.turn_handlers import HeardTurn, Opening, Outcome, profile_recap


@dataclass
class Consulted:
    """This visit's consultation state that is not the plan: what was recommended last, and to
    whom (a new visitor starts afresh: "that one" never means another visitor's offer)."""

    recommended: tuple[Offer, ...] = ()
    visitor: str | None = None
    suggested: bool = False  # the last turn ended on the persona's ``suggest``: a yes now asks for one


# The profile's slot types that are hard wishes: one changed after a recommendation ("I could
# stretch to 5,000 yen", "oh, they're only two and five") changes what fits.
HARD_WISHES = frozenset({"money", "party", "ages", "need", "date", "duration"})


class Consult:
    """The turn handler (``robot/dialogue/turn_handlers.py``) for a persona with ``knowledge.offers``."""

    def __init__(self, book: OfferBook, index: object, events: EventPublisher,
                 today: Callable[[], date] = date.today) -> None:
        self.book, self.index, self.events, self.today = book, index, events, today
        self.state = Consulted()
        self.last: Recommendation | None = None  # for a bench or the console

    @classmethod
    def of_persona(cls, persona: object, knowledge: object | None, events: EventPublisher) -> "Consult | None":
        """The consultation of a persona with ``knowledge.offers`` (None without), on its indexed knowledge."""
        k = getattr(persona, "knowledge", None)
        offers = getattr(k, "offers", None)
        if offers is None or knowledge is None:
            return None
        return cls(OfferBook.of_persona(offers, k.entries, k.base), knowledge.index, events)  # type: ignore[attr-defined]

    # --- the turn --------------------------------------------------------------------------

    async def handle(self, turn: HeardTurn) -> Outcome:
        memory, persona = turn.memory, turn.persona
        offers_spec = persona.knowledge.offers if persona.knowledge is not None else None
        if offers_spec is None or not hasattr(memory, "save_consultation"):
            return None
        lines = offers_spec.lines
        if self.state.visitor != turn.visitor:
            self.state, self.last = Consulted(visitor=turn.visitor), None
        suggested, self.state.suggested = self.state.suggested, False  # an offer lasts one turn
        profile = _profile_after(memory, turn.text)
        wishes = Wishes.of(profile, _types(persona))
        if suggested and YesWords.of(persona.more_yes).match(turn.text):
            return self._recommend(wishes, lines, offers_spec.noun)  # "Shall I suggest a tour?" "Yes, please."
        said = await asyncio.to_thread(intents, turn.text, self.book, self.index)  # an embedding: not on the loop
        plan = self._plan(memory)
        if Intent.BOOK in said:
            return await self._book(turn, plan, wishes, lines)
        if asks_for_recap(turn.text) and plan:
            return self._recap(turn, plan, wishes, lines)
        if asks_for_recap(turn.text) and not self.state.recommended and wishes.told and lines.suggest:
            # A recap before anything is recommended is said back, never taken for a request (its
            # meaning is near one: "what we planned so far"), and ends on the offer to suggest.
            recap = profile_recap(turn)
            if recap is not None:
                self.state.suggested = True
                return Opening(whole=(recap, lines.suggest.replace("{noun}", offers_spec.noun)), llm=False)
        # a search of the shop's index: in a thread, as the turn's own plan (it may be large)
        in_play = tuple(dict.fromkeys((*plan, *self.state.recommended)))  # the plan's and the last recommended
        named = await asyncio.to_thread(named_offers, turn.text, self.book, self.index, in_play)
        if named.offers and asks_a_detail(turn.text):
            # "How much is your day tour to the temples in Kyoto?": a question of one offer's price
            # or time, whatever its words' meaning leans to; its entry answers it
            said.discard(Intent.RECOMMEND)
        if Intent.RECOMMEND in said and not said & {Intent.CHOOSE, Intent.ADD, Intent.DROP, Intent.INSTEAD}:
            return self._recommend(wishes, lines, offers_spec.noun)
        if (priced := self._priced_for_party(turn, said, named, wishes, lines)) is not None:
            return priced
        changed = await self._change(turn, said, named, plan, wishes, lines)
        if changed is not None:
            return changed
        if Intent.RECOMMEND in said:
            return self._recommend(wishes, lines, offers_spec.noun)
        if (self.state.recommended or plan) and (not named.offers or named.by_meaning) and not said and \
                await self._wish_changed(turn, memory, profile):
            return self._recommend(wishes, lines, offers_spec.noun)
        if Intent.TOTAL in said and (plan or self.state.recommended) and not named.offers:
            chosen = plan or list(self.state.recommended[:1])
            return Opening(whole=(self._plan_line(chosen, wishes, lines),), llm=False)
        if not said and not named.offers and await self._open_request(turn, wishes, plan):
            return self._recommend(wishes, lines, offers_spec.noun)
        return None

    def _priced_for_party(self, turn: HeardTurn, said: set[Intent], named: Named, wishes: Wishes,
                          lines: object) -> Outcome:
        """The price of one offer asked, with a party told: the entry's own answer, then what it
        comes to for them ("That is 19,600 yen for the two of you."), computed by the quote."""
        knowledge = turn.knowledge
        if len(named.offers) != 1 or not wishes.party.known or wishes.party.people < 2 or knowledge is None \
                or not knowledge.opening or knowledge.handover or not (Intent.TOTAL in said or asks_a_detail(turn.text, frozenset({Kind.PRICE}))):
            return None
        offer = named.offers[0]
        if offer.index not in knowledge.entries or said & {Intent.CHOOSE, Intent.ADD, Intent.DROP, Intent.INSTEAD}:
            return None
        q = quote(offer, wishes.party, self.book)
        if q.total is None or q.missing:
            return None
        total = getattr(lines, "total").replace("{total}", q.total.said()).replace("{party}", wishes.party.said())
        return Opening(whole=(knowledge.opening[0], total), within_budget=knowledge.opening[1:])

    async def _open_request(self, turn: HeardTurn, wishes: Wishes, plan: list[Offer]) -> bool:
        """An open question at a counter, once the visitor has told what they want and before
        anything is recommended ("Anything quick?", "What can he actually do?"): a request for a
        suggestion when it names no offer, the shop's files answer nothing of it, and its meaning
        leans to a request for one rather than to a remark (below the bar a turn out of context
        must pass)."""
        if self.state.recommended or plan or not wishes.told or not is_question(turn.text):
            return False
        before = Wishes.of(getattr(turn.memory, "profile", None) or {}, _types(turn.persona))
        if unserved_places(self.book, [p for p in wishes.places if p not in before.places]):
            return False  # "Do you have tours to Hiroshima?": a question about what the shop does not sell
        finding = await asyncio.to_thread(self.index.search, turn.text)  # type: ignore[attr-defined]
        if finding.answered or finding.partial:
            return False
        # nothing is in play yet: a request for a suggestion is the only one it can be
        return await asyncio.to_thread(leaning, turn.text, self.book, self.index, (Intent.RECOMMEND,)) is not None

    async def _wish_changed(self, turn: HeardTurn, memory: object, after: Mapping[str, list[str]]) -> bool:
        """These words change a hard wish of the profile and ask the shop's files nothing they
        answer: after a recommendation, the visitor means "and now?" ("What if we moved it to the
        30th?")."""
        before = getattr(memory, "profile", None) or {}
        types = _types(turn.persona)
        if not any(before.get(k) != after.get(k) for k, t in types.items() if t in HARD_WISHES):
            return False
        if not is_question(turn.text):
            return True
        finding = await asyncio.to_thread(self.index.search, turn.text)  # type: ignore[attr-defined]
        return not finding.answered

    def _recommend(self, wishes: Wishes, lines: object, noun: str) -> Outcome:
        rec = recommend(self.book, wishes, self.today())
        self.last = rec
        self.state.recommended = tuple(f.offer for f in rec.best) or ((rec.nearest.offer,) if rec.nearest else ())
        said = recommendation(rec, wishes, lines, noun)
        # the best said whole; a second within the spoken-length budget (else offered: "Shall I tell you more?")
        whole = said[:-1] if len(rec.best) > 1 else said
        ask = getattr(lines, "ask_party", None)
        if not wishes.party.known and ask:  # prices said per person; the total waits for who is coming
            return Opening(whole=(*whole, ask), llm=False)
        return Opening(whole=tuple(whole), within_budget=tuple(said[len(whole):]), llm=False)

    async def _change(self, turn: HeardTurn, said: set[Intent], named, plan: list[Offer], wishes: Wishes,
                      lines: object) -> Outcome:
        """The plan changed by these words: an offer dropped, one instead of the last chosen, one
        added, or chosen (a choice adds to the plan; "instead" replaces)."""
        chosen = list(named.offers)
        if not chosen and (picked := _ordinal(turn.text, self.state.recommended)) is not None:
            chosen = [picked]  # "the second one you said": in the order recommended
        if not chosen and named.deictic and self.state.recommended and said & {Intent.CHOOSE, Intent.ADD}:
            chosen = [self.state.recommended[0]]  # "that one": the first of the last recommendation
        # A choice says so ("let's take", "add", "instead"), or names, in a few words and asking
        # nothing, one of the offers just recommended, or any offer by its name once the robot has
        # recommended or a plan is begun ("The Uji tea tour, please.", "The planetarium then."): the
        # visitor may take one it did not name first. An offer found by meaning alone ("I could
        # stretch to 5,000 yen" is near a price sentence) is no choice without words that choose.
        in_play = bool(self.state.recommended or plan)
        described = in_play and _describes_one(turn.text)
        taken = len(chosen) == 1 and not named.apart and (
            chosen[0] in self.state.recommended or (not named.by_meaning and in_play) or described)
        choosing = said & {Intent.CHOOSE, Intent.ADD, Intent.INSTEAD} or (
            taken and (_short(turn.text) or described) and not is_question(turn.text) and Intent.TOTAL not in said)
        if not chosen or not (choosing or Intent.DROP in said):
            return None
        if named.by_meaning and not described and not _chooses_by_meaning(turn.text, said, in_play):
            return None  # "she's also vegetarian": near the cooking class in meaning, and no choice
        if Intent.DROP in said and not said & {Intent.CHOOSE, Intent.INSTEAD}:
            new = [o for o in plan if o not in chosen]
            if new == plan:
                return None
            await turn.memory.save_consultation(plan=[o.name for o in new])  # type: ignore[attr-defined]
            head = getattr(lines, "dropped").replace("{offer}", chosen[0].name)
            return Opening(whole=(head, self._plan_line(new, wishes, lines)) if new else (head,), llm=False)
        if Intent.INSTEAD in said and plan:
            new = [o for o in plan[:-1] if o not in chosen] + [chosen[-1]]
        else:
            new = plan + [o for o in chosen if o not in plan]
        if new == plan:
            return Opening(whole=(self._plan_line(plan, wishes, lines),), llm=False)
        head = [getattr(lines, "planned").replace("{offer}", new[-1].name)]
        open_questions = None
        if unmet := unmet_wishes(new[-1], wishes, self.book, self.today()):
            # The choice is the visitor's (they may know better: a child who is nearly 8), but
            # they hear what it breaks, and the staff who book it read it on the sheet.
            warning, question = unfit_said(new[-1], unmet, wishes, lines)
            head.append(warning)
            kept = (getattr(turn.memory, "consultation", None) or {}).get("open", [])
            open_questions = list(dict.fromkeys([*kept, question]))
        await turn.memory.save_consultation(plan=[o.name for o in new],  # type: ignore[attr-defined]
                                            open_questions=open_questions)
        return Opening(whole=(*head, self._plan_line(new, wishes, lines)), llm=False)

    async def _book(self, turn: HeardTurn, plan: list[Offer], wishes: Wishes, lines: object) -> Outcome:
        if not plan:
            named = await asyncio.to_thread(named_offers, turn.text, self.book, self.index, self.state.recommended)
            plan = list(named.offers) or list(self.state.recommended[:1])
            if plan:
                await turn.memory.save_consultation(plan=[o.name for o in plan])  # type: ignore[attr-defined]
        sheet = self.sheet(turn, "booking", plan, wishes)
        self.events.publish(HandoverEvent(question=turn.text, turn_id=turn.turn_id, reason="booking",
                                          sheet=sheet.to_dict()))
        said = [self._plan_line(plan, wishes, lines)] if plan else []
        return Opening(whole=(*said, getattr(lines, "handover")), llm=False)

    def _recap(self, turn: HeardTurn, plan: list[Offer], wishes: Wishes, lines: object) -> Outcome:
        recap = profile_recap(turn)
        head = (recap,) if recap is not None else ()
        return Opening(whole=(*head, self._plan_line(plan, wishes, lines)), llm=False)

    # --- the plan and the sheet ------------------------------------------------------------------

    def _plan(self, memory: object) -> list[Offer]:
        names = (getattr(memory, "consultation", None) or {}).get("plan", [])
        return [o for n in names if (o := self.book.named(n)) is not None]

    def _plan_line(self, plan: list[Offer], wishes: Wishes, lines: object) -> str:
        quotes = [quote(o, wishes.party, self.book) for o in plan]
        return plan_said(quotes, _total(quotes), lines)

    def sheet(self, turn: HeardTurn, reason: str, plan: list[Offer] | None = None,
              wishes: Wishes | None = None, question: str | None = None) -> Sheet:
        """The consultation sheet of the visitor talking now (also for a question the files cannot
        answer: that question is an open one)."""
        memory, persona = turn.memory, turn.persona
        profile = getattr(memory, "profile", None) or {}
        wishes = wishes or Wishes.of(profile, _types(persona))
        plan = self._plan(memory) if plan is None else plan
        quotes = [quote(o, wishes.party, self.book) for o in plan]
        total = _total(quotes) if wishes.party.known else None  # no total for a party nobody told
        kept = (getattr(memory, "consultation", None) or {}).get("open", [])
        open_questions = list(dict.fromkeys([*kept, *(m for q in quotes for m in q.missing),
                                             *([question] if question else [])]))
        slots = persona.memory.profile
        labels = {name: (spec.label or name.replace("_", " ").capitalize()) for name, spec in slots.items()}
        by_type = {spec.type: profile.get(name, []) for name, spec in slots.items()}
        return Sheet(reason=reason, visitor=turn.visitor, name=(by_type.get("name") or [None])[0],
                     party=(by_type.get("party") or [None])[0], dates=tuple(by_type.get("date", ())),
                     needs=tuple(by_type.get("need", ())), plan=tuple(PlanItem.of(q) for q in quotes),
                     total=total.said() if total is not None else None, open=tuple(open_questions),
                     profile={labels.get(k, k): v for k, v in profile.items() if not k.startswith("_")})


def _total(quotes: list[Quote]) -> Money | None:
    if not quotes or any(q.total is None or q.missing for q in quotes):
        return None
    currencies = {q.total.currency for q in quotes}  # type: ignore[union-attr]
    if len(currencies) > 1:
        return None
    return Money(sum((q.total.amount for q in quotes), Decimal(0)), currencies.pop())  # type: ignore[union-attr]


def _profile_after(memory: object, text: str) -> Mapping[str, list[str]]:
    preview = getattr(memory, "preview", None)
    if preview is not None:
        return preview(text)
    return getattr(memory, "profile", None) or {}


def _types(persona: object) -> dict[str, str]:
    return {name: spec.type for name, spec in persona.memory.profile.items()}  # type: ignore[attr-defined]


_DETAILS = frozenset({Kind.PRICE, Kind.DURATION, Kind.TIME, Kind.FREQUENCY})  # "where would you send us?" asks one


def asks_a_detail(text: str, kinds: frozenset[Kind] = _DETAILS) -> bool:
    """A clause of ``text`` asks for one of ``kinds`` (a price, a duration, a time or how often):
    a question of an offer's details, never a request for a suggestion ("which would you pick?")."""
    return any(kind_of(c) in kinds for c in asking_clauses(text))


def _chooses_by_meaning(text: str, said: set[Intent], in_play: bool) -> bool:
    """An offer found by meaning alone ("the bamboo one") changes the plan only in a consultation
    under way (something recommended or planned), and with words that choose, drop or replace:
    "also", "too" or "as well" ("she's also vegetarian") add nothing by themselves."""
    if not in_play:
        return False
    return bool(said & {Intent.CHOOSE, Intent.INSTEAD, Intent.DROP}) or bool(_ADD_VERB.search(text))


_ADD_VERB = re.compile(r"\badd(?:ing)?\b", re.IGNORECASE)


# "the deer one", "the two-day one", "the one with the bamboo": an offer picked by what sets it
# apart, "one" standing for it (English's pronoun of choice among things shown), said as the
# turn's or a clause's answer, not inside another request ("tell me more about the deer one")
_DESCRIBED = re.compile(r"(?:^|[.,!;:]\s*)(?:\w+,?\s+)?the\s+(?:[\w'-]+\s+){0,3}?one\b"
                        r"(?=\s*(?:[.,!;:]|$|(?:with|where|that|in|at|on|for|please|you|we)\b))", re.IGNORECASE)
_ORDINAL = re.compile(r"\bthe\s+(first|second|third|last)\s+one\b", re.IGNORECASE)
_PLACES = {"first": 0, "second": 1, "third": 2, "last": -1}


def _describes_one(text: str) -> bool:
    """The visitor picks an offer by a description ("The deer one.", "the one with the boat ride,
    that's us"), asking nothing."""
    return bool(_DESCRIBED.search(text)) and not is_question(text)


def _ordinal(text: str, recommended: tuple[Offer, ...]) -> Offer | None:
    """"the second one (you said)": that offer of the last recommendation, if there is one."""
    m = _ORDINAL.search(text)
    if m is None or not recommended:
        return None
    place = _PLACES[m.group(1).lower()]
    return recommended[place] if -len(recommended) <= place < len(recommended) else None


def _short(text: str) -> bool:
    """A few words naming an offer ("The Uji tea tour, please.", "The coding workshop please, the
    kids would love it."): a choice, not a question about it or a story."""
    return len(text.split()) <= 10


class ConsultSlot:
    """The consultation's place among the turn handlers, for whichever persona is on now (a switch
    sets ``consult``; None: a persona without offers): asked after a goodbye and before the recap
    and the knowledge's answer."""

    def __init__(self) -> None:
        self.consult: Consult | None = None

    async def handle(self, turn: HeardTurn) -> Outcome:
        return None if self.consult is None else await self.consult.handle(turn)

    async def sheet_for_question(self, turn: HeardTurn) -> dict | None:
        """A question the files cannot answer: staff get the consultation sheet, the question on it
        as an open one (kept with the visitor's memory)."""
        if self.consult is None:
            return None
        save = getattr(turn.memory, "save_consultation", None)
        if save is not None:
            kept = (getattr(turn.memory, "consultation", None) or {}).get("open", [])
            await save(open_questions=list(dict.fromkeys([*kept, turn.text])))
        return self.consult.sheet(turn, "a question the files cannot answer").to_dict()
