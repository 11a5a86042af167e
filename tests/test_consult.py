"""Consulting: the offers read from the sample shops' files, exact quotes, recommendations that
keep every hard wish, and whole consultations through a real runtime (the sample persona, its
knowledge, offers and slots; SQLite memory; an OpenAI-compatible stub as the LLM, which the
consultation never needs): the plan changed, kept for a returning visitor and forgotten with
them, the sheet on the handover, and the LLM not asked."""

from __future__ import annotations

from contextlib import asynccontextmanager
from decimal import Decimal

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from robot.consult.offers import OfferBook
from robot.consult.quote import Party, quote
from robot.consult.recommend import Wishes, recommend
from robot.core.events import HandoverEvent
from tests.embedding_cache import shared_embeddings
from tests.openai_stub_server import StubOpenAIServer

TRAVEL = load_persona(DEFAULT_PERSONA)
MUSEUM = load_persona(DEFAULT_PERSONA.parent / "museum_guide.yaml")


def book_of(persona) -> OfferBook:
    k = persona.knowledge
    return OfferBook.of_persona(k.offers, k.entries, k.base)


@pytest.fixture(scope="module")
def travel() -> OfferBook:
    return book_of(TRAVEL)


@pytest.fixture(scope="module")
def museum() -> OfferBook:
    return book_of(MUSEUM)


def total(book: OfferBook, offer: str, party: str, ages: str | None = None) -> int | None:
    q = quote(book.named(offer), Party.of(party, ages), book)
    return int(q.total.amount) if q.total is not None and not q.missing else None


# --- offers and quotes --------------------------------------------------------------------------


def test_the_offers_are_the_rows_of_the_persona_tables(travel, museum):
    assert len(travel.offers) == 10 and travel.admission is None
    nara = travel.named("Nara Deer Park Half-Day Tour")
    assert (nara.price_adult.amount, nara.price_child.amount, nara.duration_min, nara.step_free) == \
        (Decimal(6500), Decimal(3200), 240, True)
    assert travel.named("Fushimi Inari Early Morning Walk").step_free is False
    assert travel.named("Arashiyama Bamboo and River Tour").step_free is None  # not known: no fit for a wheelchair
    assert museum.admission is not None and museum.admission.family_party == (2, 2)
    assert {o.name for o in museum.offers} == {"Planetarium show", "Coding workshop", "Guided tour", "Touch pool",
                                               "Fossil dig"}


@pytest.mark.parametrize("offer, party, ages, expected", [
    ("Nara Deer Park Half-Day Tour", "2 adults, 1 child", None, 16200),        # 2 x 6,500 + 3,200
    ("Kyoto Temples Day Tour", "2 adults, 2 children", "3 and 7", 24500),      # the 3-year-old joins free
    ("Uji Tea Tasting Tour", "2 adults, 1 child", None, 20400),               # per person: the child too
    ("Private Guide Day", "7 people", None, 68400),                           # 2 groups, 10 % off for 7
    ("Kyoto and Nara Two-Day Package", "1 adult", None, 57000),               # + the single supplement
    ("Kyoto and Nara Two-Day Package", "3 adults", None, 153000),             # one adult alone in a room
    ("Kyoto and Nara Two-Day Package", "2 adults, 1 child", None, None),      # a child's price is in no file
    ("Kyoto Cooking Class", "6 people", None, 45900),                         # 6 x 8,500 less 10 %
])
def test_a_quote_is_the_files_prices_times_the_party(travel, offer, party, ages, expected):
    assert total(travel, offer, party, ages) == expected


def test_children_of_unknown_number_are_counted_by_their_ages_or_asked_for(travel):
    assert Party.of("2 adults, children").known is False  # no total for 2 adults: the robot asks who comes
    assert total(travel, "Nara Deer Park Half-Day Tour", "2 adults, children", "8 and 10") == 19400  # 2 x 6,500 + 2 x 3,200


def test_the_museum_adds_its_tickets_and_the_family_ticket_when_it_is_the_party(museum):
    assert total(museum, "Guided tour", "2 adults, 1 child") == 35                 # 14 + 14 + 7, free tour
    assert total(museum, "Guided tour", "2 adults, 2 children", "5 and 9") == 36   # the family ticket
    assert total(museum, "Coding workshop", "2 adults, 2 children", "8 and 11") == 46  # 36 + 2 x 5, adults watch
    assert total(museum, "Guided tour", "1 adult, 1 child", "2") == 14             # under 4 go free
    assert quote(museum.named("Planetarium show"), Party.of("2 adults"), museum).total is None  # no price in the files


# --- recommendations ------------------------------------------------------------------------------


def wishes(**profile) -> Wishes:
    types = {name: spec.type for name, spec in TRAVEL.memory.profile.items()}
    return Wishes.of({k: v if isinstance(v, list) else [v] for k, v in profile.items()}, types)


def test_every_recommendation_meets_every_hard_wish(travel):
    rec = recommend(travel, wishes(party="2 adults, 1 child", budget="¥30,000", time="1 day", destinations=["Kyoto"]))
    for fit in rec.fits:
        assert fit.quote.total is not None and fit.quote.total.amount <= 30000
        assert fit.offer.duration_min <= 8 * 60
    assert "Kyoto and Nara Two-Day Package" in rec.ruled_out["time"]
    wheel = recommend(travel, wishes(party="1 adult", needs=["wheelchair"], budget="¥10,000"))
    assert [f.offer.name for f in wheel.fits] == ["Nara Deer Park Half-Day Tour", "Kyoto Temples Day Tour"]


def test_when_nothing_fits_the_wish_that_rules_all_out_is_named_and_the_nearest_offered(travel):
    rec = recommend(travel, wishes(party="2 adults", dates="31 December"))
    assert not rec.fits and rec.ruling_wish == "dates" and rec.nearest is not None
    cheap = recommend(travel, wishes(party="1 adult", budget="¥3,000"))
    assert not cheap.fits and cheap.ruling_wish == "budget"
    assert cheap.nearest.offer.name == "Fushimi Inari Early Morning Walk"  # the cheapest that breaks only the budget


def test_a_place_no_offer_goes_to_rules_every_offer_out_and_is_named(travel):
    """Nothing the agency sells goes to Hiroshima: no tour "fits you"; a place one offer serves
    stays a preference among the others."""
    from robot.consult.saying import recommendation
    far = wishes(party="2 adults", destinations=["Hiroshima"])
    rec = recommend(travel, far)
    assert not rec.fits and rec.ruling_wish == "places" and rec.nearest is not None
    said = " ".join(recommendation(rec, far, TRAVEL.knowledge.offers.lines, "tour"))
    assert "Hiroshima" in said and "fits you:" not in said
    both = recommend(travel, wishes(party="2 adults", destinations=["Hiroshima", "Uji"]))
    assert both.fits[0].offer.name == "Uji Tea Tasting Tour" and len(both.fits) == len(travel.offers)


def test_a_budget_in_another_currency_is_not_compared(travel):
    rec = recommend(travel, wishes(party="2 adults", budget="$300"))
    assert rec.budget_not_compared and len(rec.fits) == len(travel.offers)


def test_a_child_too_young_for_an_offer_rules_it_out(museum):
    types = {name: spec.type for name, spec in MUSEUM.memory.profile.items()}
    rec = recommend(museum, Wishes.of({"party": ["1 adult, 2 children"], "ages": ["6 and 9"], "time": ["2 hours"]}, types))
    assert "Coding workshop" in rec.ruled_out["ages"] and "Coding workshop" not in [f.offer.name for f in rec.fits]


# --- whole consultations ---------------------------------------------------------------------------


def _replies(server) -> list[dict]:
    """The requests for a reply (a summary's, made on its timer, and its retry, are the memory's own)."""
    return [r for r in server.requests
            if not r["messages"][0]["content"].startswith(("You write the memory", "You take notes for"))]


async def _runtime(tmp_path, server, meaning: bool = True):
    from robot.app.runtime import open_runtime

    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    settings.knowledge.cache_dir = shared_embeddings(tmp_path)
    if not meaning:  # as before a large shop's sentence vectors are ready: words and names only
        settings.knowledge.sentence_model = None
    settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
    return open_runtime(settings, TRAVEL, DEFAULT_PERSONA, audio_out="text", listen=False)


@asynccontextmanager
async def _talking(tmp_path, visitor: str, understood: bool = False):
    """The sample travel persona's runtime (an LLM stub the consultation never needs), ``visitor``
    talking: its controller. ``understood``: the start waits until the shop's vectors and the
    intents' examples are embedded (a busy machine embeds them later, at a low priority, and the
    robot reads by words until then), for tests that judge what is read by meaning."""
    from unittest import mock

    import memory.recall.knowledge.vectors as vectors
    import robot.app.runtime as runtime

    with mock.patch.object(runtime, "EMBED_WAIT_S", 900.0 if understood else runtime.EMBED_WAIT_S), \
            mock.patch.object(vectors, "yield_to_replies", (lambda: None) if understood else vectors.yield_to_replies):
        async with StubOpenAIServer(reply="Fine.") as server:
            async with await _runtime(tmp_path, server) as rt:
                if understood:
                    from robot.consult.intents import intent_model

                    assert intent_model(rt.controller.knowledge.index).ready
                await rt.controller.sessions.start(visitor)
                yield rt.controller


@pytest.mark.parametrize("meaning", [True, False], ids=["embedded", "words-only"])
async def test_a_consultation_recommends_changes_the_plan_and_books_without_the_llm(tmp_path, capsys, meaning):
    """The same with or without the sentence vectors: under load they may not be ready for the
    first visitor, and "drop Nara" must still find the Nara tour in the plan."""
    async with StubOpenAIServer(reply="The Kyoto tour costs 10 yen.") as server:
        async with await _runtime(tmp_path, server, meaning) as rt:
            c = rt.controller
            await c.sessions.start("card-1")
            await c.handle_text("We are two adults and one child, our budget is 30,000 yen for one day in Kyoto.")
            asked = len(_replies(server))
            rec = await c.handle_text("What would you recommend for us?")
            first = c.consulting.consult.last.fits[0]
            assert first.offer.name in rec.reply_text and first.quote.total.said() in rec.reply_text
            await c.handle_text("Let's take the tea tour.")
            await c.handle_text("Add the Nara tour too.")
            assert c.memory.consultation["plan"] == ["Uji Tea Tasting Tour", "Nara Deer Park Half-Day Tour"]
            dropped = await c.handle_text("Drop Nara.")
            assert c.memory.consultation["plan"] == ["Uji Tea Tasting Tour"] and "20,400 yen" in dropped.reply_text
            instead = await c.handle_text("Make it the Gion walk instead.")
            assert c.memory.consultation["plan"] == ["Gion Evening Walk"] and "15,000 yen" in instead.reply_text
            await c.handle_text("Can you book it for us?")
            sheet = rt.recorder.of(HandoverEvent)[-1].sheet
            assert len(_replies(server)) == asked  # nothing of the consultation asked the LLM for a reply
            assert sheet["reason"] == "booking" and sheet["party"] == "2 adults, 1 child"
            assert [p["offer"] for p in sheet["plan"]] == ["Gion Evening Walk"] and sheet["total"] == "15,000 yen"
            assert "10 yen" not in " ".join(r.reply_text for r in [rec, dropped, instead])


async def test_the_plan_survives_a_returning_visitor_and_is_forgotten_with_them(tmp_path):
    async with StubOpenAIServer(reply="Hello again.") as server:
        async with await _runtime(tmp_path, server) as rt:
            c = rt.controller
            await c.sessions.start("card-2")
            await c.handle_text("We are two adults.")
            await c.handle_text("Let's take the Nara tour.")
            await c.sessions.end("command")
            await c.sessions.start("card-2")  # later, the same card
            recap = await c.handle_text("Can you remind me what we planned?")
            assert "Nara Deer Park Half-Day Tour" in recap.reply_text and "13,000 yen" in recap.reply_text
            await c.memory.forget_user("card-2")
            await c.sessions.start("card-2")
            assert c.memory.consultation["plan"] == []


async def test_a_changed_wish_after_a_recommendation_is_recommended_again(tmp_path):
    """"I could stretch to 5,000 yen" after nothing fitted 3,000: the robot recommends again for the
    new budget, without being asked twice; a question the files answer stays the knowledge's."""
    async with _talking(tmp_path, "card-3") as c:
        await c.handle_text("I'm on my own with half a day.")
        await c.handle_text("I have 3,000 yen at most. Is there any tour for that?")
        first = c.consulting.consult.last
        assert first is not None and not first.best  # nothing within 3,000 yen
        again = await c.handle_text("Okay. I could stretch to 5,000 yen.")
        second = c.consulting.consult.last
        assert second is not first and second.best
        assert second.best[0].offer.name in again.reply_text
        assert all(f.quote.total.amount <= 5000 for f in second.best)
        await c.handle_text("We are two adults now, by the way. What time does the Gion walk start?")
        assert c.consulting.consult.last is second  # answered from the files, not recommended again


async def test_an_offer_named_after_a_recommendation_is_a_choice_and_a_new_visitor_starts_afresh(tmp_path):
    """The visitor may take an offer the robot did not name first ("The Uji tea tour, please."); the
    next visitor's "that one" is never the last visitor's recommendation."""
    async with _talking(tmp_path, "card-4") as c:
        await c.handle_text("We are two adults with a whole day and 40,000 yen.")
        await c.handle_text("What would you recommend?")
        recommended = {f.offer.name for f in c.consulting.consult.last.best}
        other = next(o.name for o in c.consulting.consult.book.offers
                     if o.name not in recommended and o.name == "Uji Tea Tasting Tour")
        await c.handle_text("The Uji tea tour, please.")
        assert c.memory.consultation["plan"] == [other]
        await c.sessions.end("command")
        await c.sessions.start("card-5")
        await c.handle_text("That one, please.")
        assert c.memory.consultation["plan"] == []


async def test_a_wish_said_with_also_chooses_nothing(tmp_path):
    """"She's also vegetarian": "also" is a way to add, and "vegetarian" is near the cooking class in
    meaning, but nothing was recommended and no offer was named: the plan stays empty."""
    async with _talking(tmp_path, "card-6") as c:
        await c.handle_text("There's three of us, me, my husband and my mum. Mum's in a wheelchair.")
        await c.handle_text("She's also vegetarian. We have one day and about 25,000 yen for the three of us.")
        assert c.memory.consultation["plan"] == []
        await c.handle_text("What could work for her?")
        await c.handle_text("Let's do the Nara tour.")
        assert c.memory.consultation["plan"] == ["Nara Deer Park Half-Day Tour"]


async def test_without_a_party_no_total_is_said_and_the_robot_asks_who_is_coming(tmp_path):
    """Nobody said who is coming: a total would be one adult's (a teacher with a class would hear
    "6,800 yen" as the class's). Prices as the files give them, the persona's question, and a sheet
    with no total; once the party is told, the total is the party's."""
    async with StubOpenAIServer(reply="Fine.") as server:
        async with await _runtime(tmp_path, server) as rt:
            c = rt.controller
            await c.sessions.start("card-6")
            rec = await c.handle_text("What would you recommend for a day in Kyoto?")
            assert "How many of you are going" in rec.reply_text
            chosen = await c.handle_text("The Uji tea tour, please.")
            assert c.memory.consultation["plan"] == ["Uji Tea Tasting Tour"]
            assert "6,800 yen" in chosen.reply_text and "How many of you are going" in chosen.reply_text
            await c.handle_text("Can you book it for us?")
            sheet = rt.recorder.of(HandoverEvent)[-1].sheet
            assert sheet["party"] is None and sheet["total"] is None and sheet["plan"][0]["total"] is None
            await c.handle_text("Oh, we are three adults.")
            total = await c.handle_text("How much is that in all?")
            assert "20,400 yen" in total.reply_text and "How many" not in total.reply_text


async def test_an_offer_chosen_that_breaks_a_wish_is_added_with_what_it_breaks(tmp_path):
    """A visitor with a wheelchair who takes the Fushimi Inari walk (not step-free): the choice is
    theirs, but they hear that it does not fit, and the staff who book it read so on the sheet. An
    offer that fits is added with no such word."""
    async with StubOpenAIServer(reply="Fine.") as server:
        async with await _runtime(tmp_path, server) as rt:
            c = rt.controller
            await c.sessions.start("card-7")
            await c.handle_text("There are two of us, and my husband uses a wheelchair.")
            chosen = await c.handle_text("Let's take the Fushimi Inari walk.")
            assert c.memory.consultation["plan"] == ["Fushimi Inari Early Morning Walk"]
            assert "does not fit" in chosen.reply_text and "wheelchair" in chosen.reply_text.lower()
            fits = await c.handle_text("Add the Nara tour too.")  # step-free
            assert "does not fit" not in fits.reply_text
            await c.handle_text("Can you book it for us?")
            sheet = rt.recorder.of(HandoverEvent)[-1].sheet
            assert any("Fushimi Inari" in q and "does not fit" in q for q in sheet["open"])
            assert not any("Nara" in q for q in sheet["open"])


async def test_words_of_one_offers_name_said_apart_name_it_only_in_a_choice(tmp_path):
    """"The Kyoto and Nara package": Kyoto and Nara name several offers each, and no span of the
    package's name was said, but one offer's names hold all three words. Places said alone after
    a recommendation choose nothing."""
    async with _talking(tmp_path, "card-8") as c:
        await c.handle_text("We are two adults with a whole day.")
        await c.handle_text("What would you recommend?")
        await c.handle_text("We want to see Kyoto and Nara.")
        assert c.memory.consultation["plan"] == []
        await c.handle_text("Let's take the Kyoto and Nara package.")
        assert c.memory.consultation["plan"] == ["Kyoto and Nara Two-Day Package"]


async def test_the_nearest_offer_says_the_wish_it_breaks_when_it_keeps_the_one_named(tmp_path):
    """Nothing fits 10,000 yen and a wheelchair: the budget rules out the most, and the nearest, at
    9,000 yen, keeps it and has stairs. Said without that, the two lines contradict each other."""
    async with _talking(tmp_path, "card-9", understood=True) as c:
        await c.handle_text("There are two of us, and my husband uses a wheelchair.")
        rec = await c.handle_text("We have 10,000 yen in all. What would you recommend?")
        last = c.consulting.consult.last
        assert not last.fits and last.ruling_wish == "budget" and last.nearest.unmet == ("needs",)
        assert "10,000 yen" in rec.reply_text and "does not fit your needs (wheelchair)" in rec.reply_text


async def test_an_offer_picked_by_a_description_or_its_place_is_a_choice(tmp_path):
    """"The deer one.", "the one with the bamboo and the boat ride, that's us", "the second one you
    said": a visitor picks among what was shown without its name or a word that chooses. Asked
    about ("tell me more about the deer one") or judged ("the deer one is too long"), it is no choice."""
    async with _talking(tmp_path, "card-9", understood=True) as c:
        await c.handle_text("We are two adults with a whole day and 40,000 yen. We love animals.")
        await c.handle_text("What would you recommend?")
        recommended = [f.offer.name for f in c.consulting.consult.last.best]
        assert len(recommended) == 2
        await c.handle_text("Tell me more about the deer one")
        await c.handle_text("The deer one is too long for us.")
        assert c.memory.consultation["plan"] == []
        await c.handle_text("Hmm. The second one you said. Let's do that one.")
        assert c.memory.consultation["plan"] == [recommended[1]]
        await c.handle_text("And the one with the bamboo and the boat ride, that's us.")
        assert c.memory.consultation["plan"] == [recommended[1], "Arashiyama Bamboo and River Tour"]


async def test_a_choice_in_one_clause_of_a_longer_turn_is_found(tmp_path):
    """The other clause's words dilute the turn's meaning: each clause is searched when the whole finds
    no offer ("...that's most of it gone. Let me have the temple day instead.")."""
    async with _talking(tmp_path, "card-10", understood=True) as c:
        await c.handle_text("I'm on my own, with two days and 60,000 yen.")
        await c.handle_text("The two-day package, please.")
        assert c.memory.consultation["plan"] == ["Kyoto and Nara Two-Day Package"]
        await c.handle_text("Fifty-seven thousand with the single room, though... no, that's most of it gone. "
                            "Let me have the temple day instead.")
        assert c.memory.consultation["plan"] == ["Kyoto Temples Day Tour"]


async def test_an_open_question_after_the_wishes_is_a_request_for_a_suggestion(tmp_path):
    """At a counter, once the visitor has said what they want, "Anything quick?" asks for a suggestion
    though no request is said in words the lists or the examples hold; a question of another kind
    ("Where is the toilet?", an offer's price, a place the shop does not sell) is not one, and
    nothing is recommended for it."""
    async with _talking(tmp_path, "card-11", understood=True) as c:
        await c.handle_text("We are two adults with 10,000 yen.")
        await c.handle_text("Where is the toilet?")
        assert c.consulting.consult.last is None
        # an offer's price asked in words whose meaning is near a request: the entry answers, and
        # the quote says what it comes to for the party told
        price = await c.handle_text("How much is your day tour to the temples in Kyoto?")
        assert c.consulting.consult.last is None
        assert "9,800 yen per adult" in price.reply_text and "19,600 yen for the two of you" in price.reply_text
        reply = await c.handle_text("We've only got the morning. Anything quick?")
        rec = c.consulting.consult.last
        assert rec is not None and rec.best and rec.best[0].offer.name in reply.reply_text
        await c.sessions.start("card-12")  # a question about a place the shop does not sell: not a request
        await c.handle_text("We are two adults with 10,000 yen.")
        far = await c.handle_text("Do you have tours to Hiroshima?")
        assert c.consulting.consult.last is None and far.reply_text.startswith(TRAVEL.knowledge.no_answer)


async def test_a_recap_before_a_recommendation_is_said_back_and_offers_to_suggest(tmp_path):
    """"Can you remind me what we planned so far?" with wishes told and nothing recommended is
    near a request in meaning: it is said back, not taken for one, and ends on the persona's offer
    to suggest. A yes on the next turn asks for the recommendation; any other turn lets it lapse."""
    suggest = TRAVEL.knowledge.offers.lines.suggest.replace("{noun}", TRAVEL.knowledge.offers.noun)
    async with _talking(tmp_path, "card-13", understood=True) as c:
        await c.handle_text("We are two adults and we want to go to Nara in April.")
        recap = await c.handle_text("Can you remind me what we planned so far?")
        assert c.consulting.consult.last is None  # nothing recommended
        assert "2 adults" in recap.reply_text and recap.reply_text.endswith(suggest)
        rec = await c.handle_text("Yes, please.")
        last = c.consulting.consult.last
        assert last is not None and last.best and last.best[0].offer.name in rec.reply_text
        assert last.best[0].quote.total.said() in rec.reply_text
    async with _talking(tmp_path, "card-14", understood=True) as c:  # the offer lapses after another turn
        await c.handle_text("We are two adults and we want to go to Nara in April.")
        await c.handle_text("Can you remind me what we planned so far?")
        await c.handle_text("Where is the toilet?")
        await c.handle_text("Yes, please.")
        assert c.consulting.consult.last is None


async def test_a_second_recommendation_held_back_is_said_whole_on_a_yes(tmp_path):
    """The robot's own second offer, held back at the spoken-length budget and offered ("Shall I
    tell you more?"), is said whole when the visitor says yes: cut at its first clause, it lost its
    price. Nothing of the LLM follows a line the LLM had no part in."""
    async with StubOpenAIServer(reply="The Kyoto tour costs 10 yen.") as server:
        async with await _runtime(tmp_path, server) as rt:
            c = rt.controller
            await c.sessions.start("card-15")
            await c.handle_text("We are two adults with 100,000 yen and two days in Kyoto and Nara.")
            await c.handle_text("What would you recommend for us?")
            rec = c.consulting.consult.last
            assert len(rec.best) == 2, [f.offer.name for f in rec.best]
            asked = len(_replies(server))
            more = await c.handle_text("Tell me more.")
            second = rec.best[1]
            assert second.offer.name in more.reply_text and second.quote.total.said() in more.reply_text
            assert len(_replies(server)) == asked and "10 yen" not in more.reply_text
