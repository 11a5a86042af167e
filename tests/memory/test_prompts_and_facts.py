"""Prompt templates (source headers, placeholders) and the fact guard."""

from __future__ import annotations

from importlib import resources

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory.core.records import StoredRemark
from memory.summary.facts import FactGuard
from memory.summary.summarizer import clean_summary, render_role_prompt
from prompts import load_prompt

TEMPLATES = ["rsum_update", "swin_update", "summary_retry", "role_prompt", "summary_focus", "fact_words"]
TRAVEL = load_persona(DEFAULT_PERSONA).memory  # the travel persona's wording
MARKER = "Customer's own words:"


def travel_guard(max_facts: int = 8) -> FactGuard:
    return FactGuard(TRAVEL.fact_words, TRAVEL.labels["user"], max_facts)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_names_its_source_and_the_loader_strips_it(name):
    raw = resources.files("prompts").joinpath(f"{name}.txt").read_text()
    assert raw.startswith("#") and "Source:" in raw.split("\n\n")[0]
    assert not load_prompt(name).startswith("#")


@pytest.mark.parametrize("name", ["rsum_update", "swin_update"])
def test_summary_prompts_keep_the_papers_shape_and_no_use_case(name):
    text = load_prompt(name)
    for field in ("{previous_summary}", "{dialogue}", "{max_sentences}", "{role}", "{person}", "{focus}"):
        assert field in text
    assert "travel" not in text.lower() and "customer" not in text.lower()


def test_role_prompt_is_the_persona_until_there_is_a_summary():
    assert render_role_prompt("You are Sakura.", None) == "You are Sakura."
    both = render_role_prompt("You are Sakura.", "The customer is Ken.")
    assert both.startswith("You are Sakura.") and both.endswith("The customer is Ken.")


def user(text: str, i: int = 1) -> StoredRemark:
    return StoredRemark(i, "user", text, 0.0)


def test_facts_are_the_customers_name_and_constraints():
    facts = travel_guard().extract([user("Hello! My name is Ken Tanaka. We are two adults and our budget is $2000."),
                           StoredRemark(2, "assistant", "My name is Sakura and I love Kyoto.", 0.0),
                           user("I use a wheelchair. Nice weather today.")])
    assert facts == ["my name is Ken Tanaka", "We are two adults and our budget is $2000", "I use a wheelchair"]


def test_guard_keeps_the_customers_words_through_summaries_that_drop_them():
    guard = travel_guard().apply
    turns = [user("My name is Ken. I use a wheelchair.")]
    first = guard("The customer wants to see temples.", "", turns)
    assert first.splitlines()[-1] == f'{MARKER} "my name is Ken." "I use a wheelchair."'
    # Later summaries that drop them (or copy the marker line) still carry them, once.
    second = guard(f"Ken likes temples.\n{MARKER} garbled", first, [user("Budget is 900 euros.")])
    third = guard("They want temples.", second, [])
    assert third.splitlines()[-1] == f'{MARKER} "my name is Ken." "I use a wheelchair." "Budget is 900 euros."'
    assert third.count(MARKER) == 1
    # Bounded: the newest statements stay.
    many = travel_guard(max_facts=3).apply("x", third, [user(f"We stay {i} nights.") for i in range(20)])
    assert many.splitlines()[-1] == f'{MARKER} "We stay 17 nights." "We stay 18 nights." "We stay 19 nights."'


def test_clean_summary_strips_labels_and_caps_sentences_and_tokens():
    assert clean_summary("Updated memory: A. B. C.", 2, 100) == "A. B."
    long = " ".join(f"Sentence number {i} is here." for i in range(50))
    assert len(clean_summary(long, 50, 30)) <= 30 * 4


def test_clean_summary_drops_echoed_transcript_and_instructions_and_loops():
    prompt = "Keep names exactly as said and write only the memory.\nCustomer: I use a wheelchair, so no stairs please."
    raw = ("Customer: I use a wheelchair, so no stairs please.\n"
           "Keep names exactly as said and write only the memory. The customer uses a wheelchair. "
           "The customer uses a wheelchair. They want step-free routes.")
    assert clean_summary(raw, 20, 200, echo_of=prompt, labels=["Customer"]) == (
        "The customer uses a wheelchair. They want step-free routes.")


def test_clean_summary_collapses_a_looping_list():
    raw = "The customer's needs are:\n- wheelchair\n- no stairs\n- no stairs\n- no stairs"
    assert clean_summary(raw, 20, 200) == "The customer's needs are: - wheelchair - no stairs"


def test_facts_know_may_from_may_and_ignore_time_stamps():
    facts = travel_guard().extract([user("[2:01 pm on 23 January, 2022] Hey Nate! I may come back later."),
                                    user("We leave in May. We march to the station. Back in March.")])
    assert facts == ["We leave in May", "Back in March"]


def test_entities_are_names_numbers_and_dates_and_the_gate_counts_what_survives():
    from memory.summary.entities import check, entities

    found = entities(["[2:01 pm on 23 January, 2022] Hey Nate! Kyoto is far.", "We go to Kyoto on 3 May with 1,200 yen."])
    assert found == {"23", "January", "2022", "Nate", "Kyoto", "3", "May", "1200"}
    assert check("Nate goes to Kyoto on 3 May, 23 January 2022, with 1200 yen.", found).recall == 1.0
    kept = check("Nate may go to Kyoto.", found)
    assert kept.recall == 2 / 8 and "May" in kept.missing  # "may" is not the month


def test_a_decimal_is_one_number_not_two():
    """"2.50 euros" is 2.50: a period between digits ends no sentence (the bench counted "2"
    and "50" as invented in the robot's own sentence, and the guard would refuse an LLM's)."""
    from memory.recall.facts import facts_of, numbers_of

    text = "City tax is 2.50 euros per adult. We open at 9.30."
    assert facts_of(text).numbers == numbers_of(text) == {"2.50", "9.30"}
