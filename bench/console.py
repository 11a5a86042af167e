"""Does the console slow a reply? p95 of end of speech -> first audio with the console page
open and streaming (a headless chromium in another process) against closed, in one run.

    .venv/bin/python bench/console.py [--blocks 3] [--turns-per-block 3]

Blocks alternate closed/open so both conditions see the same machine load. The robot is
the real one (VAD, Whisper, embedded LLM, TTS into a null sink), fed the sample
scenario's customer lines through the simulator's microphone path.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.loader import load_persona, load_scenario, load_settings  # noqa: E402
from robot.app.runtime import open_runtime  # noqa: E402
from robot.app.simulate import _play_turn  # noqa: E402
from speech.audio import QueueSource  # noqa: E402

SCENARIO = REPO / "config/scenarios/travel_consultation.yaml"
BROWSER = """
import sys
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
    page = b.new_page()
    page.goto(sys.argv[1])
    page.wait_for_selector("#link:text('live')")
    print("open", flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    b.close()
"""


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


async def main(blocks: int, per_block: int) -> None:
    scenario = load_scenario(SCENARIO)
    settings = load_settings(scenario.settings)
    settings.console.enabled, settings.console.port = True, 0
    with tempfile.TemporaryDirectory(prefix="bench_console_") as tmp:
        settings.memory.db_path = Path(tmp) / "memory.sqlite3"
        source = QueueSource()
        times: dict[str, list[float]] = {"closed": [], "open": []}
        async with open_runtime(settings, load_persona(scenario.persona), scenario.persona, audio_out="none",
                                simulated_clock=True) as rt:
            listener = asyncio.create_task(rt.controller.listen(source))
            n = 0
            for block in range(blocks * 2):
                condition = "open" if block % 2 else "closed"
                browser = None
                if condition == "open":
                    browser = subprocess.Popen([sys.executable, "-c", BROWSER, rt.console.url],
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                    await asyncio.to_thread(browser.stdout.readline)  # the page is live
                for _ in range(per_block):
                    turn = scenario.turns[n % len(scenario.turns)]
                    n += 1
                    result = await _play_turn(rt, source, scenario, turn)
                    first_audio = result.timings.relative()["first_audio_s"] if result else None
                    if first_audio is not None:
                        times[condition].append(first_audio)
                if browser is not None:
                    browser.stdin.close()
                    await asyncio.to_thread(browser.wait)
            source.close()
            await listener
    print(f"end of speech -> first audio over {n} turns ({per_block} per block, blocks alternating)")
    for condition, values in times.items():
        print(f"  console {condition:6}: p95 {p95(values) * 1000:6.0f} ms, median "
              f"{statistics.median(values) * 1000:6.0f} ms ({len(values)} turns)")
    print(f"  ratio open/closed p95: {p95(times['open']) / p95(times['closed']):.2f} (target <= 1.05)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=3, help="closed/open pairs")
    parser.add_argument("--turns-per-block", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.blocks, args.turns_per_block))
