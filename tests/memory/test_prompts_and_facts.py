"""Prompt templates (source headers, placeholders) and the fact guard."""

from __future__ import annotations

from importlib import resources

import pytest

from memory.facts import MARKER, carried, extract_facts, guard
from memory.records import StoredTurn
from memory.summarizer import clean_summary, render_role_prompt
from prompts import load_prompt

TEMPLATES = ["rsum_update", "swin_update", "role_prompt"]


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_template_names_its_source_and_the_loader_strips_it(name):
    raw = resources.files("prompts").joinpath(f"{name}.txt").read_text()
    assert raw.startswith("#") and "Source:" in raw.split("\n\n")[0]
    assert not load_prompt(name).startswith("#")


def test_rsum_prompt_keeps_the_papers_shape():
    text = load_prompt("rsum_update")
    assert "{previous_summary}" in text and "{dialogue}" in text and "{max_sentences}" in text
    for word in ("budget", "dates", "food", "mobility", "plan so far"):
        assert word in text


def test_role_prompt_is_the_persona_until_there_is_a_summary():
    assert render_role_prompt("You are Sakura.", None) == "You are Sakura."
    both = render_role_prompt("You are Sakura.", "The customer is Ken.")
    assert both.startswith("You are Sakura.") and both.endswith("The customer is Ken.")


def user(text: str, i: int = 1) -> StoredTurn:
    return StoredTurn(i, "user", text, 0.0)


def test_facts_are_the_customers_name_and_constraints():
    facts = extract_facts([user("Hello! My name is Ken Tanaka. We are two adults and our budget is $2000."),
                           StoredTurn(2, "assistant", "My name is Sakura and I love Kyoto.", 0.0),
                           user("I use a wheelchair. Nice weather today.")])
    assert facts == ["my name is Ken Tanaka", "We are two adults and our budget is $2000", "I use a wheelchair"]


def test_guard_keeps_the_customers_words_through_summaries_that_drop_them():
    turns = [user("My name is Ken. I use a wheelchair.")]
    first = guard("The customer wants to see temples.", "", turns)
    assert first.splitlines()[-1] == f'{MARKER} "my name is Ken." "I use a wheelchair."'
    # Later summaries that drop them (or copy the marker line) still carry them, once.
    second = guard(f"Ken likes temples.\n{MARKER} garbled", first, [user("Budget is 900 euros.")])
    third = guard("They want temples.", second, [])
    assert third.splitlines()[-1] == f'{MARKER} "my name is Ken." "I use a wheelchair." "Budget is 900 euros."'
    assert third.count(MARKER) == 1
    # Bounded: the newest statements stay.
    many = guard("x", third, [user(f"We stay {i} nights.") for i in range(20)], max_facts=3)
    assert many.splitlines()[-1] == f'{MARKER} "We stay 17 nights." "We stay 18 nights." "We stay 19 nights."'
    assert carried("our budget is 2000 dollars", "Budget: 2000 dollar limit.")


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
