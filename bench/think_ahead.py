"""Thinking ahead: what starting the reply's LLM request at the customer's pause
(``llm.start_at_pause``) buys for each hangover, on the sample scenario fed at 1x.

Each setting runs the scenario in real time (the customer's audio as a microphone gives it,
so the endpointer's wait is a real wait), alternating, ``--repeat`` times, in one process
and one run; the turns measured are those that ask the LLM (a "yes" to "Shall I tell you
more?" starts with the held sentence and is left out). Printed per setting: voice to voice
(the customer's last sound -> the robot's first audio) p50 and p95, and end of
speech -> first token p50. Compare the rows of one run: the machine's load moves them all.

    .venv/bin/python bench/think_ahead.py [--hangover-ms 700,1000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import robot.app.simulate  # noqa: E402
from config.loader import load_scenario  # noqa: E402
from robot.dialogue.more import YesWords  # noqa: E402

robot.app.simulate.QueueSource = functools.partial(robot.app.simulate.QueueSource, realtime=True)  # 1x, as a microphone
SCENARIO = REPO / "config/scenarios/travel_consultation.yaml"


async def run(hangover_ms: int, early: bool) -> list[dict[str, float]]:
    scenario = load_scenario(SCENARIO)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Path(tmp) / "settings.yaml"
        settings.write_text(yaml.safe_dump({"vad": {"hangover_ms": hangover_ms}, "llm": {"start_at_pause": early}}))
        scenario.settings = settings
        report = await robot.app.simulate.run_scenario(scenario, Path(tmp) / "out", echo=False)
    yes = YesWords.of()
    return [t.result.timings.relative() for t in report.turns if t.result and not yes.match(t.result.user_text)]


def pct(values: list[float], p: float) -> float:
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, int(round(p / 100 * (len(ranked) - 1))))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hangover-ms", type=lambda v: [int(x) for x in v.split(",")], default=[700, 1000])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    rows: dict[tuple[int, bool], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for hangover in args.hangover_ms:
            for early in (False, True):
                rows.setdefault((hangover, early), []).extend(await run(hangover, early))
    print(f"sample scenario at 1x, {args.repeat} repeats alternating; turns that ask the LLM")
    print(f"{'hangover':>8} {'start at pause':>15} {'turns':>6} {'v2v p50':>9} {'v2v p95':>9} {'first token p50':>16}")
    for (hangover, early), turns in rows.items():
        v2v = [t["voice_to_voice_s"] * 1000 for t in turns]
        token = [t["first_token_s"] * 1000 for t in turns]
        print(f"{hangover:>6}ms {'on' if early else 'off':>15} {len(turns):>6} {pct(v2v, 50):>7.0f}ms "
              f"{pct(v2v, 95):>7.0f}ms {statistics.median(token):>14.0f}ms")


if __name__ == "__main__":
    asyncio.run(main())
