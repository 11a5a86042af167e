"""What visitor sessions cost: opening a visitor's memory, ending a session, the forced
summary that folds a session into the visitor's summary (embedded model), and how much that
background summary delays the next visitor's first reply.

    .venv/bin/python bench/sessions.py [--rounds N]

Each round runs twice, alternating: a known visitor's session of six lines ends, then an
anonymous visitor's first reply is asked for either after the forced summary finished
("quiet") or while it runs ("during summary"). Rounds go round three summary servers, all
in this run: one at normal priority, one at niceness ``SUMMARY_NICE``, one under SCHED_IDLE
(the robot's: ``SUMMARY_IDLE``). The reply's time to its first token and to its first 60
characters (about a spoken sentence) are compared within this one run, median and p95; the
target is a delay under 10 %. Figures depend on the machine: compare ratios, not times.
``--load N`` keeps N busy processes at normal priority running meanwhile (a kiosk's STT, TTS
and browser also want the cores): where the summary server's priority shows.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.loader import load_persona, load_settings  # noqa: E402
from memory.core.base import Remark  # noqa: E402
from robot.app.runtime import _open_memory  # noqa: E402 - the robot's own wiring of visitor memory
from robot.core.events import EventBus, RecordingPublisher  # noqa: E402
from robot.llm.factory import SUMMARY_IDLE, SUMMARY_NICE, open_llm  # noqa: E402

SESSION = [
    ("user", "Hello. My name is Ken Tanaka. I would like to plan a trip to Kyoto and Nara."),
    ("assistant", "Welcome, Mr. Tanaka. When would you like to travel?"),
    ("user", "We are two adults, we want to go in April, and our budget is two thousand dollars."),
    ("assistant", "April is cherry blossom season; two thousand dollars is enough for a week."),
    ("user", "My wife uses a wheelchair, so we need step-free hotels."),
    ("assistant", "I will only suggest hotels with step-free access."),
]
FIGURES = ("open_ms", "end_ms", "forced_s", "quiet_first", "quiet_sentence", "busy_first", "busy_sentence")
NEXT_VISITOR = "Good morning. We would like to visit Osaka for two days. What do you suggest?"


async def first_reply(llm, messages) -> tuple[float, float]:
    start = time.perf_counter()
    first = sentence = None
    text = ""
    async for delta in llm.stream(messages, max_tokens=60):
        text += delta
        first = first or time.perf_counter() - start
        if sentence is None and len(text) >= 60:
            sentence = time.perf_counter() - start
    end = time.perf_counter() - start
    return first or end, sentence or end


# name: (niceness, SCHED_IDLE) of the summary server's threads
PRIORITIES = {"normal": (0, False), f"niceness {SUMMARY_NICE}": (SUMMARY_NICE, False),
              "SCHED_IDLE": (SUMMARY_NICE, True)}
ROBOTS = "SCHED_IDLE" if SUMMARY_IDLE else f"niceness {SUMMARY_NICE}"


async def run(rounds: int) -> None:
    """The summary-server settings side by side, in one run: the rounds go round them, in a
    turning order, so all see the same machine."""
    settings = load_settings(None)
    persona = load_persona(REPO / "config/personas/travel_agent.yaml")
    threads = settings.llm.summary_threads or settings.llm.threads
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncExitStack() as stack:
            reply = await stack.enter_async_context(open_llm(settings.llm))
            memories = {}
            for i, (name, (nice, idle)) in enumerate(PRIORITIES.items()):
                summary = await stack.enter_async_context(
                    open_llm(settings.llm, threads=threads, parallel=1, purpose="summaries", nice=nice, idle=idle))
                settings.memory.db_path = Path(tmp) / f"memory-{i}.sqlite3"
                memory, _ = await _open_memory(settings, persona, summary, EventBus(RecordingPublisher()), False)
                await memory.start()
                stack.push_async_callback(memory.aclose)
                memories[name] = memory
            await first_reply(reply, await memories["normal"].build_messages(NEXT_VISITOR))  # warm-up
            figures = {name: {k: [] for k in FIGURES} for name in memories}
            names = list(memories)
            for r in range(rounds):
                for name in names[r % 3:] + names[:r % 3]:
                    for mode in ("quiet", "busy") if r % 2 == 0 else ("busy", "quiet"):
                        await one_round(memories[name], reply, f"card-{r}-{mode}", mode, figures[name])
    for name, f in figures.items():
        print(f"\nsummary server: {name}" + (" (the robot's setting)" if name == ROBOTS else ""))
        report(f)


async def one_round(memory, reply_llm, visitor: str, mode: str, figures: dict[str, list[float]]) -> None:
    start = time.perf_counter()
    await memory.begin(visitor)
    figures["open_ms"].append((time.perf_counter() - start) * 1000)
    for role, text in SESSION:
        await memory.record(Remark(role, text))
    start = time.perf_counter()
    await memory.end()
    figures["end_ms"].append((time.perf_counter() - start) * 1000)
    closing = memory._closing[visitor]
    if mode == "quiet":
        await closing
        figures["forced_s"].append(time.perf_counter() - start)
    await memory.begin(None)
    first, sentence = await first_reply(reply_llm, await memory.build_messages(NEXT_VISITOR))
    figures[f"{mode}_first"].append(first)
    figures[f"{mode}_sentence"].append(sentence)
    if mode == "busy":
        if closing.done():
            print(f"  note: the forced summary of {visitor} ended before the reply did", flush=True)
        await closing
        figures["forced_s"].append(time.perf_counter() - start)
    await memory.end()
    await memory.wait_idle()


def report(f: dict[str, list[float]]) -> None:
    med = statistics.median
    print(f"open a visitor's memory:   median {med(f['open_ms']):.1f} ms  (max {max(f['open_ms']):.1f})")
    print(f"end a session (detach):    median {med(f['end_ms']):.2f} ms")
    print(f"forced summary, 6 lines:   median {med(f['forced_s']):.1f} s  (min {min(f['forced_s']):.1f}, "
          f"max {max(f['forced_s']):.1f}), in the background")
    for key, label in (("first", "first token"), ("sentence", "first 60 characters")):
        for stat, of in (("p50", med), ("p95", p95)):
            quiet, busy = of(f[f"quiet_{key}"]), of(f[f"busy_{key}"])
            print(f"next visitor's {label:<20} {stat}  quiet {quiet * 1000:6.0f} ms   during the forced summary "
                  f"{busy * 1000:6.0f} ms   ratio {busy / quiet:.2f}")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--load", type=int, default=0, help="busy processes at normal priority meanwhile")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        print(f"{args.rounds} rounds, {args.load} busy process(es) meanwhile", flush=True)
        asyncio.run(run(args.rounds))
    finally:
        for hog in hogs:
            hog.kill()


if __name__ == "__main__":
    main()
