"""What a visitor wants of a consultation, read by meaning (robot/consult/intent_model.py, the
knowledge's real sentence model): requests in words the word lists never had, the offers' names
kept out of the comparison, remarks that only sound like a request left alone, and the word lists
when the model is not there."""

from __future__ import annotations

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from robot.app.runtime import understanding_of
from robot.consult.intent_model import _masked, _parts
from robot.consult.intents import Intent, by_words, intent_model, intents
from robot.consult.offers import OfferBook
from robot.dialogue.knowledge import ShopKnowledge
from tests.embedding_cache import session_embeddings

TRAVEL = load_persona(DEFAULT_PERSONA)


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    settings = load_settings()
    settings.knowledge.cache_dir = session_embeddings(tmp_path_factory)
    knowledge = ShopKnowledge.of_persona(TRAVEL, 300, understanding_of(settings))
    knowledge.embed()  # the intents' examples too (its warm-ups)
    k = TRAVEL.knowledge
    return OfferBook.of_persona(k.offers, k.entries, k.base), knowledge.index


def test_the_examples_are_embedded_with_the_knowledge(shop):
    _, index = shop
    assert intent_model(index).ready


@pytest.mark.parametrize("text, wanted", [
    ("Who do I give my credit card to?", {Intent.BOOK}),                  # no "book", no "pay"
    ("Roughly what will we be spending on everything, then?", {Intent.TOTAL}),
    ("Honestly we're lost. Where would you send a family like ours?", {Intent.RECOMMEND}),
    ("Get rid of the Gion Evening Walk, we'll be exhausted by then.", {Intent.DROP}),
    ("Let's fit the Gion Evening Walk in after the temples.", {Intent.ADD}),
])
def test_requests_in_words_no_list_has_are_read(shop, text, wanted):
    book, index = shop
    assert intents(text, book, index) == wanted
    assert by_words(text) != wanted  # the word lists alone miss (or misread) each of these


@pytest.mark.parametrize("text", [
    "My neighbour recommended Kyoto to us years ago.",
    "We took a taxi instead of the bus this morning.",
    "The total cost of the flights was shocking.",
])
def test_remarks_that_sound_like_a_request_are_not_one(shop, text):
    book, index = shop
    assert intents(text, book, index) == set()
    assert by_words(text)  # where the word lists heard a request


def test_an_offers_name_is_said_as_it_so_the_request_decides(shop):
    """"Drop" and "add" the same tour are near in meaning through the name they share."""
    book, index = shop
    from robot.consult.intents import _offer_spans

    text = "Please drop the Nara Deer Park Half-Day Tour."
    assert _masked(text, _offer_spans(text, book, index)) == "Please drop it."
    assert intents(text, book, index) == {Intent.DROP}


def test_two_requests_joined_by_and_are_both_read(shop):
    book, index = shop
    assert _parts("Add the touch pool and then let's pay.") == ["Add the touch pool", "let's pay"]
    assert intents("Take the Gion Evening Walk off and then we're ready to pay.", book, index) == \
        {Intent.DROP, Intent.BOOK}


def test_without_the_sentence_model_the_word_lists_read_the_turn(shop):
    book, _ = shop
    knowledge = ShopKnowledge.of_persona(TRAVEL, 300, None)
    knowledge.embed()
    assert intent_model(knowledge.index) is None
    assert intents("Can you book it for us?", book, knowledge.index) == {Intent.BOOK}


def test_a_word_of_the_lists_does_not_hide_what_the_clause_means(shop):
    """"Too" adds in the word lists; "get rid of it, we'll be too tired" drops: both are read, and
    the consultation drops (a drop with no choice made)."""
    book, index = shop
    assert Intent.DROP in intents("Get rid of the Gion Evening Walk, we'll be too tired.", book, index)


def test_a_change_of_plan_by_meaning_alone_needs_an_offer_named(shop):
    """"We'll think about it over lunch" is near "add it" in meaning; with no offer named, "it" would
    be the last recommendation, put in the plan for nothing."""
    book, index = shop
    assert not intents("We'll think about it over lunch and come back.", book, index) & \
        {Intent.CHOOSE, Intent.ADD, Intent.DROP, Intent.INSTEAD}
