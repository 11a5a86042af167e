"""The visitor profile's LLM pass (memory/recall/profile_llm.py): what the travel persona's patterns
miss is asked of the memory's LLM in the background, and only values in the customer's own
words are kept.

A capable model cannot run here (the embedded 135M fills nothing: last test), so the answers
come from a double that answers form requests from a script and summarizes by rule; the
parsing, grounding, ordering, forgetting and storing are the real code over a real SQLite file."""

from __future__ import annotations

import asyncio

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory.core.base import Message
from memory.recall.profile import make_slots
from memory.recall.profile_llm import ProfileAsker
from tests.memory.conftest import RuleLLM, say

TRAVEL = load_persona(DEFAULT_PERSONA)
SLOTS = {name: slot.model_dump() for name, slot in TRAVEL.memory.profile.items()}
FACTS = TRAVEL.memory.fact_words


class FormLLM(RuleLLM):
    """Answers the profile's form requests from ``answers`` (utterance -> text); summarizes
    everything else by rule. ``form_gate`` holds form answers until set."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__()
        self.answers = answers
        self.forms: list[str] = []
        self.form_gate: asyncio.Event | None = None

    async def __call__(self, messages: list[Message]) -> str:
        if not messages[0]["content"].startswith("You fill in a form"):
            return await super().__call__(messages)
        said = messages[-1]["content"].split('"')[1]
        self.forms.append(said)
        if self.form_gate is not None:
            await self.form_gate.wait()
        if said not in self.answers:
            raise ConnectionError("LLM unreachable")
        return self.answers[said]


def asker(answers: dict[str, str] | None = None) -> ProfileAsker:
    from memory.summary.facts import fact_pattern

    return ProfileAsker(make_slots(SLOTS, TRAVEL.vocabulary), FormLLM(answers or {}), fact_pattern(FACTS))


def test_only_values_in_the_customers_words_are_read():
    said = "We'll bring the kids along, and money is tight, say fifteen hundred."
    answer = ("Travellers: the kids\n- Budget: fifteen hundred\nWhen: next summer\n"  # not said: left out
              "Needs: none\nMood: tight\nPlaces: Kyoto")  # no such field; not said
    # a value the slot's type reads is said back its way ("$1,500"); one it does not ("the kids") as given
    assert asker().read(answer, said) == {"party": ["the kids"], "budget": ["$1,500"]}


def test_only_what_speaks_of_the_person_is_asked_about():
    a = asker()
    assert a.wanted("We'll bring the kids along.")  # "kids": a fact word of the persona
    assert a.wanted("Is it OK on 2,000 dollars?")
    assert not a.wanted("What should we see first?")


async def test_what_the_patterns_miss_comes_from_the_llm_and_is_stored(make_memory):
    said = "We'll bring the kids along."
    llm = FormLLM({said: "Travellers: the kids"})
    memory = await make_memory(user="ken", llm_=llm, profile_llm=True, profile=SLOTS, vocabulary=TRAVEL.vocabulary,
                               fact_words=FACTS)
    await say(memory, "My name is Ken.", "Hello Ken.", said, "Lovely.", "What should we see first?")
    await memory.wait_idle()
    assert llm.forms == [said]  # the name was the patterns'; the question spoke of nobody
    assert memory.profile == {"name": ["Ken"], "party": ["the kids"]}
    await memory.aclose()
    again = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    assert again.profile == {"name": ["Ken"], "party": ["the kids"]}  # stored with the visitor


async def test_a_late_answer_does_not_undo_what_was_said_after(make_memory):
    first = "We'll bring the kids along."
    llm = FormLLM({first: "Travellers: the kids"})
    llm.form_gate = asyncio.Event()
    memory = await make_memory(llm_=llm, profile_llm=True, profile=SLOTS, vocabulary=TRAVEL.vocabulary,
                               fact_words=FACTS)
    await say(memory, first, "How many?", "Actually three adults.")
    llm.form_gate.set()
    await memory.wait_idle()
    assert memory.profile["party"] == ["3 adults"]


@pytest.mark.parametrize("answer", ["Budget: five thousand dollars", "none", "I'm sorry, I can't help with that."])
async def test_an_invented_or_useless_answer_fills_nothing(make_memory, answer):
    said = "Money is tight on this trip, we have little budget."
    memory = await make_memory(llm_=FormLLM({said: answer}), profile_llm=True, profile=SLOTS,
                               vocabulary=TRAVEL.vocabulary, fact_words=FACTS)
    await say(memory, said)
    await memory.wait_idle()
    assert memory.profile == {}


async def test_a_failing_llm_leaves_the_patterns_values(make_memory, caplog):
    memory = await make_memory(llm_=FormLLM({}), profile_llm=True, profile=SLOTS, vocabulary=TRAVEL.vocabulary,
                               fact_words=FACTS)
    await say(memory, "We are two adults and we love Kyoto.")
    await memory.wait_idle()
    assert memory.profile == {"party": ["2 adults"], "destinations": ["Kyoto"]}
    assert "the LLM pass failed" in caplog.text


async def test_nothing_asked_before_a_forget_comes_back(make_memory):
    said = "My wife is coming, she is vegetarian, and so are the kids."
    llm = FormLLM({said: "Travellers: my wife, the kids"})
    llm.form_gate = asyncio.Event()
    memory = await make_memory(user="ken", llm_=llm, profile_llm=True, profile=SLOTS, vocabulary=TRAVEL.vocabulary,
                               fact_words=FACTS)
    await say(memory, said)
    await asyncio.sleep(0)  # the question is asked
    await memory.forget_user("ken")
    llm.form_gate.set()
    await memory.wait_idle()
    assert memory.profile == {}


async def test_off_by_default(make_memory):
    llm = FormLLM({})
    memory = await make_memory(llm_=llm, profile=SLOTS, vocabulary=TRAVEL.vocabulary, fact_words=FACTS)
    await say(memory, "We'll bring the kids along.")
    await memory.wait_idle()
    assert llm.forms == []
