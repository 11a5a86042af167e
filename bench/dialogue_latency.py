"""Per-stage latency of the spoken dialogue loop, on the sample scenario (or another).

Runs the scenario headless through the real VAD -> STT -> LLM -> TTS path and prints,
per stage, the median over turns of:
  end of speech -> transcript, transcript -> first token, first token -> first audio,
  end of speech -> first audio (what a customer waits), and the STT real-time factor.

    .venv/bin/python bench/dialogue_latency.py [SCENARIO.yaml] [--repeat N]

Figures depend on the machine and what else runs on it: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.loader import load_scenario  # noqa: E402
from robot.simulate import run_scenario  # noqa: E402
from robot.turns import TurnResult  # noqa: E402


def stage_times(result: TurnResult) -> dict[str, float | None]:
    t = result.timings

    def gap(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else b - a

    return {
        "end of speech -> transcript": gap(t.end_of_speech, t.transcript_ready),
        "transcript -> first token": gap(t.transcript_ready, t.first_token),
        "first token -> first audio": gap(t.first_token, t.first_audio),
        "end of speech -> first audio": gap(t.end_of_speech, t.first_audio),
    }


async def collect(scenario_path: Path, repeat: int) -> list[TurnResult]:
    scenario = load_scenario(scenario_path)
    results: list[TurnResult] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            report = await run_scenario(scenario, Path(out), echo=False)
        results += [t.result for t in report.turns if t.result is not None and t.result.reply_text]
    return results


def print_report(results: list[TurnResult]) -> None:
    print(f"turns measured: {len(results)}")
    print(f"{'stage':34} {'median':>9} {'min':>9} {'max':>9}")
    stages = [stage_times(r) for r in results]
    for name in stages[0]:
        values = [s[name] for s in stages if s[name] is not None]
        if values:
            print(f"{name:34} {statistics.median(values) * 1000:7.0f}ms {min(values) * 1000:7.0f}ms "
                  f"{max(values) * 1000:7.0f}ms")
    audio = sum(r.audio_s for r in results)
    stt = sum(r.stt_s for r in results)
    if audio:
        print(f"STT real-time factor: {stt / audio:.3f}  ({stt:.2f} s for {audio:.2f} s of speech)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=REPO / "config/scenarios/travel_consultation.yaml")
    parser.add_argument("--repeat", type=int, default=1, help="run the scenario N times")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    results = asyncio.run(collect(args.scenario, args.repeat))
    if not results:
        sys.exit("no turn was answered")
    print_report(results)


if __name__ == "__main__":
    main()
