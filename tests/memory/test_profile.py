"""The visitor profile: the travel persona's typed slots filled from what the customer says and
said back one way, corrections honoured, shown with each reply's newest utterance, kept per
visitor in either store, and gone with a forget. (The slot types one by one, in English and
German: tests/memory/test_slot_types.py.)"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory import admin
from memory.recall.profile import Profile, labels_of, make_slots
from tests.memory.backends import pg_server, store_where  # noqa: F401 - fixtures: both backends
from tests.memory.conftest import say

TRAVEL = load_persona(DEFAULT_PERSONA)
SLOTS = {name: slot.model_dump() for name, slot in TRAVEL.memory.profile.items()}


TODAY = date(2026, 11, 25)  # a Wednesday: what relative dates are resolved against


def profile_of(*lines: str) -> dict[str, list[str]]:
    profile = Profile()
    for line in lines:
        profile.update(make_slots(SLOTS, TRAVEL.vocabulary, TRAVEL.language), line, TODAY)
    return profile.to_dict()


def test_the_sample_scenario_fills_the_travel_slots():
    assert profile_of("Hello. My name is Ken. I would like to plan a trip to Kyoto and Nara.",
                      "We are two adults, we want to go in April, and our budget is two thousand dollars.") == {
        "name": ["Ken"], "destinations": ["Kyoto", "Nara"], "party": ["2 adults"], "dates": ["April"],
        "budget": ["$2,000"]}


def test_the_travel_persona_has_no_regular_expression_left():
    assert all(slot.type != "pattern" and not slot.patterns for slot in TRAVEL.memory.profile.values())


@pytest.mark.parametrize("lines, slot, value", [
    (("We are two adults.", "Sorry, actually three adults."), "party", ["3 adults"]),
    (("We want to go in April.", "Not April, May."), "dates", ["May"]),
    (("Our budget is $2,000.", "Hmm, make it 2500 dollars."), "budget", ["$2,500"]),
    (("Our budget is $2,000.", "Actually 2500."), "budget", ["$2,500"]),  # a correction needs no cue word
    (("Kyoto and Nara, please.", "Actually, not Nara. Osaka instead."), "destinations", ["Kyoto", "Osaka"]),
    (("We'll need a stroller.", "Oh, we won't need the stroller after all."), "needs", None),
    (("I may come back later.",), "dates", None),  # "may" is no month
    (("I am glad to be here.",), "name", None),  # no "my name is": no name
    (("I use a wheelchair.", "My wife is vegetarian."), "needs", ["wheelchair", "vegetarian"]),
    (("Our daughter is 13.", "Is there a high chair for the baby?"), "ages", ["13"]),  # no new age
    (("Kyoto first.", "Then Nara, and Kyoto again."), "destinations", ["Kyoto", "Nara"]),
])
def test_corrections_and_edge_cases(lines, slot, value):
    assert profile_of(*lines).get(slot) == value


# How visitors say it in their own words, and the one way each value is said back (the persona's
# slot types and word lists: config/personas/travel_agent.yaml; many more in bench/data/profile_phrasings.yaml).
@pytest.mark.parametrize("line, expected", [
    ("My wife and I want to go next spring.", {"party": ["2 adults"], "dates": ["spring 2027"]}),
    ("It's me and my husband, and our three kids.", {"party": ["2 adults, 3 children"]}),
    ("We are a family of four.", {"party": ["4 people"]}),
    ("I'm here with my mum and dad.", {"party": ["3 adults"]}),  # "my" said once holds for "dad"
    ("It's me, my son and daughter.", {"party": ["1 adult, 2 children"]}),
    ("Me and my kids.", {"party": ["1 adult, children"]}),  # how many is not said: not one
    ("It's the two of us, our daughter, she's thirteen, and the baby, he's just turned one.",
     {"party": ["2 adults, 2 children"], "ages": ["1 and 13"]}),  # the children on top of the two
    ("The two of us and our daughter.", {"party": ["2 adults, 1 child"]}),
    ("Five of us: me, the wife and our three.", {"party": ["2 adults, 3 children"]}),  # a number of one's own
    ("We're a family of four, with our two kids.", {"party": ["2 adults, 2 children"]}),  # of the four
    ("We're the grandparents, we've got the two grandchildren, eleven and fourteen.",
     {"party": ["2 adults, 2 children"], "ages": ["11 and 14"]}),
    ("I've got two full days before I fly home.", {"time": ["2 days"]}),
    ("We're free all day.", {"time": ["1 day"]}),
    ("We've got a good hour.", {"time": ["1 hour"]}),
    ("There are seven of us, so it's two groups?", {"party": ["7 people"]}),  # "it's 2 groups": no age
    ("We are two adults and a child.", {"party": ["2 adults, 1 child"]}),
    ("I'm travelling alone.", {"party": ["1 adult"]}),
    ("We can spend around two grand on the whole trip.", {"budget": ["$2,000"]}),
    ("Our budget is under 5000 dollars.", {"budget": ["$5,000"]}),
    ("Money is tight, our budget is maybe fifteen hundred.", {"budget": ["$1,500"]}),
    ("Our budget is 3000.", {"budget": ["$3,000"]}),
    ("Maybe $2k in total?", {"budget": ["$2,000"]}),
    ("We can afford about 300,000 yen.", {"budget": ["¥300,000"]}),
    ("About two thousand dollars.", {"budget": ["$2,000"]}),  # the whole answer: no cue needed
    ("We come during cherry blossom season.", {"dates": ["cherry blossom season"]}),
    ("We want to go in the fall.", {"dates": ["autumn"]}),
    ("Next week if possible.", {"dates": ["week of 30 November 2026"]}),
    ("We leave in two weeks.", {"dates": ["around 9 December 2026"]}),
    ("My mother can't walk far.", {"needs": ["limited walking"]}),
    # and what must not fill a slot
    ("Is it safe to walk alone at night?", {}),
    ("Is the grand shrine open?", {}),
    ("What is the budget option?", {}),
    ("The train costs 1,500 yen?", {}),  # a price repeated is no budget
    ("I fell last year.", {}),
])
def test_a_visitors_own_words_fill_the_slots(line, expected):
    assert profile_of(line) == expected


PROFILE_LINES = "What you know about the customer:\n- Name: Ken\n- Travellers: 2 adults\n- When: April\n- Places: Kyoto"


async def test_the_profile_rides_on_each_utterance_and_comes_back_with_the_visitor(make_memory, store_where):
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    role_prompt = memory.role_prompt
    await say(memory, "My name is Ken and we are two adults.", "Welcome, Ken.", "We would love Kyoto in April.")
    assert memory.profile == {"name": ["Ken"], "party": ["2 adults"], "destinations": ["Kyoto"], "dates": ["April"]}
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
    shown = await admin.show(store_where, "ken", labels_of(SLOTS))  # as the persona labels it, in its order
    assert "profile:\n  Name: Ken\n  Travellers: 2 adults\n  When: April\n  Places: Kyoto\n" in shown


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
