"""Stopping `robot run`: the first Ctrl-C stops the robot after the visit's forced summary and
says so; a second one stops waiting for that summary (its turns stay, memory/visitors.py)."""

from __future__ import annotations

import asyncio

import pytest

from robot.app.cli_commands import _stopping, _terminated


class Memory:
    hurried = 0

    def hurry(self) -> None:
        self.hurried += 1


def test_the_second_ctrl_c_stops_waiting_for_the_summary(capsys):
    stop, memory = asyncio.Event(), Memory()
    _stopping(stop, memory, 60.0)
    assert stop.is_set() and memory.hurried == 0
    said = capsys.readouterr().err
    assert "Ctrl-C again" in said and "up to 60 s" in said  # session.exit_wait_s
    _stopping(stop, memory, 60.0)
    assert memory.hurried == 1
    assert capsys.readouterr().err == ""  # said once


def test_sigterm_stops_at_once_without_waiting_for_the_summary(capsys):
    stop, memory = asyncio.Event(), Memory()
    _terminated(stop, memory)
    assert stop.is_set() and memory.hurried == 1  # a service manager's stop waits for no LLM
    assert "every turn is kept" in capsys.readouterr().err


# --- a turn in flight when the robot stops (robot.app.cli_commands.run -> controller.finish) ---

from config.schema import Persona
from memory.full_history import FullHistoryMemory
from robot.core.events import EventBus, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.dialogue.yielding import YieldWindow
from robot.llm.client import LLMClient
from robot.speaking.speaker import TextSpeaker
from speech.types import Transcript, Utterance
from tests.openai_stub_server import STALL, StubOpenAIServer

WORDS = "We are two adults and we would like to see Kyoto in April."


class SlowPromptMemory(FullHistoryMemory):
    """A memory whose prompt never comes (a store that hangs on a read): the turn is stopped
    before its customer's words are being stored."""

    async def build_messages(self, *args, **kwargs):
        await asyncio.Event().wait()


def _robot(server: StubOpenAIServer, memory: FullHistoryMemory) -> DialogueController:
    llm = LLMClient(base_url=server.base_url, api_key=None, model="stub",
                    first_token_timeout_s=60, timeout_s=60, retries=0, backoff_s=0.01)
    persona = Persona(name="Sakura", role_prompt="You are a travel consultant.", apology="Sorry.")
    events = EventBus(RecordingPublisher())
    return DialogueController(persona=persona, memory=memory, llm=llm, events=events,
                              speaker=TextSpeaker("Sakura", events, write=lambda _: None))


def _heard_turn(controller: DialogueController) -> None:
    """A turn as the listen loop starts one: an utterance, its words, its yield window open."""
    utterance = Utterance(audio=b"\0\0" * 16000, t_start=0.0, t_end=1.0, ended_at=0.0)
    window = YieldWindow(closes_at=1e9, utterance=utterance)  # the customer may still go on
    controller.start_turn(utterance, Transcript(WORDS, audio_s=1.0, stt_s=0.1), window=window)


@pytest.mark.parametrize("memory", [FullHistoryMemory, SlowPromptMemory])
async def test_a_turn_in_flight_at_the_stop_is_cut_and_its_words_are_kept(memory):
    """Stopped while the LLM never answers (or the prompt never comes), the turn ends within the
    stop's bound, and what the customer said is in the memory before it closes. The run command
    used to cancel the listener and close the store under the turn: its words were lost."""
    async with StubOpenAIServer(reply="never", script=[STALL] * 10) as server:
        kept = memory("You are a travel consultant.")
        controller = _robot(server, kept)
        _heard_turn(controller)
        await asyncio.sleep(0.3)  # thinking: the request is out, the window still open
        assert controller.busy
        await controller.finish(0.2)
        assert not controller.busy
    assert [(t.role, t.text) for t in kept.turns] == [("user", WORDS)]


async def test_a_turn_that_ends_within_the_bound_is_not_cut():
    async with StubOpenAIServer(reply="Kyoto in April is lovely.") as server:
        kept = FullHistoryMemory("You are a travel consultant.")
        controller = _robot(server, kept)
        _heard_turn(controller)
        await controller.finish(30)
    assert [t.text for t in kept.turns] == [WORDS, "Kyoto in April is lovely."]


async def test_a_cancelled_wait_for_the_turn_leaves_it_running():
    """``listen`` ends in ``wait_turn``; the run command cancels the listener at a stop, and that
    must not cancel the turn (a gather did)."""
    async with StubOpenAIServer(reply="Kyoto in April is lovely.") as server:
        kept = FullHistoryMemory("You are a travel consultant.")
        controller = _robot(server, kept)
        _heard_turn(controller)
        waiting = asyncio.create_task(controller.wait_turn())
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert controller.busy
        await controller.finish(30)
    assert [t.text for t in kept.turns] == [WORDS, "Kyoto in April is lovely."]
