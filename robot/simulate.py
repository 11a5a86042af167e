"""Headless simulation: a scripted customer talks to the real pipeline.

Each customer turn is synthesized with espeak-ng (or read from a wav file), pushed into an
in-memory microphone, and goes through the same VAD -> STT -> LLM -> TTS path as live
audio. The robot's speech is written to wav files. Expectations in the scenario decide the
exit status.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from config.loader import load_persona, load_settings
from config.schema import Scenario, ScenarioTurn, Settings
from robot.events import MemoryEvent
from robot.runtime import Runtime, open_runtime
from robot.turns import TurnResult
from speech.audio import QueueSource, mix_under, pcm_to_float, read_wav_16k_mono
from speech.espeak_cli import EspeakCliSynthesizer
from speech.types import SAMPLE_RATE

log = logging.getLogger(__name__)

TURN_TIMEOUT_S = 300.0  # a turn that never ends (VAD heard nothing) fails instead of hanging


@dataclass
class TurnReport:
    index: int
    said: str  # what the scenario had the customer say ("" for a wav turn)
    result: TurnResult | None
    failures: list[str] = field(default_factory=list)


@dataclass
class SimulationReport:
    scenario: str
    turns: list[TurnReport]
    out_dir: Path

    @property
    def failures(self) -> list[str]:
        return [f"turn {t.index}: {f}" for t in self.turns for f in t.failures]

    @property
    def ok(self) -> bool:
        return not self.failures


def clear_out_dir(out_dir: Path) -> None:
    """Each run starts from a fresh memory, with no wav files of an earlier run."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in [*out_dir.glob("*.wav"), *out_dir.glob("memory.sqlite3*")]:
        stale.unlink()


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def check_expectations(turn: ScenarioTurn, result: TurnResult) -> list[str]:
    failures = []
    heard = _words(result.user_text)
    missing = [w for w in turn.expect_transcript if not _words(w) <= heard]
    if missing:
        failures.append(f"transcript {result.user_text!r} lacks {missing}")
    reply = result.reply_text.lower()
    if turn.expect_reply_any and not any(w.lower() in reply for w in turn.expect_reply_any):
        failures.append(f"reply mentions none of {turn.expect_reply_any}")
    if not result.reply_text:
        failures.append("the robot did not answer")
    return failures


@functools.cache
def customer_voice(voice: str, rate: int) -> EspeakCliSynthesizer:
    """The simulated customer speaks through the espeak-ng CLI: the same text gives the same
    bytes, so a scenario is reproducible (pyttsx3's files vary by a few samples per call)."""
    return EspeakCliSynthesizer(voice=voice, rate=rate)


async def _customer_audio(scenario: Scenario, turn: ScenarioTurn) -> bytes:
    """16 kHz mono int16 of what the customer says, with the scenario's noise under it."""
    if turn.wav is not None:
        pcm = await asyncio.to_thread(read_wav_16k_mono, turn.wav)
    else:
        voice = turn.voice or scenario.customer_voice
        rate = turn.rate or scenario.customer_rate
        audio = await customer_voice(voice, rate).synthesize(turn.text or "", sample_rate=SAMPLE_RATE)
        pcm = audio.pcm
    if scenario.noise_wav is not None:
        noise = await asyncio.to_thread(read_wav_16k_mono, scenario.noise_wav)
        pcm = mix_under(pcm, pcm_to_float(noise), scenario.noise_gain)
    return pcm


async def _play_turn(rt: Runtime, source: QueueSource, scenario: Scenario, turn: ScenarioTurn) -> TurnResult | None:
    pcm = await _customer_audio(scenario, turn)
    source.push_silence(turn.pause_before_s)
    source.push(pcm)
    # Enough trailing silence for the hangover to close the turn.
    source.push_silence(rt.settings.vad.hangover_ms / 1000 + 1.0)
    try:
        return await asyncio.wait_for(rt.controller.results.get(), TURN_TIMEOUT_S)
    except asyncio.TimeoutError:
        return None


async def run_scenario(scenario: Scenario, out_dir: Path, *, echo: bool = True, mqtt: bool = False,
                       settings: Settings | None = None) -> SimulationReport:
    """Play the scenario; ``settings`` default to the scenario's settings file."""
    settings = settings or load_settings(scenario.settings)
    settings.mqtt.enabled = settings.mqtt.enabled or mqtt
    persona = load_persona(scenario.persona)
    clear_out_dir(out_dir)
    settings.memory.db_path = out_dir / "memory.sqlite3"
    source = QueueSource()
    reports: list[TurnReport] = []
    async with open_runtime(settings, persona, scenario.persona, wav_dir=out_dir, simulated_clock=True) as rt:
        listener = asyncio.create_task(rt.controller.listen(source))
        await rt.controller.greet()
        if echo and persona.greeting:
            print(f"{persona.name}: {persona.greeting}\n", flush=True)
        for index, turn in enumerate(scenario.turns, start=1):
            if turn.advance_clock_s:
                await rt.advance_clock(turn.advance_clock_s)
            result = await _play_turn(rt, source, scenario, turn)
            report = TurnReport(index, turn.text or "", result)
            report.failures = (["no turn was heard (VAD found no speech)"] if result is None
                               else check_expectations(turn, result))
            reports.append(report)
            if echo:
                print(format_turn(report, persona.name, turn), flush=True)
        if echo:
            for event in rt.recorder.of(MemoryEvent):
                print(f"memory: role prompt rewritten to version {event.version} "
                      f"({event.prompt_tokens} tokens) by a background summary", flush=True)
        source.close()
        await listener
    return SimulationReport(scenario.name, reports, out_dir)


def format_turn(report: TurnReport, robot_name: str, turn: ScenarioTurn) -> str:
    r = report.result
    said = f"  (script: {report.said})" if report.said else f"  (wav: {turn.wav.name})" if turn.wav else ""
    if r is None:
        return f"[{report.index}] customer: <nothing heard>{said}\n  FAIL: " + "; ".join(report.failures) + "\n"
    t = r.timings.relative()

    def ms(key: str) -> str:
        return "-" if t[key] is None else f"{t[key] * 1000:.0f} ms"

    lines = [
        f"[{report.index}] customer (heard): {r.user_text}{said}",
        f"    {robot_name}: {r.reply_text}",
        f"    timings after end of speech: transcript {ms('transcript_s')}, first token "
        f"{ms('first_token_s')}, first audio {ms('first_audio_s')}; STT {r.stt_s:.2f}s for {r.audio_s:.2f}s",
    ]
    if r.gestures:
        lines.append(f"    gestures: {', '.join(r.gestures)}")
    lines += [f"    FAIL: {f}" for f in report.failures]
    return "\n".join(lines) + "\n"
