"""The real controller speaking through real espeak-ng into a real-time sink, with its
events and commands going over a real mosquitto: what a robot body sees and can do."""

from __future__ import annotations

import json

from config.loader import DEFAULT_PERSONA, load_persona
from memory.full_history import FullHistoryMemory
from robot.control.actions import RobotCommands, persona_prompt
from robot.core.events import EventBus, RecordingPublisher, SpeechEvent
from robot.dialogue.controller import DialogueController
from robot.llm.client import LLMClient
from robot.mqtt import MqttHooks
from robot.speaking.speaker import AudioSpeaker
from speech.audio import NullSink
from speech.tts import Synthesizer
from tests.openai_stub_server import StubOpenAIServer

REPLY = "[gesture:bow] Welcome to our agency! Kyoto is lovely in April. [gesture:show_map] Here is Nara on the map."


async def make_robot(settings, server: StubOpenAIServer):
    persona = load_persona(DEFAULT_PERSONA)
    sink = NullSink(realtime=True)  # plays for as long as the audio lasts, like a speaker
    recorder = RecordingPublisher()
    events = EventBus(recorder)
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, persona.voice, persona.rate or 150, events)
    memory = FullHistoryMemory(persona_prompt(persona))
    llm = LLMClient(base_url=server.base_url, api_key=None, model="stub", retries=0)
    robot = DialogueController(persona=persona, memory=memory, llm=llm, speaker=speaker, events=events)
    hooks = MqttHooks(settings, RobotCommands(robot, DEFAULT_PERSONA))
    events.add(hooks)
    await hooks.start()
    assert await hooks.wait_connected(5)
    return robot, hooks, sink, memory, recorder


def spoken(recorder: RecordingPublisher) -> list[str]:
    """The sentences the speaker played, as its speech events announced them."""
    return [e.text for e in recorder.of(SpeechEvent)]


async def test_a_turn_reaches_the_body_in_order_with_gestures_in_time(mosquitto, listener):
    async with StubOpenAIServer(reply=REPLY) as server:
        robot, hooks, sink, _, recorder = await make_robot(mosquitto.settings(), server)
        result = await robot.handle_text("Hello, I want to see Kyoto and Nara.")
        assert await listener.wait_for(lambda: any(m.data.get("kind") == "turn" for m in listener.messages))
        await hooks.aclose()
    flow = [(m.kind, m.data.get("state") or m.data.get("name") or m.data.get("index"))
            for m in listener.messages if m.kind in ("state", "transcript", "speech", "gesture")]
    assert flow == [
        ("state", "thinking"), ("gesture", "tilt_head"), ("transcript", None), ("state", "speaking"),
        ("speech", 0), ("gesture", "bow"), ("speech", 1), ("gesture", "point_right"),
        ("speech", 2), ("gesture", "show_map"), ("state", "idle"),
    ], [m.data for m in listener.of("error")]  # a sentence missing: say why
    # sentence 1 has no tag: the persona's gesture rules point at the place it names;
    # the tagged ones keep their tags alone ("Nara" in sentence 2 gets no planned point)
    planned = [(m.data["name"], m.data["sentence_index"], m.data["word_index"])
               for m in listener.of("gesture") if m.data.get("planned")]
    assert planned == [("point_right", 1, 0)]
    speech = {m.data["index"]: m for m in listener.of("speech")}
    for gesture in (m for m in listener.of("gesture") if m.data["reason"] == "reply"):
        sentence = speech[gesture.data["sentence_index"]]
        assert gesture.data["turn_id"] == result.turn_id
        # after its sentence was announced, before that sentence's audio is over
        assert sentence.at <= gesture.at < sentence.data["ts"] + sentence.data["duration_s"]
    assert spoken(recorder) == ["Welcome to our agency!", "Kyoto is lovely in April.", "Here is Nara on the map."]
    assert len(sink.streams) == 1 and sink.streams[0].written_s > 2  # one output stream for the reply


async def test_commands_drive_the_real_robot(mosquitto, listener, tmp_path):
    async with StubOpenAIServer(reply="Sure.") as server:
        robot, hooks, sink, memory, recorder = await make_robot(mosquitto.settings(), server)
        await robot.handle_text("My name is Ken.")
        command = listener.topics.command

        async def send(payload: dict | str) -> None:
            await listener.publish(command, payload if isinstance(payload, str) else json.dumps(payload))

        await send({"command": "mute", "id": "m"})
        assert await listener.wait_for(lambda: any(m.data.get("id") == "m" for m in listener.of("ack")))
        assert robot.muted

        await send({"command": "say", "text": "Please wait a moment.", "id": "s"})
        assert await listener.wait_for(lambda: any(m.data.get("id") == "s" for m in listener.of("ack")), 15)
        assert spoken(recorder)[-1] == "Please wait a moment."

        await send({"command": "persona", "path": "travel_agent", "id": "p"})
        assert await listener.wait_for(lambda: any(m.data.get("id") == "p" for m in listener.of("ack")))
        assert [t.text for t in memory.turns][:1] == ["My name is Ken."]  # memory kept

        before = (robot.muted, robot.persona, len(spoken(recorder)))
        await send("{not json")
        await send({"command": "dance"})
        await send({"command": "say"})
        assert await listener.wait_for(lambda: len([m for m in listener.of("error")
                                                    if m.data.get("source") == "command"]) == 3)
        assert (robot.muted, robot.persona, len(spoken(recorder))) == before

        await send({"command": "unmute"})
        assert await listener.wait_for(lambda: not robot.muted)
        await hooks.aclose()
