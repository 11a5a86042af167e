"""Put the robot together from its settings: the one place where components are chosen.

``robot run``, ``robot chat``, ``robot simulate`` and the end-to-end tests all start the
robot through ``open_runtime``, so they differ only in their audio ends.
"""

from __future__ import annotations

import functools
import logging
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Literal

from config.schema import Persona, Settings
from memory.base import DialogueMemory
from memory.tokens import count_tokens
from robot.controller import DialogueController, persona_prompt
from robot.events import EventBus, MemoryEvent, RecordingPublisher
from robot.llm import LLMClient, open_llm
from robot.speaker import AudioSpeaker, Speaker, TextSpeaker

log = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 400

AudioOut = Literal["device", "wav", "text", "none"]


@dataclass
class Runtime:
    settings: Settings
    controller: DialogueController
    memory: DialogueMemory
    llm: LLMClient
    events: EventBus
    recorder: RecordingPublisher
    clock: object | None = None

    async def advance_clock(self, seconds: float) -> None:
        """Simulation only: let ``seconds`` of memory time pass at once (timers fire).
        A memory without timers (strategy ``full``) has no clock: nothing to advance."""
        if self.clock is None:
            return
        if not hasattr(self.clock, "advance"):
            raise RuntimeError("this runtime runs on the system clock; only a simulation can advance it")
        await self.clock.advance(seconds)  # type: ignore[attr-defined]
        # Minutes passed: the summary the timer started has had its time to finish.
        await self.memory.wait_idle()  # type: ignore[attr-defined]


def _speaker(settings: Settings, persona: Persona, audio_out: AudioOut, wav_dir: Path | None) -> Speaker:
    if audio_out == "text":
        return TextSpeaker(persona.name)
    from speech.audio import NullSink, SoundDeviceSink, WavSink
    from speech.tts import Synthesizer

    if audio_out == "wav":
        sink = WavSink(wav_dir or Path("out"))
    elif audio_out == "device":
        sink = SoundDeviceSink(settings.audio.output_device, settings.audio.device_sample_rate)
    else:
        sink = NullSink()
    voice = persona.voice or settings.tts.voice
    rate = persona.rate or settings.tts.rate
    return AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, voice, rate)


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    persona: Persona,
    persona_path: Path | None,
    *,
    audio_out: AudioOut = "wav",
    wav_dir: Path | None = None,
    listen: bool = True,
    simulated_clock: bool = False,
    memory: DialogueMemory | None = None,
) -> AsyncIterator[Runtime]:
    """A ready robot. ``listen=False`` skips VAD and STT (typed chat)."""
    async with AsyncExitStack() as stack:
        recorder = RecordingPublisher()
        events = EventBus(recorder)
        llm = await stack.enter_async_context(open_llm(settings.llm))
        clock = None
        if memory is None:
            memory, clock = await _open_memory(settings, persona, llm, events, simulated_clock)
            stack.push_async_callback(memory.aclose)
        endpointer = transcriber = None
        if listen:
            from speech.stt import Transcriber
            from speech.vad import Endpointer

            endpointer = Endpointer(settings.vad)
            transcriber = Transcriber(settings.stt)
            await transcriber.aload()
        controller = DialogueController(
            persona=persona,
            persona_path=persona_path,
            memory=memory,
            llm=llm,
            speaker=_speaker(settings, persona, audio_out, wav_dir),
            events=events,
            endpointer=endpointer,
            transcriber=transcriber,
            forget_user=getattr(memory, "forget_user", None),
        )
        if settings.mqtt.enabled:
            from robot.mqtt import MqttHooks

            hooks = MqttHooks(settings.mqtt, controller)
            await hooks.start()
            stack.push_async_callback(hooks.aclose)
            events.add(hooks)
        await memory.start()
        controller.announce()
        yield Runtime(settings, controller, memory, llm, events, recorder, clock)


async def _open_memory(settings: Settings, persona: Persona, llm: LLMClient, events: EventBus,
                       simulated_clock: bool) -> tuple[DialogueMemory, object | None]:
    """The persona's memory strategy over the deployment's store."""
    from memory.full_history import FullHistoryMemory

    if persona.memory.strategy == "full":
        return FullHistoryMemory(persona_prompt(persona)), None
    from memory import create_memory
    from memory.clock import ManualClock, SystemClock

    clock = ManualClock() if simulated_clock else SystemClock()

    def on_update(version: int, role_prompt: str, summary: str) -> None:
        share = summary if settings.mqtt.share_memory_text else None
        events.publish(MemoryEvent(
            version=version, prompt_chars=len(role_prompt),
            prompt_tokens=count_tokens(role_prompt), summary=share,
        ))

    memory = await create_memory(
        persona_prompt=persona_prompt(persona),
        persona_memory=persona.memory,
        store_settings=settings.memory,
        # Summaries need more room than a spoken reply, and must repeat names and facts:
        # no repetition penalties for them (measured: with them SmolLM2's summaries failed).
        llm=functools.partial(llm.complete, max_tokens=SUMMARY_MAX_TOKENS,
                              frequency_penalty=0.0, presence_penalty=0.0),
        clock=clock,
        on_update=on_update,
    )
    return memory, clock
