"""The visitor profile: the travel persona's slots filled from what the customer says,
corrections honoured, shown with each reply's newest utterance, kept per visitor in either store, and
gone with a forget."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory import admin
from memory.recall.profile import Profile, make_slots
from tests.memory.backends import pg_server, store_where  # noqa: F401 - fixtures: both backends
from tests.memory.conftest import say

TRAVEL = load_persona(DEFAULT_PERSONA)
SLOTS = {name: slot.model_dump() for name, slot in TRAVEL.memory.profile.items()}


def profile_of(*lines: str) -> dict[str, list[str]]:
    profile = Profile()
    for line in lines:
        profile.update(make_slots(SLOTS, TRAVEL.vocabulary), line)
    return profile.to_dict()


def test_the_sample_scenario_fills_the_travel_slots():
    assert profile_of("Hello. My name is Ken. I would like to plan a trip to Kyoto and Nara.",
                      "We are two adults, we want to go in April, and our budget is two thousand dollars.") == {
        "name": ["Ken"], "destinations": ["Kyoto", "Nara"], "party": ["two adults"], "dates": ["April"],
        "budget": ["two thousand dollars"]}


@pytest.mark.parametrize("lines, slot, value", [
    (("We are two adults.", "Sorry, actually three adults."), "party", ["three adults"]),
    (("We want to go in April.", "Not April, May."), "dates", ["May"]),
    (("Our budget is $2,000.", "Hmm, make it 2500 dollars."), "budget", ["2500 dollars"]),
    (("I may come back later.",), "dates", None),  # "may" is no month
    (("I am glad to be here.",), "name", None),  # no "my name is": no name
    (("I use a wheelchair.", "My wife is vegetarian."), "needs", ["wheelchair", "vegetarian"]),
    (("Kyoto first.", "Then Nara, and Kyoto again."), "destinations", ["Kyoto", "Nara"]),
])
def test_corrections_and_edge_cases(lines, slot, value):
    assert profile_of(*lines).get(slot) == value


# How visitors say it in their own words (the persona's patterns, not code: config/personas/travel_agent.yaml).
@pytest.mark.parametrize("line, expected", [
    ("My wife and I want to go next spring.", {"party": ["My wife and I"], "dates": ["next spring"]}),
    ("It's me and my husband, and our three kids.", {"party": ["me and my husband, and our three kids"]}),
    ("We are a family of four.", {"party": ["a family of four"]}),
    ("We are two adults and a child.", {"party": ["two adults and a child"]}),
    ("I'm travelling alone.", {"party": ["travelling alone"]}),
    ("We can spend around two grand on the whole trip.", {"budget": ["around two grand"]}),
    ("Our budget is under 5000 dollars.", {"budget": ["under 5000 dollars"]}),
    ("Money is tight, our budget is maybe fifteen hundred.", {"budget": ["maybe fifteen hundred"]}),
    ("Our budget is 3000.", {"budget": ["3000"]}),
    ("Maybe $2k in total?", {"budget": ["$2k"]}),
    ("We come during cherry blossom season.", {"dates": ["cherry blossom season"]}),
    ("We want to go this fall.", {"dates": ["this fall"]}),
    ("My mother can't walk far.", {"needs": ["can't walk far"]}),
    # and what must not fill a slot
    ("Is it safe to walk alone at night?", {}),
    ("Is the grand shrine open?", {}),
    ("What is the budget option?", {}),
    ("The train costs 1,500 yen?", {}),  # a price repeated is no budget
    ("I fell last year.", {}),
])
def test_a_visitors_own_words_fill_the_slots(line, expected):
    assert profile_of(line) == expected


PROFILE_LINES = "What you know about the customer:\n- Name: Ken\n- Travellers: two adults\n- When: April\n- Places: Kyoto"


async def test_the_profile_rides_on_each_utterance_and_comes_back_with_the_visitor(make_memory, store_where):
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    role_prompt = memory.role_prompt
    await say(memory, "My name is Ken and we are two adults.", "Welcome, Ken.", "We would love Kyoto in April.")
    assert memory.profile == {"name": ["Ken"], "party": ["two adults"], "destinations": ["Kyoto"], "dates": ["April"]}
    assert (await memory.build_messages("Which temple first?"))[-1]["content"] == "Which temple first?"
    messages = await memory.build_messages("Can you remind me what we planned so far?")
    # The role prompt and the history stay a prefix the server has cached; the notes go last.
    assert messages[0]["content"] == role_prompt and "know about the customer" not in role_prompt
    assert messages[-1]["content"] == f"{PROFILE_LINES}\n\nCan you remind me what we planned so far?"
    assert all("know about the customer" not in m["content"] for m in messages[:-1])
    await memory.aclose()
    again = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)  # another session
    assert again.profile == memory.profile
    last = (await again.build_messages("Can you remind me what we planned?"))[-1]["content"]
    assert PROFILE_LINES in last
    shown = await admin.show(store_where, "ken")
    assert "profile:\n  name: Ken\n" in shown and "  dates: April" in shown


async def test_forget_takes_the_profile_too(make_memory, store_where, db: Path, tmp_path):
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    await say(memory, "My name is Zebulon.", "Hello, Zebulon.")
    assert await memory.flush()  # archived, so retrieval could find it
    assert "Zebulon" in str(await memory.build_messages("What is my name?"))
    await memory.forget_user("ken")
    assert memory.profile == {} and "Zebulon" not in str(await memory.build_messages("What is my name?"))
    assert "Zebulon" not in str(await admin.export(store_where))
    if store_where == str(db):
        files = [p for p in tmp_path.iterdir() if p.name.startswith(db.name) and b"Zebulon" in p.read_bytes()]
        assert files == []
