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
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Sequence

from config.loader import load_persona, load_settings
from config.scenario_schema import FactsExpectation, Scenario, ScenarioTurn
from config.schema import Persona, Settings
from robot.app.out_dir import claim_out_dir, record_out_dir
from robot.app.runtime import Runtime, open_runtime
from robot.core.events import HandoverEvent, MemoryEvent, RecordingPublisher, SpeechEvent
from robot.dialogue.turns import TurnResult
from speech.audio import QueueSource, mix_under, pcm_to_float, read_wav_16k_mono, silence
from speech.audio.room import Room
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
    merged_into: int | None = None  # the line whose turn took this one's words (the robot yielded to it)


@dataclass
class SimulationReport:
    scenario: str
    turns: list[TurnReport]
    out_dir: Path
    reply_s: list[float] = field(default_factory=list)  # seconds of robot speech per answered turn
    max_reply_s: float | None = None  # the persona's budget
    realtime: bool = False  # the customer's audio was fed at 1x (a room or the console)

    def reply_length_line(self) -> str:
        """The distribution of reply lengths (TTS durations), against the persona's budget."""
        if not self.reply_s:
            return "reply length: no replies"
        ranked = sorted(self.reply_s)

        def pct(p: float) -> float:  # nearest rank: with few turns, p95 is the longest
            return ranked[max(0, math.ceil(p / 100 * len(ranked)) - 1)]

        budget = "" if self.max_reply_s is None else f" (budget {self.max_reply_s:g} s)"
        return (f"reply length over {len(ranked)} replies: p50 {pct(50):.1f} s, p95 {pct(95):.1f} s, "
                f"max {ranked[-1]:.1f} s{budget}")

    def timing_note(self) -> str | None:
        """What the printed timings mean when the audio was not fed in real time: the
        endpointer's silence passed at once, so nothing ran ahead during it (no early
        transcript, no early reply) and voice to voice reads as the whole hangover plus the
        whole of STT and the LLM, about a second more than a visitor waits."""
        if self.realtime:
            return None
        return ("timings: the customer's audio was read faster than real time, so nothing ran during their "
                "pauses; voice to voice as a visitor feels it: bench/dialogue_latency.py --realtime")

    @property
    def failures(self) -> list[str]:
        return [f"turn {t.index}: {f}" for t in self.turns for f in t.failures]

    @property
    def ok(self) -> bool:
        return not self.failures


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def _heard_words(text: str) -> set[str]:
    """The transcript's words, and each plural's singular too: the scenario's "temple" is
    heard in "the temples in Kyoto", however Whisper takes the last sound."""
    words = _words(text)
    return words | {w[:-1] for w in words if len(w) > 3 and w.endswith("s")}


def check_expectations(turn: ScenarioTurn, result: TurnResult, earlier: Sequence[str] = (),
                       knowledge: Sequence[str] = (), sheets: Sequence[dict] = ()) -> list[str]:
    """``earlier``: the replies to the turns before this one, in order (for ``from_turn``);
    ``knowledge``: the sentences of the persona's knowledge entries; ``sheets``: the consultation
    sheets this turn's handovers carried."""
    failures = []
    if turn.expect_recommendation and not re.search(r"\d[\d,]* (?:yen|pounds|euros|dollars) for "
                                                     r"(?:the \w+ of you|you)\b", result.reply_text):
        failures.append("the reply recommends no offer with its total for the party")
    if turn.expect_handover_sheet:
        from robot.consult.sheet import complete

        if not any(complete(s) for s in sheets):
            failures.append("no handover with a complete consultation sheet (party, plan priced, total)")
    if turn.expect_from_knowledge and not any(s in result.reply_text for s in knowledge):
        failures.append("the reply says no sentence of the shop's knowledge")
    heard = _heard_words(result.user_text)
    missing = [w for w in turn.expect_transcript if not _words(w) <= heard]
    if missing:
        failures.append(f"transcript {result.user_text!r} lacks {missing}")
    reply = result.reply_text.lower()
    if turn.expect_reply_any and not any(w.lower() in reply for w in turn.expect_reply_any):
        failures.append(f"reply mentions none of {turn.expect_reply_any}")
    if turn.expect_reply_facts is not None:
        failures += _facts_failures(turn.expect_reply_facts, [*earlier, result.reply_text])
    if not result.reply_text:
        failures.append("the robot did not answer")
    return failures


def _facts_failures(expect: FactsExpectation, replies: list[str]) -> list[str]:
    start = len(replies) - 1 if expect.from_turn is None else expect.from_turn - 1
    said = " ".join(replies[start:]).lower()
    named = [fact for fact in expect.of if any(alt.strip().lower() in said for alt in fact.split("|"))]
    if len(named) >= expect.at_least:
        return []
    where = "the reply" if expect.from_turn is None else f"the replies since turn {expect.from_turn}"
    return [f"{where} named {len(named)} of {expect.of} ({', '.join(named) or 'none'}); {expect.at_least} expected"]


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
        pcm = await _spoken(scenario, turn, turn.text or "")
    if turn.goes_on is not None:  # a pause that ends the turn, and the rest of it
        pcm += silence(turn.goes_on_after_s) + await _spoken(scenario, turn, turn.goes_on)
    if scenario.noise_wav is not None:
        noise = await asyncio.to_thread(read_wav_16k_mono, scenario.noise_wav)
        pcm = mix_under(pcm, pcm_to_float(noise), scenario.noise_gain)
    return pcm


async def _spoken(scenario: Scenario, turn: ScenarioTurn, text: str) -> bytes:
    voice = turn.voice or scenario.customer_voice
    rate = turn.rate or scenario.customer_rate
    return (await customer_voice(voice, rate).synthesize(text, sample_rate=SAMPLE_RATE)).pcm


async def _say(rt: Runtime, source: QueueSource | Room, scenario: Scenario, turn: ScenarioTurn) -> float:
    """Push the turn's audio; returns the stream second where it begins."""
    pcm = await _customer_audio(scenario, turn)
    if turn.interrupt_after_s is not None:
        await _robot_speaking_for(rt, turn.interrupt_after_s)
    else:
        source.push_silence(turn.pause_before_s)
    begins = source.pushed_s
    source.push(pcm)
    if isinstance(source, QueueSource):
        # Enough trailing silence for the hangover to close the turn: this microphone's clock
        # runs only on what it is fed. A room's hears silence whenever nobody talks; queued
        # there, it held back a line said over the reply (``interrupt_after_s``) by up to 2 s.
        source.push_silence(rt.settings.vad.hangover_ms / 1000 + 1.0)
    return begins


async def _robot_speaking_for(rt: Runtime, seconds: float) -> None:
    """Until the robot's next reply has been playing for ``seconds``."""
    before = len(rt.recorder.of(SpeechEvent))
    deadline = asyncio.get_running_loop().time() + TURN_TIMEOUT_S
    while len(rt.recorder.of(SpeechEvent)) == before and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    await asyncio.sleep(seconds)


async def _result(rt: Runtime) -> TurnResult | None:
    try:
        return await asyncio.wait_for(rt.controller.results.get(), TURN_TIMEOUT_S)
    except asyncio.TimeoutError:
        return None


def _room(scenario: Scenario) -> Room | None:
    r = scenario.room
    if r is None:
        return None
    noise = read_wav_16k_mono(r.noise_wav) if r.noise_wav is not None else None
    return Room(echo_gain_db=r.echo_gain_db, echo_delay_ms=r.echo_delay_ms, noise=noise, noise_gain=r.noise_gain)


async def run_scenario(scenario: Scenario, out_dir: Path, *, echo: bool = True, mqtt: bool = False,
                       settings: Settings | None = None, persona_path: Path | None = None,
                       memory_store: str | None = None, claim: bool = True,
                       linger: Callable[[str], Awaitable[None]] | None = None) -> SimulationReport:
    """Play the scenario; ``settings`` default to the scenario's settings file, the persona
    to the scenario's, the memory to a fresh file in ``out_dir`` (``memory_store``: a path
    or URL given on the command line instead). ``claim``: first make ``out_dir`` ready,
    deleting only what an earlier run wrote (the CLI claims it itself, before its turn log
    opens there). With the console on, the robot's speech takes real time (a watcher sees it
    speak, and "stop" has something to cut), and ``linger(console_url)`` is awaited before
    the robot closes."""
    settings = settings or load_settings(scenario.settings)
    settings.mqtt.enabled = settings.mqtt.enabled or mqtt
    persona_path = persona_path or scenario.persona
    persona = load_persona(persona_path)
    if claim:
        claim_out_dir(out_dir)
    try:
        return await _run(scenario, out_dir, echo, settings, persona, persona_path, memory_store, linger)
    finally:
        record_out_dir(out_dir)


async def _run(scenario: Scenario, out_dir: Path, echo: bool, settings: Settings, persona: Persona,
               persona_path: Path, memory_store: str | None,
               linger: Callable[[str], Awaitable[None]] | None) -> SimulationReport:
    # A fresh memory of its own, never a fleet's store named in the settings or environment.
    settings.memory.store, settings.memory.db_path = None, out_dir / "memory.sqlite3"
    if memory_store:
        settings.memory.store = memory_store
    room = _room(scenario)
    if room is None:
        # No loudspeaker feeds this microphone, and it is read faster than real time: nothing
        # for an echo canceller to do, and its timing would be wrong.
        settings.barge_in.echo_cancel = False
    realtime = settings.console.enabled or room is not None
    source: QueueSource | Room = room or QueueSource()
    reports: list[TurnReport] = []
    async with open_runtime(settings, persona, persona_path, wav_dir=out_dir, simulated_clock=True,
                            realtime=realtime, room=room) as rt:
        listener = asyncio.create_task(rt.controller.listen(source))
        sessions = rt.controller.sessions
        if scenario.visitor and sessions is not None:
            await sessions.start(scenario.visitor)
        await rt.controller.greet()
        if echo and persona.greeting:
            print(f"{persona.name}: {persona.greeting}\n", flush=True)
        waiting: list[tuple[int, ScenarioTurn, float]] = []  # said (from stream second), not yet reported
        knowledge = [s for e in persona.knowledge.entries for s in e.sentences] if persona.knowledge else []
        turns = scenario.turns
        for index, turn in enumerate(turns, start=1):
            if turn.advance_clock_s:
                await rt.advance_clock(turn.advance_clock_s)
            if turn.new_visitor is not False and sessions is not None:
                await sessions.start(None if turn.new_visitor is True else turn.new_visitor)
                if echo:
                    print(f"--- visitor {sessions.visitor} walks up ---\n", flush=True)
            waiting.append((index, turn, await _say(rt, source, scenario, turn)))
            if index < len(turns) and turns[index].interrupt_after_s is not None:
                continue  # the next turn cuts into the reply to this one
            await _report_batch(rt, waiting, reports, knowledge, persona.name if echo else None, index)
            waiting.clear()
        if echo:
            for event in rt.recorder.of(MemoryEvent):
                print(f"memory: role prompt rewritten to version {event.version} "
                      f"({event.prompt_tokens} tokens) by a background summary", flush=True)
        source.close()
        await listener
        answered = {r.result.turn_id for r in reports if r.result is not None}  # not a turn yielded to the next
        reply_s = reply_seconds(rt.recorder, persona.filler, answered)
        if linger is not None and rt.console is not None:
            await linger(rt.console.url)  # type: ignore[attr-defined]
    return SimulationReport(scenario.name, reports, out_dir, reply_s, persona.max_reply_s, realtime)


async def _report_batch(rt: Runtime, waiting: list[tuple[int, ScenarioTurn, float]], reports: list[TurnReport],
                        knowledge: Sequence[str], robot_name: str | None, last: int) -> None:
    """Report the lines said since the last report (one, or one and those that cut into its
    reply). A line whose words the turn before took in (the robot yielded: it took them for
    the rest of that turn) has no result of its own: it is reported with that turn's, at once,
    instead of waiting for a turn that will not come."""
    before: TurnReport | None = None
    for said_index, said, begins in waiting:
        earlier = [r.result.reply_text if r.result else "" for r in reports]
        heard_until = before.result.heard_until_s if before is not None and before.result is not None else None
        if before is not None and heard_until is not None and heard_until > begins:  # that turn took this line
            report = _report(said_index, said, before.result, cut=False, earlier=earlier[:-1], knowledge=knowledge)
            report.merged_into = before.merged_into or before.index
        else:
            result = await _result(rt)
            report = _report(said_index, said, result, cut=said_index < last, earlier=earlier,
                             knowledge=knowledge, sheets=_sheets(rt, result))
        reports.append(report)
        before = report
        if robot_name is not None:
            print(format_turn(report, robot_name, said), flush=True)


def reply_seconds(recorder: RecordingPublisher, filler: str | None, turns: set[str] | None = None) -> list[float]:
    """Seconds of speech of each turn's reply (of ``turns`` only, when given), the offer to say
    more included; the filler said while the LLM is slow to start is not part of the answer
    (nor of its budget)."""
    per_turn: dict[str, float] = {}
    for event in recorder.of(SpeechEvent):
        if event.turn_id is not None and event.text != filler and (turns is None or event.turn_id in turns):
            per_turn[event.turn_id] = per_turn.get(event.turn_id, 0.0) + event.duration_s
    return list(per_turn.values())


def _sheets(rt: Runtime, result: TurnResult | None) -> list[dict]:
    """The consultation sheets the handovers of this turn carried."""
    if result is None:
        return []
    return [e.sheet for e in rt.recorder.of(HandoverEvent) if e.turn_id == result.turn_id and e.sheet]


def _report(index: int, turn: ScenarioTurn, result: TurnResult | None, cut: bool,
            earlier: Sequence[str] = (), knowledge: Sequence[str] = (), sheets: Sequence[dict] = ()) -> TurnReport:
    """``cut``: the next turn interrupted this one's reply, which must show it."""
    said = turn.text or ""
    if turn.goes_on is not None:
        said += f" [{turn.goes_on_after_s:g} s pause] {turn.goes_on}"
    report = TurnReport(index, said, result)
    report.failures = (["no turn was heard (VAD found no speech)"] if result is None
                       else check_expectations(turn, result, earlier, knowledge, sheets))
    if result is not None and cut and not result.interrupted:
        report.failures.append("the customer spoke over the reply, and the robot took it for the rest of this turn "
                               "(it yielded) instead of being interrupted" if result.yields else
                               "the customer spoke over the reply but the robot was not interrupted")
    return report


def format_turn(report: TurnReport, robot_name: str, turn: ScenarioTurn) -> str:
    r = report.result
    said = f"  (script: {report.said})" if report.said else f"  (wav: {turn.wav.name})" if turn.wav else ""
    if r is None:
        return f"[{report.index}] customer: <nothing heard>{said}\n  FAIL: " + "; ".join(report.failures) + "\n"
    if report.merged_into is not None:
        lines = [f"[{report.index}] customer: merged into turn {report.merged_into}'s words, answered once there "
                 f"(the robot took this for the rest of that turn){said}"]
        return "\n".join(lines + [f"    FAIL: {f}" for f in report.failures]) + "\n"
    t = r.timings.relative()

    def ms(key: str) -> str:
        return "-" if t[key] is None else f"{t[key] * 1000:.0f} ms"

    lines = [
        f"[{report.index}] customer (heard): {r.user_text}{said}",
        f"    {robot_name}: {r.reply_text}",
        f"    timings after end of speech: transcript {ms('transcript_s')}, first token "
        f"{ms('first_token_s')}, first audio {ms('first_audio_s')}; STT {r.stt_s:.2f}s for {r.audio_s:.2f}s",
        f"    voice to voice {ms('voice_to_voice_s')} (the customer's voice ended {ms('hangover_s')} "
        f"before the endpointer's decision)",
    ]
    if r.yields:
        stop = "" if r.yield_stop_s is None else f", silent {r.yield_stop_s * 1000:.0f} ms after it heard them"
        lines.append(f"    yielded {r.yields}x: the customer went on after their turn had ended{stop}; "
                     f"both parts answered as one turn")
    if r.gestures:
        lines.append(f"    gestures: {', '.join(r.gestures)}")
    lines += [f"    FAIL: {f}" for f in report.failures]
    return "\n".join(lines) + "\n"
