"""Whatever the LLM does, the customer hears something soon and the robot listens on
(issue 14, items 1 and 2). A real HTTP server speaking the OpenAI protocol, the real
LLMClient and the real controller; only the speaker writes text instead of audio."""

from __future__ import annotations

import logging
import time

from config.schema import Persona
from memory.full_history import FullHistoryMemory
from robot.core.events import ErrorEvent, EventBus, RecordingPublisher, RobotState
from robot.dialogue.controller import DialogueController
from robot.llm.client import LLMClient
from robot.reply.timing import ReplyDeadlines
from robot.speaking.speaker import TextSpeaker
from tests.openai_stub_server import BAD_JSON, ERROR_500, SLOW, STALL, StubOpenAIServer

PERSONA = Persona(name="Sakura", role_prompt="You are a travel consultant.",
                  apology="Sorry, I lost my thought.", filler="Let me think.")
REPLY = "Nara is close to Kyoto."


class Robot:
    def __init__(self, server: StubOpenAIServer, deadlines: ReplyDeadlines = ReplyDeadlines(), **llm_options):
        self.spoken: list[str] = []
        self.recorder = RecordingPublisher()
        self.memory = FullHistoryMemory("You are a travel consultant.")
        options = {"first_token_timeout_s": 30, "timeout_s": 60, "retries": 2, "backoff_s": 0.5, **llm_options}
        llm = LLMClient(base_url=server.base_url, api_key=None, model="stub", **options)
        events = EventBus(self.recorder)
        self.controller = DialogueController(
            persona=PERSONA, memory=self.memory, llm=llm, reply_deadlines=deadlines,
            speaker=TextSpeaker("Sakura", events, write=self.spoken.append), events=events)

    def said(self) -> list[str]:
        return [line.removeprefix("Sakura: ") for line in self.spoken]


async def test_invalid_json_in_the_stream_ends_in_the_apology(caplog):
    caplog.set_level(logging.WARNING)
    async with StubOpenAIServer(reply=REPLY, script=[BAD_JSON]) as server:
        robot = Robot(server)
        first = await robot.controller.handle_text("Hello, I want to go to Kyoto.")
        second = await robot.controller.handle_text("How far is Nara?")
    assert robot.said() == [PERSONA.apology, REPLY]
    errors = robot.recorder.of(ErrorEvent)
    assert [e.source for e in errors] == ["llm"] and "JSONDecodeError" in errors[0].message
    failures = [r for r in caplog.records if "reply failed" in r.getMessage()]
    assert len(failures) == 1 and "JSONDecodeError" in failures[0].getMessage()
    assert failures[0].exc_info is None  # one line, no traceback
    assert first.errors and second.reply_text == REPLY
    assert robot.controller.state == RobotState.IDLE
    assert [t.text for t in robot.memory.turns] == [
        "Hello, I want to go to Kyoto.", PERSONA.apology, "How far is Nara?", REPLY]


async def test_a_server_that_never_answers_costs_a_filler_and_the_apology(caplog):
    caplog.set_level(logging.INFO)
    deadlines = ReplyDeadlines(filler_after_s=0.5, give_up_after_s=2.0)
    async with StubOpenAIServer(reply=REPLY, script=[STALL] * 3) as server:
        robot = Robot(server, deadlines)  # the client alone would wait 3 x 30 s
        started = time.monotonic()
        result = await robot.controller.handle_text("Hello?")
        took = time.monotonic() - started
    assert robot.said() == [PERSONA.filler, PERSONA.apology]
    assert took > 1.9  # the give-up deadline, not a retry's: the client alone would wait 3 x 30 s
    assert len(server.requests) == 1  # given up inside the first attempt: no retry after it
    assert result.errors and "TimeoutError" in result.errors[0]
    assert [e.source for e in robot.recorder.of(ErrorEvent)] == ["llm"]
    assert any("TimeoutError: no sentence from the LLM within 2s" in r.getMessage() for r in caplog.records)
    # the filler was said, but holds nothing to remember (and would make prompts depend on load)
    assert [t.text for t in robot.memory.turns] == ["Hello?", PERSONA.apology]


async def test_retries_happen_inside_the_deadlines_and_name_their_reason(caplog):
    caplog.set_level(logging.WARNING)
    deadlines = ReplyDeadlines(filler_after_s=0.3, give_up_after_s=5.0)
    async with StubOpenAIServer(reply=REPLY, script=[STALL, ERROR_500]) as server:
        robot = Robot(server, deadlines, first_token_timeout_s=0.5, backoff_s=0.05)
        await robot.controller.handle_text("Hello?")
    assert robot.said() == [PERSONA.filler, REPLY]
    retries = [r.getMessage() for r in caplog.records if "attempt" in r.getMessage()]
    assert "TimeoutError: no first token within 0.5s" in retries[0]
    assert "InternalServerError" in retries[1] and "boom" in retries[1]


async def test_a_slow_start_gets_the_filler_then_the_answer():
    deadlines = ReplyDeadlines(filler_after_s=0.3, give_up_after_s=5.0)
    async with StubOpenAIServer(reply=REPLY, script=[SLOW], slow_s=1.0) as server:
        robot = Robot(server, deadlines)
        result = await robot.controller.handle_text("Hello?")
    assert robot.said() == [PERSONA.filler, REPLY]
    assert not result.errors
    assert [t.text for t in robot.memory.turns] == ["Hello?", REPLY]  # what a fast server gives too


async def test_a_prompt_answer_gets_no_filler():
    deadlines = ReplyDeadlines(filler_after_s=1.5, give_up_after_s=5.0)
    async with StubOpenAIServer(reply=REPLY) as server:
        robot = Robot(server, deadlines)
        await robot.controller.handle_text("Hello?")
    assert robot.said() == [REPLY]


async def test_a_slow_start_after_an_opening_gets_no_filler():
    """A recap said by the robot itself (``opening``) covers the wait for the LLM: the filler
    would come after it ("Here is our plan so far: ... Let me think.")."""
    from robot.reply.stream import Reply, ReplyRules

    rules = ReplyRules(gestures={}, max_sentences=3, apology=PERSONA.apology, filler=PERSONA.filler)
    deadlines = ReplyDeadlines(filler_after_s=0.3, give_up_after_s=5.0)
    opening = "Here is our plan so far: name Ken; places Kyoto."
    async with StubOpenAIServer(reply=REPLY, script=[SLOW], slow_s=1.0) as server:
        llm = LLMClient(base_url=server.base_url, api_key=None, model="stub", first_token_timeout_s=30,
                        timeout_s=60, retries=0, backoff_s=0.1)
        reply = Reply(llm, [{"role": "user", "content": "Can you remind me?"}], rules, deadlines=deadlines,
                      opening=[opening])
        said = [sentence.text async for sentence in reply.sentences()]
    assert said == [opening, REPLY] and reply.filler is None
