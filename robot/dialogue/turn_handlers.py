"""What a turn does before the LLM: a short list of handlers the controller asks in order.

Each handler looks at the customer's words and either lets the turn go on to the LLM (None),
answers it with a fixed line of the persona that nothing of is stored (``Answered``: a
forget request), or gives the reply its first sentences, said by the robot itself, after
which the LLM goes on (``Opening``: the held sentence after a yes to "Shall I tell you
more?", a recap of the plan, the shop's entry that answers a question, what a statement
gave the visitor profile) or not (the
persona's ``no_answer`` line for a question the shop's knowledge cannot answer, its
``farewell`` to a goodbye). The first
handler that does not return None decides.

A new behaviour of this kind is one more handler in ``default_handlers``, not another
branch in the controller.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol

from config.schema import Persona
from memory.core.base import DialogueMemory
from memory.recall.slots import language_of
from robot.core.events import EventPublisher, ForgottenEvent, HandoverEvent
from robot.dialogue.farewell import is_goodbye
from robot.dialogue.forget_request import Forget, ForgetRequests, ForgetWords
from robot.dialogue.knowledge import KnowledgePlan, is_question
from robot.dialogue.more import YesWords
from robot.reply.copies import sentences_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeardTurn:
    """A customer's words as the handlers see them, with what they may consult."""

    text: str
    turn_id: str
    persona: Persona
    memory: DialogueMemory
    visitor: str | None  # who is talking (a visitor id, "anonymous", or None: a single-user memory)
    knowledge: KnowledgePlan | None = None  # what the shop's knowledge holds for these words


@dataclass(frozen=True)
class Answered:
    """The turn is answered by ``line`` alone: no LLM, and nothing of the exchange stored."""

    line: str
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Opening:
    """The reply starts with sentences the robot says itself (raw, gesture tags kept): first
    ``whole`` ones, said whatever the spoken-length budget (a recap asked for, the entry's
    sentence that answers), then ``within_budget`` ones, counted in it like the reply's own
    (what a cut reply held back). The LLM goes on after them unless ``llm`` is False."""

    whole: tuple[str, ...] = ()
    within_budget: tuple[str, ...] = ()
    llm: bool = True
    ends_visit: bool = False  # a farewell: the visitor's session ends soon after (session.after_goodbye_s)
    # The profile slot whose question is the last line: asked, once it was said whole in a turn
    # that stands (a turn the customer went on from, or cut before its end, asks it again later).
    asks: str | None = None

    @property
    def sentences(self) -> tuple[str, ...]:
        return (*self.whole, *self.within_budget)


Outcome = Answered | Opening | None


class TurnHandler(Protocol):
    async def handle(self, turn: HeardTurn) -> Outcome: ...


@dataclass
class MoreOffer:
    """The offer to tell more (``robot/dialogue/more.py``): the sentences the last reply held
    back at its budget, said first when the customer's next words are a yes. Whatever the
    next turn is, they are dropped after it."""

    held: list[str] = field(default_factory=list)
    own: bool = False  # the held lines are the robot's own (a second recommendation), the LLM had no part

    def offer(self, held: list[str], *, own: bool = False) -> None:
        """What the reply just said held back ([] after a cut or a fixed line); ``own``: a reply
        the robot wrote itself, with no LLM."""
        self.held, self.own = list(held), own

    async def handle(self, turn: HeardTurn) -> Outcome:
        held, self.held = self.held, []
        if held and YesWords.of(turn.persona.more_yes).match(turn.text):
            if self.own:  # said whole (cut at a clause, a recommendation lost its price), and no LLM after it
                return Opening(whole=tuple(held), llm=False)
            return Opening(within_budget=tuple(held))
        return None


class Farewell:
    """A goodbye and nothing else is answered with the persona's ``farewell`` line, the LLM not
    asked (``robot/dialogue/farewell.py``); the exchange is remembered like any other, and the
    visit ends soon after unless the visitor goes on (``Sessions.goodbye``)."""

    async def handle(self, turn: HeardTurn) -> Outcome:
        line = turn.persona.farewell
        if line and is_goodbye(turn.text, turn.persona.farewell_words):
            return Opening(whole=(line,), llm=False, ends_visit=True)
        return None


def stock_lines(persona: Persona) -> tuple[str, ...]:
    """The sentences of the persona's lines that say the robot cannot help there (its
    knowledge's ``no_answer``, its ``apology``), lower case, their questions left out: an LLM
    reply that begins by copying one of them again is said at once and ends there
    (``ReplyRules.stock``). A question ("Shall I call a member of our staff for you?") is left
    to the lines that act on it: the knowledge's hand-over calls the staff, a copy would not."""
    no_answer = persona.knowledge.no_answer if persona.knowledge is not None else ""
    return tuple(s.lower() for line in (no_answer, persona.apology) for s in sentences_of(line) if not s.endswith("?"))


def own_heads(persona: Persona) -> tuple[str, ...]:
    """How the persona's own bookkeeping lines begin: its profile lines up to their
    ``{profile}`` ("Noted:", "Here is our plan so far:") and its offer to tell more, whole. An
    LLM sentence that begins so is not said (``ReplyRules.own_heads``): the 135M model copied
    them about words it never had, and offered more with nothing held. A head of under five
    letters ("Okay,") would silence too much of the LLM's own and is left out."""
    heads = [line.split("{profile}", 1)[0].strip() for line in (persona.noted, persona.recap)
             if line and "{profile}" in line]
    heads += [persona.more_offer.strip()] if persona.more_offer else []
    return tuple(h for h in heads if sum(c.isalpha() for c in h) >= 5)


def first_person(persona: Persona) -> tuple[str, ...]:
    """The words the persona's visitors say of themselves ("I", "my", "we"), from its language's
    word lists (``memory/recall/slots/language.py``); none in a language without them, and an
    LLM sentence copying a visitor's line is then said as before."""
    language = language_of(persona.language)
    return language.first_person if language is not None else ()


class Recap:
    """A recap request ("Can you remind me what we planned?") is answered by the robot itself
    from the visitor profile, in the persona's words (``recap``): the embedded model alone
    named three of the plan's facts in 3 of 16 runs of the sample scenario (docs/memory.md)."""

    async def handle(self, turn: HeardTurn) -> Outcome:
        recap = profile_recap(turn)
        return Opening(whole=(recap,)) if recap is not None else None


def profile_recap(turn: HeardTurn) -> str | None:
    """The persona's ``recap`` line with the visitor's profile, when these words ask for a recap
    (None: they do not, the profile is empty, or the persona has no such line). One helper for
    the recap handler and the consultation's."""
    opening = _profile_said(turn.persona.recap, getattr(turn.memory, "recap", None), turn.text)
    return opening.whole[0] if opening is not None else None


class ForgetHandler:
    """A visitor asks to be forgotten, or answers the robot's question about it
    (``robot/dialogue/forget_request.py``): a yes deletes their memory from every file and
    tells the body (``forgotten`` event); a failed delete is the apology and an error."""

    def __init__(self, events: EventPublisher, report_error: Callable[[str, str, str | None], None]) -> None:
        self._requests = ForgetRequests()  # whether the robot asked "Shall I forget ...?"
        self._events = events
        self._report_error = report_error  # (source, message, turn_id)

    async def handle(self, turn: HeardTurn) -> Outcome:
        lines, forget = turn.persona.forget, getattr(turn.memory, "forget_user", None)
        if lines is None or forget is None:
            return None
        visitor = getattr(turn.memory, "visitor", None) or getattr(turn.memory, "user", None)
        heard = self._requests.hear(turn.text, ForgetWords.of(lines.words, lines.yes, lines.no), visitor)
        if heard is Forget.NONE:
            return None
        if heard is Forget.ASK:
            return Answered(lines.confirm)
        if heard is Forget.KEPT:
            return Answered(lines.kept)
        try:
            log.info("the visitor asked to be forgotten: %s", await forget(visitor))
            who = turn.visitor if turn.visitor is not None else str(visitor or "anonymous")
            self._events.publish(ForgottenEvent(visitor=who, by="visitor"))  # the body forgets too
        except Exception as exc:  # noqa: BLE001 - the customer hears an apology; the operator is told
            self._report_error("robot", f"the visitor asked to be forgotten and it failed: {exc}", turn.turn_id)
            return Answered(turn.persona.apology, errors=(f"robot: forget failed: {exc}",))
        return Answered(lines.done)


class Noted:
    """A statement that gives the visitor profile something new ("We are two adults and want
    to go in April.") is confirmed by the robot itself in the persona's words (``noted``:
    "Noted: travellers 2 adults; when April."), and the LLM goes on after it: the visitor
    hears what was understood, and can correct it ("not April, May"). The embedded 135M
    model, answering such a statement alone, often said nothing of it.

    A name the visitor gives is welcomed first, in the persona's ``welcome_name`` ("Nice to
    meet you, Ken."). Then the robot asks for what it still needs, where the persona gives a
    question for an empty profile slot (its ``ask``: "How many of you are travelling?"), once
    a visit (counted by the controller once it was said whole), and the LLM is not asked:
    after a "Noted:" line the 135M model went on with "I'm sorry for the confusion.", "I'm
    ready." or the customer's own words back. Never after a question of the customer's, which
    is theirs to have answered."""

    async def handle(self, turn: HeardTurn) -> Outcome:
        news_of = getattr(turn.memory, "news", None)
        if news_of is None:
            return None
        news, persona = news_of(turn.text), turn.persona
        lines = tuple(line.replace(field, value) for line, field, value in (
            (persona.welcome_name, "{name}", news.name), (persona.noted, "{profile}", news.noted)) if line and value)
        if not lines:
            return None
        if not news.question or is_question(turn.text):
            return Opening(whole=lines)
        return Opening(whole=(*lines, news.question), llm=False, asks=news.question_slot)


class KnowledgeAnswer:
    """A question the shop's knowledge answers is said by the robot from the entry's own
    sentences (the one that answers whole, the rest within the budget), and the LLM goes on
    after them; a question it cannot answer gets the persona's ``no_answer`` line and a
    ``handover`` event that calls a member of staff (``robot/dialogue/knowledge.py``)."""

    def __init__(self, events: EventPublisher, sheet: Callable[[HeardTurn], Awaitable[dict | None]] | None = None) -> None:
        self._events = events
        self._sheet = sheet  # the consultation sheet for the staff called (robot/dialogue/consult.py)

    async def handle(self, turn: HeardTurn) -> Outcome:
        plan = turn.knowledge
        if plan is None:
            return None
        if plan.handover:
            # what the files hold of the question first (a near miss, the known half), then staff called
            sheet = await self._sheet(turn) if self._sheet is not None else None
            self._events.publish(HandoverEvent(question=turn.text, turn_id=turn.turn_id, missing=plan.missing,
                                               reason="partial" if plan.opening else "no_answer", sheet=sheet))
            return Opening(whole=(*plan.opening, plan.handover), llm=False)
        if plan.opening:
            return Opening(whole=plan.opening[:1], within_budget=plan.opening[1:])
        return None


async def first_outcome(handlers: list[TurnHandler], turn: HeardTurn) -> Outcome:
    """The first handler's that is not None (None: the LLM answers the turn as it is)."""
    for handler in handlers:
        if (outcome := await handler.handle(turn)) is not None:
            return outcome
    return None


def _profile_said(line: str | None, read: Callable[[str], str] | None, text: str) -> Outcome:
    """The persona's ``line`` with ``{profile}`` filled by what ``read`` (the memory's recap or
    noted) gives for the visitor's words; None when the persona or the memory has none."""
    profile = read(text) if line and read is not None else ""
    return Opening(whole=(line.replace("{profile}", profile),)) if line and profile else None
