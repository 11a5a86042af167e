"""A long run of typed turns against a stub LLM: does the robot's memory (RAM) stay flat,
and does a turn take as long at the end as at the start? (issue 28, item 7)

    .venv/bin/python bench/soak.py [--turns 5000] [--session 250] [--trace]

The robot is the one `robot chat` runs (``open_runtime``, text out, a SQLite memory in a
temporary folder), answered by the tests' OpenAI-protocol stub (tests/openai_stub_server.py)
in a process of its own, so its RAM is not counted. Visitors come and go as at a kiosk: a
new known visitor every ``--session`` turns (their memory kept, the last one's session
ended and folded in the background). Every 500 turns it prints the process's RSS, its
growth since turn 500 (the target: at most 2 MB by the end), and the mean and median wall
time of a turn over those 500 and the CPU time the process spent per turn (the target: the
last block's CPU time within 10 % of the 500-1000 block's; wall time on a shared machine
moves with the others' load, CPU time with the work a turn costs, which is what would grow
if something piled up). ``--trace``
adds tracemalloc's top growing allocation sites since turn 500 (slower: compare RSS only
without it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.loader import DEFAULT_PERSONA, load_persona, load_settings  # noqa: E402
from robot.app.runtime import open_runtime  # noqa: E402

BLOCK = 500
RSS_TARGET_MB = 2.0
TIME_TARGET = 0.10
LINES = ["We would like to see temples in Kyoto.", "How long is the train to Nara?",
         "We are two adults travelling in April.", "Our budget is about two thousand dollars.",
         "Is there a quiet hotel near the station?", "Can we see the deer in the park?"]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def start_stub() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.openai_stub_server", "Happy to help with your trip."],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def soak(turns: int, session: int, trace: bool, base_url: str, folder: Path) -> bool:
    settings = load_settings(None)
    settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", base_url, "stub"
    settings.memory.db_path = folder / "memory.sqlite3"
    persona = load_persona(DEFAULT_PERSONA)
    times: list[float] = []
    base_rss: float | None = None
    blocks: list[float] = []  # CPU ms per turn, each block of 500
    walls: list[float] = []  # median wall ms per turn
    baseline = None
    cpu_at = time.process_time()
    async with open_runtime(settings, persona, DEFAULT_PERSONA, audio_out="text", listen=False,
                            keep_events=1000) as rt:
        rt.controller.speaker._write = lambda _text: None  # type: ignore[attr-defined] - no terminal
        print(f"{'turns':>6} {'RSS MB':>8} {'since 500':>9} {'mean ms':>8} {'p50 ms':>8} {'CPU ms':>8}  (a turn, "
              f"over the last {BLOCK}; stub LLM at {base_url})")
        for i in range(1, turns + 1):
            if i % session == 1:
                await rt.controller.sessions.start(f"card-{i // session:04d}")  # the last one's closes
            start = time.perf_counter()
            await rt.controller.handle_text(f"{LINES[i % len(LINES)]} (question {i})")
            times.append(time.perf_counter() - start)
            if i % BLOCK:
                continue
            await rt.memory.wait_idle()  # background summaries and closes of the block are done
            gc.collect()
            rss = rss_mb()
            if i == BLOCK:
                base_rss = rss
                if trace:
                    tracemalloc.start(10)
                    baseline = tracemalloc.take_snapshot()
            mean_ms = statistics.fmean(times[-BLOCK:]) * 1000
            median_ms = statistics.median(times[-BLOCK:]) * 1000
            cpu_ms = (time.process_time() - cpu_at) / BLOCK * 1000
            cpu_at = time.process_time()
            blocks.append(cpu_ms)
            walls.append(median_ms)
            print(f"{i:>6} {rss:>8.1f} {rss - (base_rss or rss):>+9.1f} {mean_ms:>8.1f} {median_ms:>8.1f} {cpu_ms:>8.1f}",
                  flush=True)
            if trace and baseline is not None and i > BLOCK:
                diff = tracemalloc.take_snapshot().compare_to(baseline, "traceback")
                print(f"        traced total {sum(d.size_diff for d in diff) / 1024:+.1f} KiB")
                for stat in diff[:8]:
                    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(stat.traceback[-6:]))
                    print(f"        {stat.size_diff / 1024:+8.1f} KiB {stat.count_diff:+6d} blocks  {where}")
    if base_rss is None or len(blocks) < 3:
        print("too few turns for a verdict (at least 1,500)")
        return False
    growth = rss - base_rss
    ratio = blocks[-1] / blocks[1]
    print(f"RSS growth after turn {BLOCK}: {growth:+.1f} MB (target <= {RSS_TARGET_MB} MB)")
    print(f"a turn's work at the end: {ratio:.2f}x the {BLOCK}-{2 * BLOCK} block's in CPU time (target within "
          f"{TIME_TARGET:.0%}); median wall time {walls[-1] / walls[1]:.2f}x (moves with the machine's load: "
          f"{os.getloadavg()[0]:.1f} now)")
    return growth <= RSS_TARGET_MB and abs(ratio - 1) <= TIME_TARGET


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--session", type=int, default=250, help="turns per visitor (250: two visitors leave in each block)")
    parser.add_argument("--trace", action="store_true", help="tracemalloc's top growing sites")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    stub, url = start_stub()
    try:
        with tempfile.TemporaryDirectory(prefix="robot-soak-") as folder:
            ok = asyncio.run(soak(args.turns, args.session, args.trace, url, Path(folder)))
    finally:
        stub.terminate()
        stub.wait()
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
