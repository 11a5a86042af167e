"""The dialogue controller with a real HTTP LLM server (stub protocol), typed turns."""


import pytest

from config.schema import GestureRule, Persona
from memory.full_history import FullHistoryMemory
from robot.core.events import (ErrorEvent, EventBus, GestureEvent, RecordingPublisher, RobotState, SpeechEvent,
                               StateEvent)
from robot.dialogue.controller import DialogueController
from robot.llm.client import LLMClient
from robot.speaking.speaker import TextSpeaker
from tests.openai_stub_server import ERROR_500, STALL, StubOpenAIServer

PERSONA = Persona(
    name="Sakura",
    role_prompt="You are a travel consultant.",
    apology="Sorry, I lost my thought.",
    gestures={"bow": "a bow", "show_map": "show a map", "tilt_head": "tilt the head"},
    state_gestures={"thinking": "tilt_head"},
)


class Robot:
    def __init__(self, server: StubOpenAIServer):
        self.spoken: list[str] = []
        self.recorder = RecordingPublisher()
        self.memory = FullHistoryMemory("You are a travel consultant.")
        llm = LLMClient(base_url=server.base_url, api_key=None, model="stub",
                        first_token_timeout_s=0.5, timeout_s=2, retries=1, backoff_s=0.01)
        events = EventBus(self.recorder)
        self.controller = DialogueController(
            persona=PERSONA, memory=self.memory, llm=llm,
            speaker=TextSpeaker("Sakura", events, write=self.spoken.append), events=events)


@pytest.mark.parametrize("failure", [ERROR_500, STALL])
async def test_llm_failure_apologizes_and_the_next_turn_works(failure):
    async with StubOpenAIServer(reply="Nara is close to Kyoto.", script=[failure, failure]) as server:
        robot = Robot(server)
        first = await robot.controller.handle_text("Hello, I want to go to Kyoto.")
        second = await robot.controller.handle_text("How far is Nara?")
    assert first.reply_text == PERSONA.apology
    assert first.errors and first.errors[0].startswith("llm:")
    assert [e.source for e in robot.recorder.of(ErrorEvent)] == ["llm"]
    assert second.reply_text == "Nara is close to Kyoto."
    assert robot.controller.state == RobotState.IDLE
    # no turn of history was dropped: the failed turn's words and the apology are kept
    assert [t.text for t in robot.memory.turns] == [
        "Hello, I want to go to Kyoto.", PERSONA.apology, "How far is Nara?", "Nara is close to Kyoto."]


async def test_gestures_are_published_as_their_sentence_starts():
    reply = "[gesture:bow] Welcome! Kyoto is [gesture:backflip] lovely. [gesture:show_map] Here is Nara."
    async with StubOpenAIServer(reply=reply) as server:
        robot = Robot(server)
        result = await robot.controller.handle_text("Hi")
    assert robot.spoken == ["Sakura: Welcome!", "Sakura: Kyoto is lovely.", "Sakura: Here is Nara."]
    assert result.reply_text == "Welcome! Kyoto is lovely. Here is Nara."
    assert result.gestures == ["bow", "show_map"]  # backflip is not in the vocabulary
    sequence = [(type(e).__name__, getattr(e, "index", getattr(e, "sentence_index", None)))
                for e in robot.recorder.events if isinstance(e, (SpeechEvent, GestureEvent)) and
                getattr(e, "reason", "reply") == "reply"]
    assert sequence == [("SpeechEvent", 0), ("GestureEvent", 0), ("SpeechEvent", 1),
                        ("SpeechEvent", 2), ("GestureEvent", 2)]
    assert all(e.turn_id == result.turn_id for e in robot.recorder.of(SpeechEvent))
    assert robot.memory.turns[-1].text == "Welcome! Kyoto is lovely. Here is Nara."


async def test_states_and_state_gestures():
    async with StubOpenAIServer(reply="Sure.") as server:
        robot = Robot(server)
        await robot.controller.handle_text("Hi")
    states = [e.state for e in robot.recorder.of(StateEvent)]
    assert states == [RobotState.THINKING, RobotState.SPEAKING, RobotState.IDLE]
    state_gestures = [e.name for e in robot.recorder.of(GestureEvent) if e.reason == "state"]
    assert state_gestures == ["tilt_head"]


async def test_stop_cuts_the_rest_of_the_reply():
    async with StubOpenAIServer(reply="One. Two. Three. Four.") as server:
        robot = Robot(server)

        def write_then_stop(line):
            robot.spoken.append(line)
            robot.controller.speaker.cancel()  # the body says "stop" while sentence one plays

        robot.controller.speaker._write = write_then_stop
        result = await robot.controller.handle_text("Count")
    assert result.reply_text == "One."
    assert result.interrupted
    assert robot.spoken == ["Sakura: One."]
    assert robot.memory.turns[-1].text == "One."  # only what was said is remembered


async def test_say_speaks_and_is_remembered():
    async with StubOpenAIServer() as server:
        robot = Robot(server)
        spoken = await robot.controller.say("[gesture:bow] Welcome to our agency.")
    assert spoken == "Welcome to our agency."
    assert robot.memory.turns[-1].role == "assistant"
    assert [e.name for e in robot.recorder.of(GestureEvent)] == ["bow"]


async def test_a_broken_memory_store_fails_one_turn_not_the_robot():
    async with StubOpenAIServer(reply="Fine.") as server:
        robot = Robot(server)
        real_record = robot.memory.record
        calls = 0

        async def flaky_record(turn):
            nonlocal calls
            calls += 1
            if calls == 1:
                raise OSError("disk full")  # the store fails once, as a real disk might
            await real_record(turn)

        robot.memory.record = flaky_record
        first = await robot.controller.handle_text("Hello")
        second = await robot.controller.handle_text("Hello again")
    assert first.errors and "disk full" in first.errors[0]
    assert [e.source for e in robot.recorder.of(ErrorEvent)] == ["robot"]
    assert second.reply_text == "Fine."
    assert robot.controller.state == RobotState.IDLE


async def test_a_looping_model_is_cut_to_max_sentences_without_repeats():
    loop = "I can help. I can help. Kyoto is nice. I can help. Nara is nice. Osaka is nice. Kobe too."
    async with StubOpenAIServer(reply=loop) as server:
        robot = Robot(server)
        robot.controller.persona = PERSONA.model_copy(update={"max_sentences": 3})
        result = await robot.controller.handle_text("Hi")
    # the fourth sentence is held back and offered (persona more_offer), not said
    assert result.reply_text == f"I can help. Kyoto is nice. Nara is nice. {PERSONA.more_offer}"
    assert len(server.requests) == 1


GESTURING = Persona(
    name="Sakura",
    role_prompt="You are a travel consultant.",
    greeting="Hello and welcome!",
    gestures={"bow": "a bow", "nod": "a nod", "point_right": "point to the map"},
    vocabulary=["Kyoto", "Nara"],
    gesture_rules=[GestureRule(gesture="bow", words=["hello", "thank*"]),
                   GestureRule(gesture="point_right", when="vocabulary"),
                   GestureRule(gesture="nod", words=["sure"])],
)


async def test_planned_gestures_go_with_untagged_sentences_and_tags_win():
    reply = "Sure. You will love Kyoto. [gesture:bow] Thank you for asking about Nara."
    async with StubOpenAIServer(reply=reply) as server:
        robot = Robot(server)
        robot.controller.persona = GESTURING
        result = await robot.controller.handle_text("Can we go to Kyoto?")
    assert result.reply_text == "Sure. You will love Kyoto. Thank you for asking about Nara."
    assert result.gestures == ["nod", "point_right", "bow"]  # the turn log's list
    reply_gestures = [(e.name, e.sentence_index, e.planned, e.word_index)
                      for e in robot.recorder.of(GestureEvent) if e.reason == "reply"]
    # the tagged sentence gets no planned point at "Nara": the LLM's bow is all it has
    assert reply_gestures == [("nod", 0, True, 0), ("point_right", 1, True, 3), ("bow", 2, False, None)]
    assert all(e.turn_id == result.turn_id for e in robot.recorder.of(GestureEvent) if e.reason == "reply")


async def test_the_greeting_gets_its_planned_bow_and_no_rules_plan_nothing():
    async with StubOpenAIServer(reply="Sure, Kyoto.") as server:
        robot = Robot(server)
        robot.controller.persona = GESTURING
        await robot.controller.greet()
        assert [(e.name, e.planned) for e in robot.recorder.of(GestureEvent)] == [("bow", True)]
        robot.controller.persona = PERSONA  # a persona switch: its planner has no rules
        result = await robot.controller.handle_text("Hi")
    assert result.gestures == []
