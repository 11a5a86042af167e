"""The words at a pause: when a transcript says the customer has not finished (a pure
function of the text, so each rule is shown here on the sentences it is for)."""

from __future__ import annotations

import pytest

from speech.turn_end import complete_question, turn_is_finished, unfinished


@pytest.mark.parametrize("text", [
    "I'd like to go to the", "We want to go in April and", "Our budget is about",
    "I would like to visit Kyoto in April...", "Our budget is two thousand", "We are 4",
    "Can you tell me about", "My name is", "So, we were thinking,", "I'd like to go to\u2026",
    "Our budget is about 2,000.", "The price is $", "$2,000 and",
])
def test_a_trailing_open_word_a_bare_number_or_dots_is_unfinished(text):
    assert unfinished(text)


@pytest.mark.parametrize("text", [
    "I would like to visit Kyoto in April.", "Our budget is two thousand dollars.", "Thank you.",
    "How much is the train to Nara?", "Yes", "", "Two.",
    # Whisper writes "two thousand dollars" with its sign: the unit is said
    "We are two adults and our budget is about $2,000.", "It costs \u20ac300", "About 50%.",
])
def test_a_whole_sentence_is_not_unfinished(text):
    assert not unfinished(text)


def test_a_complete_question_is_told_from_a_fragment_with_a_question_mark():
    assert complete_question("How much is the train to Nara?")
    assert complete_question("Can we go in April?")
    assert not complete_question("Nara?")  # too short to be a whole question
    assert not complete_question("How much is the?")  # ends on an open word
    assert not complete_question("I want to go to Nara.")


def test_the_decision_at_the_short_bound():
    assert turn_is_finished(0.9, "I would like to visit Kyoto.", 0.5)
    assert not turn_is_finished(0.9, "I would like to visit the", 0.5)  # the words outvote the model
    assert turn_is_finished(0.3, "How much is the train to Nara?", 0.5)  # a whole question: half the bar
    assert not turn_is_finished(0.1, "How much is the train to Nara?", 0.5)
    assert turn_is_finished(0.9, None, 0.5) and not turn_is_finished(0.2, None, 0.5)
    assert not turn_is_finished(None, None, 0.5)  # no model, no words: the silence decides
    assert not turn_is_finished(None, "I would like to visit Kyoto.", 0.5)
