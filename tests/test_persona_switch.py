"""A persona switch is validated whole and applies all or nothing (issue 14, item 5):
real persona files, the real controller and RobotCommands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, ConfigError, load_persona
from config.schema import SttSettings, TtsSettings
from memory.full_history import FullHistoryMemory
from robot.control.actions import RobotCommands, persona_prompt
from robot.core.events import EventBus, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.speaking.speaker import TextSpeaker
from speech.stt import Transcriber


class VoiceSpeaker(TextSpeaker):
    """A text speaker that remembers the voice it was given (a text speaker has none)."""

    voice: str | None = "en-us"

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        super().set_voice(voice, rate)
        self.voice = voice


class BrokenMemory(FullHistoryMemory):
    """The memory store failing as the prompt is written (a full disk, a locked file)."""

    async def set_persona_prompt(self, prompt: str) -> None:
        raise OSError("disk I/O error")


def robot(memory_type: type[FullHistoryMemory] = FullHistoryMemory, transcriber: Transcriber | None = None,
          tts: TtsSettings = TtsSettings()) -> tuple[RobotCommands, DialogueController]:
    persona = load_persona(DEFAULT_PERSONA)
    memory = memory_type(persona_prompt(persona))
    controller = DialogueController(persona=persona, memory=memory, llm=None,  # type: ignore[arg-type]
                                    speaker=VoiceSpeaker("x", EventBus(RecordingPublisher()), write=lambda _: None),
                                    events=EventBus(RecordingPublisher()), transcriber=transcriber)
    return RobotCommands(controller, DEFAULT_PERSONA, tts=tts), controller


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = DEFAULT_PERSONA.read_text()
    assert old in text
    path = tmp_path / "other.yaml"
    if not (tmp_path / "knowledge").exists():  # its knowledge files, relative to the persona
        shutil.copytree(DEFAULT_PERSONA.parent / "knowledge", tmp_path / "knowledge")
    path.write_text(text.replace(old, new).replace("max_sentences: 3", "max_sentences: 9")
                    .replace("name: Sakura", "name: Kenji"))
    return path


async def unchanged(commands: RobotCommands, controller: DialogueController, prompt: str) -> None:
    assert controller.persona.name == "Sakura" and controller.persona.max_sentences == 3
    assert controller.speaker.voice == "en-us"  # type: ignore[attr-defined]
    assert commands.persona_path == DEFAULT_PERSONA
    assert (await controller.memory.build_messages("hi"))[0]["content"] == prompt


@pytest.mark.parametrize("old, new, error, match", [
    pytest.param("voice: en-us", "voice: british", ConfigError, "no voice 'british'", id="unknown voice"),
    pytest.param("update_after_turns: 12", "update_after_turns: 3", ValueError, "memory settings differ",
                 id="different memory settings"),
])
async def test_a_refused_switch_changes_nothing(tmp_path, old, new, error, match):
    commands, controller = robot()
    before = (await controller.memory.build_messages("hi"))[0]["content"]
    with pytest.raises(error, match=match):
        await commands.switch_persona(variant(tmp_path, old, new))
    await unchanged(commands, controller, before)


async def test_a_failing_memory_undoes_the_voice(tmp_path):
    commands, controller = robot(BrokenMemory)
    before = (await controller.memory.build_messages("hi"))[0]["content"]
    with pytest.raises(OSError):
        await commands.switch_persona(variant(tmp_path, "voice: en-us", "voice: en-gb"))
    await unchanged(commands, controller, before)


async def test_a_valid_switch_applies_everything(tmp_path):
    commands, controller = robot()
    path = variant(tmp_path, "voice: en-us", "voice: en-gb")
    await commands.switch_persona(path)
    assert controller.persona.name == "Kenji" and controller.persona.max_sentences == 9
    assert controller.speaker.voice == "en-gb"  # type: ignore[attr-defined]
    assert commands.persona_path == path
    assert (await controller.memory.build_messages("hi"))[0]["content"] == persona_prompt(controller.persona)


def multilingual_transcriber(tmp_path: Path) -> Transcriber:
    """A Transcriber whose model directory is not an English-only one (never loaded here)."""
    model = tmp_path / "whisper-base"
    model.mkdir()
    (model / "model.bin").write_bytes(b"")
    return Transcriber(SttSettings(model=str(model), language="en"))


async def test_a_switch_to_another_language_makes_the_robot_listen_for_it(tmp_path):
    transcriber = multilingual_transcriber(tmp_path)
    commands, controller = robot(transcriber=transcriber)
    await commands.switch_persona(variant(tmp_path, "language: en\nvoice: en-us", "language: de-DE\nvoice: de"))
    assert transcriber.settings.language == "de"  # Whisper hears German from the next utterance
    assert controller.speaker.voice == "de"  # type: ignore[attr-defined]
    await commands.switch_persona(DEFAULT_PERSONA)
    assert transcriber.settings.language == "en"


async def test_an_english_only_model_refuses_another_language_and_changes_nothing(tmp_path):
    transcriber = Transcriber()  # embedded:tiny.en
    commands, controller = robot(transcriber=transcriber)
    before = (await controller.memory.build_messages("hi"))[0]["content"]
    with pytest.raises(ValueError, match="English only"):
        await commands.switch_persona(variant(tmp_path, "language: en\nvoice: en-us", "language: de\nvoice: de"))
    await unchanged(commands, controller, before)
    assert transcriber.settings.language == "en"


async def test_a_failed_switch_puts_the_language_back(tmp_path):
    transcriber = multilingual_transcriber(tmp_path)
    commands, controller = robot(BrokenMemory, transcriber=transcriber)
    with pytest.raises(OSError):
        await commands.switch_persona(variant(tmp_path, "language: en\nvoice: en-us", "language: de\nvoice: de"))
    assert transcriber.settings.language == "en" and controller.speaker.voice == "en-us"  # type: ignore[attr-defined]


async def test_a_persona_without_a_voice_speaks_with_the_settings_voice(tmp_path):
    commands, controller = robot(tts=TtsSettings(voice="en-gb", rate=130))
    await commands.switch_persona(variant(tmp_path, "voice: en-us\n", ""))
    assert controller.speaker.voice == "en-gb"  # type: ignore[attr-defined]  # not espeak-ng's default


def test_the_answer_length_asked_for_is_in_words_at_the_rate_the_robot_speaks():
    persona = load_persona(DEFAULT_PERSONA).model_copy(update={"rate": None, "max_reply_s": 8})
    assert "at most 16 words" in persona_prompt(persona, TtsSettings(rate=120))  # 8 s at 120 words a minute
    assert "at most 20 words" in persona_prompt(persona)  # the default 150
    assert "at most 24 words" in persona_prompt(persona.model_copy(update={"rate": 180}), TtsSettings(rate=120))
