"""A recap the customer asks for ("Can you remind me what we planned so far?"): the robot says
the visitor profile back itself, whole, in the persona's words, and the LLM goes on after it.
The embedded model, left to recap alone, named three of the sample scenario's facts in 3 of 16
runs (docs/memory.md). The reply LLM here is the fake that never stops talking (the budget's
behaviour: no real model talks on cue); the memory is the real one, on a real store."""

from __future__ import annotations

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from config.schema import Persona
from prompts import load_prompt
from robot.core.events import EventBus, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.speaking.speaker import TextSpeaker
from tests.memory.backends import pg_server, store_where  # noqa: F401 - fixtures: both backends
from tests.memory.conftest import say
from tests.test_reply_length import OFFER, EndlessLLM

TRAVEL = load_persona(DEFAULT_PERSONA)
SLOTS = {name: slot.model_dump() for name, slot in TRAVEL.memory.profile.items()}
UNASKED = {name: {**slot, "ask": None} for name, slot in SLOTS.items()}  # the robot asks for nothing
PLANNED = ("My name is Ken and we are two adults.", "Welcome, Ken.",
           "We would love Kyoto and Nara in April, with a budget of $2,000.", "Lovely.")


def travel_controller(memory, llm: EndlessLLM, **lines: str | None) -> DialogueController:
    """A controller with the sample persona's slots and the persona ``lines`` (noted, recap, ...),
    a 10 s budget and no filler, speaking as text."""
    persona = Persona(name="Sakura", role_prompt="You are a travel consultant.", rate=150, max_reply_s=10.0,
                      filler=None, more_offer=OFFER, memory={"profile": SLOTS}, **lines)
    events = EventBus(RecordingPublisher())
    return DialogueController(persona=persona, memory=memory, llm=llm, events=events,
                              speaker=TextSpeaker("Sakura", events, write=lambda _: None))


async def test_a_recap_request_gets_the_profile_in_words_and_nothing_else_does(make_memory, store_where):
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    assert memory.recap("Can you remind me what we planned so far?") == ""  # nothing known yet
    await say(memory, *PLANNED)
    spoken = "name Ken; travellers 2 adults; when April; budget $2,000; places Kyoto and Nara"
    assert memory.recap("Can you remind me what we planned so far?") == spoken
    assert memory.recap("So what is the plan?") == spoken
    for other in ("Could you say that again?", "What was my name?", "How far is Nara?"):
        assert memory.recap(other) == "", other


async def test_the_robot_says_the_recap_whole_then_the_llm_goes_on(make_memory, store_where):
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    await say(memory, *PLANNED)
    persona = Persona(name="Sakura", role_prompt="You are a travel consultant.", rate=150, max_reply_s=10.0,
                      filler=None, more_offer=OFFER, recap=TRAVEL.recap)
    llm = EndlessLLM()
    events = EventBus(RecordingPublisher())
    controller = DialogueController(persona=persona, memory=memory, llm=llm, events=events,
                                    speaker=TextSpeaker("Sakura", events, write=lambda _: None))
    result = await controller.handle_text("Can you remind me what we planned so far?")
    recap = ("Here is our plan so far: name Ken; travellers 2 adults; when April; budget $2,000; "
             "places Kyoto and Nara.")
    # Whole, though longer than the 10 s budget leaves after the offer; the LLM's words held for it.
    assert result.reply_text == f"{recap} {OFFER}"
    request = llm.requests[0]
    assert request[-2] == {"role": "assistant", "content": recap}
    assert request[-1]["content"] == load_prompt("more_continue").strip()
    turns = [t.text for t in memory.history]
    assert turns[-1] == result.reply_text  # remembered as said
    # A yes goes on with what the LLM had begun after the recap.
    more = await controller.handle_text("Yes, please.")
    assert more.reply_text.startswith("Part 1 line 1 is here.")


def test_a_recap_must_say_where_the_profile_goes():
    with pytest.raises(ValueError, match="must contain {profile}"):
        Persona(name="S", role_prompt="r", recap="Here is our plan so far.")


async def test_a_statement_that_gives_the_profile_something_new_is_said_back(make_memory, store_where):
    """ "Noted: ...": what the memory understood of a statement, said by the robot before the
    LLM goes on; a correction is said back too, a name is not, and a question is no statement."""
    memory = await make_memory(user="ken", profile=UNASKED, vocabulary=TRAVEL.vocabulary)
    persona = Persona(name="Sakura", role_prompt="You are a travel consultant.", rate=150, max_reply_s=10.0,
                      filler=None, more_offer=OFFER, noted=TRAVEL.noted)
    llm = EndlessLLM()
    events = EventBus(RecordingPublisher())
    controller = DialogueController(persona=persona, memory=memory, llm=llm, events=events,
                                    speaker=TextSpeaker("Sakura", events, write=lambda _: None))
    first = await controller.handle_text("My name is Ken.")
    assert first.reply_text.startswith("Part 1 line 1")  # a name alone: nothing said back
    second = await controller.handle_text("We are two adults and want to go in April.")
    noted = "Noted: travellers 2 adults; when April."
    assert second.reply_text.startswith(noted) and llm.requests[-1][-2] == {"role": "assistant", "content": noted}
    third = await controller.handle_text("Actually not April, May, and our budget is two grand.")
    assert third.reply_text.startswith("Noted: when May; budget $2,000.")
    again = await controller.handle_text("We are two adults.")  # nothing new
    assert not again.reply_text.startswith("Noted")
    assert memory.news("Is there a tour in May for two adults?").noted == ""  # said before: nothing new


def test_a_persona_without_noted_says_nothing_back():
    assert Persona(name="S", role_prompt="r").noted is None
    with pytest.raises(ValueError, match="must contain {profile}"):
        Persona(name="S", role_prompt="r", noted="Noted.")
    # a slot's question is asked after the noted line: without one it would never be
    with pytest.raises(ValueError, match="memory.profile.party.ask is asked after the persona's noted line"):
        Persona(name="S", role_prompt="r", memory={"profile": {"party": {"type": "party", "ask": "How many?"}}})


async def test_after_the_noted_line_the_robot_asks_for_what_it_still_needs_once(make_memory, store_where):
    """The persona's question for the first empty slot (its ``ask``) follows the noted line, and
    the LLM is not asked; a slot the same words filled is not asked for, none twice a visit, and
    never after a question of the customer's (the LLM answers that)."""
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    llm = EndlessLLM()
    controller = travel_controller(memory, llm, noted=TRAVEL.noted)
    asks = {name: slot.ask for name, slot in TRAVEL.memory.profile.items()}
    first = await controller.handle_text("My wife and I would like to go in April.")
    # travellers and dates filled by these words: the budget is the first empty slot with a question
    assert first.reply_text == f"Noted: travellers 2 adults; when April. {asks['budget']}"
    assert llm.requests == []
    second = await controller.handle_text("We would love to see Kyoto.")
    # the budget, still empty, was asked already: the next empty slot with a question
    assert second.reply_text == f"Noted: places Kyoto. {asks['needs']}"
    assert llm.requests == []
    # every question asked once: the LLM goes on after the noted line again
    third = await controller.handle_text("Our budget is two grand.")
    assert third.reply_text.startswith("Noted: budget $2,000.") and len(llm.requests) == 1
    assert not any(a in third.reply_text for a in asks.values() if a)
    # a question of the customer's is answered, not met with one of the robot's
    other = await make_memory(user="mia", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    controller2 = travel_controller(other, llm, noted=TRAVEL.noted)
    asked = await controller2.handle_text("Can we see Nara in May?")
    assert asked.reply_text.startswith("Noted: when May; places Nara.") and len(llm.requests) == 2
    assert asks["party"] not in asked.reply_text
    three = other.news("We are three.")
    assert three.question == asks["budget"]  # the party question was left for later
    other.asked(three.question_slot)
    assert other.news("Lovely.").question == asks["party"]


async def test_a_question_cut_before_it_was_said_is_asked_again(make_memory, store_where):
    """A question counts as asked once it was said: a visitor who stops the robot during the
    noted line (a barge-in, the body's "stop") is asked it at the next noted line."""
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    controller = travel_controller(memory, EndlessLLM(), noted=TRAVEL.noted)
    budget = TRAVEL.memory.profile["budget"].ask
    write = controller.speaker._write
    controller.speaker._write = lambda line: (write(line), controller.speaker.cancel())  # stopped after the first
    cut = await controller.handle_text("My wife and I would like to go in April.")
    assert cut.interrupted and budget not in cut.reply_text
    controller.speaker._write = write
    again = await controller.handle_text("We would love to see Kyoto.")
    assert again.reply_text == f"Noted: places Kyoto. {budget}"
    said = await controller.handle_text("Nara too.")
    assert budget not in said.reply_text  # said whole once: not again


async def test_a_name_the_visitor_gives_is_welcomed_before_the_noted_line(make_memory, store_where):
    """The persona's ``welcome_name`` says the name back once it is given (the noted line never
    does), then the noted line and the robot's question; a name alone is welcomed and asked on."""
    memory = await make_memory(user="ken", profile=SLOTS, vocabulary=TRAVEL.vocabulary)
    llm = EndlessLLM()
    controller = travel_controller(memory, llm, noted=TRAVEL.noted, welcome_name="Nice to meet you, {name}.")
    asks = {name: slot.ask for name, slot in TRAVEL.memory.profile.items()}
    first = await controller.handle_text("Hello, my name is Ken and we are two adults.")
    assert first.reply_text == f"Nice to meet you, Ken. Noted: travellers 2 adults. {asks['dates']}"
    assert memory.news("I'm Ken.").name == ""  # the same name: nothing new to welcome
    again = await controller.handle_text("Sorry, my name is Kenji.")
    assert again.reply_text == f"Nice to meet you, Kenji. {asks['budget']}" and llm.requests == []
    assert memory.profile["name"] == ["Kenji"]


def test_a_welcome_needs_the_name_and_a_name_slot():
    with pytest.raises(ValueError, match="must contain {name}"):
        Persona(name="S", role_prompt="r", welcome_name="Nice to meet you.", memory={"profile": SLOTS})
    with pytest.raises(ValueError, match="no slot of type name"):
        Persona(name="S", role_prompt="r", welcome_name="Hi {name}.", noted="Noted: {profile}.",
                memory={"profile": {"party": {"type": "party"}}})
