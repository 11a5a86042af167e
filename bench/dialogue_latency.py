"""Per-stage latency of the spoken dialogue loop, on the sample scenario (or another).

Runs the scenario headless through the real VAD -> STT -> LLM -> TTS path and prints,
per stage, the median over turns (and min, max) of:
  end of speech -> transcript, transcript -> first token, first token -> first audio,
  end of speech -> first audio (what a customer waits), and the STT real-time factor;
and the controller's own overhead: end of speech -> first audio minus its unavoidable
parts (STT, the LLM's time to the first whole sentence, TTS of that sentence). "End of
speech" is where the endpointer gave up waiting; "voice to voice" adds the silence it
waited after the customer's last sound (`vad.hangover_ms` after webrtcvad's last voiced
frame, which comes about 100 ms after the sound: speech/voice_end.py; revisions before it
counted from that frame), which is what a customer feels. The scenario's audio is fed faster than real time, so that wait is added as audio
time, as a microphone would have taken it; ``--realtime`` feeds it at 1x instead (every
revision compared gets the same feed), so work done while the customer is silent counts.

    .venv/bin/python bench/dialogue_latency.py [SCENARIO.yaml] [--repeat N] [--compare REV] [--realtime]

``--compare REV`` also runs the scenario on git revision REV (checked out in a temporary
worktree, run in a subprocess), alternating old and new runs so both see the same machine.
Figures depend on the machine and what else runs on it: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.revision import checked_out  # noqa: E402
DEFAULT_SCENARIO = "config/scenarios/travel_consultation.yaml"

# Run inside a checkout (this one, or an older one): one JSON object per answered turn.
# Only names that exist in every revision are used (TurnResult, its timings, stt_s).
_COLLECT = r"""
import asyncio, json, logging, sys, tempfile
from pathlib import Path
sys.path.insert(0, ".")
logging.basicConfig(level=logging.WARNING)
from config.loader import load_scenario
try:
    import robot.app.simulate as simulate
except ImportError:  # a revision from before robot/ had sub-folders
    import robot.simulate as simulate
run_scenario = simulate.run_scenario
if sys.argv[2:] == ["realtime"]:  # the customer's audio at 1x, as a microphone delivers it
    class RealtimeQueue(simulate.QueueSource):  # a subclass, not a partial: simulate checks isinstance
        def __init__(self, *args, **kwargs):
            super().__init__(*args, realtime=True, **kwargs)
    simulate.QueueSource = RealtimeQueue

async def main():
    with tempfile.TemporaryDirectory() as out:
        report = await run_scenario(load_scenario(sys.argv[1]), Path(out), echo=False)
    for turn in report.turns:
        r = turn.result
        if r is None or not r.reply_text:
            continue
        row = {k: v for k, v in vars(r.timings).items()}
        row.update(stt_s=r.stt_s, audio_s=r.audio_s)
        print("TURN " + json.dumps(row))

asyncio.run(main())
"""


def run_once(tree: Path, scenario: str, realtime: bool = False) -> list[dict[str, float | None]]:
    """One run of the scenario in the checkout ``tree``; its turns' timings."""
    done = subprocess.run([sys.executable, "-c", _COLLECT, scenario, *(["realtime"] if realtime else [])],
                          cwd=tree, capture_output=True, text=True)
    rows = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("TURN ")]
    if done.returncode or not rows:
        sys.exit(f"the run in {tree} failed:\n{done.stderr[-2000:]}")
    return rows


def stages(row: dict[str, float | None]) -> dict[str, float | None]:
    def gap(a: str, b: str) -> float | None:
        return None if row.get(a) is None or row.get(b) is None else row[b] - row[a]  # type: ignore[operator]

    e2e = gap("end_of_speech", "first_audio")
    out = {
        "end of speech -> transcript": gap("end_of_speech", "transcript_ready"),
        "transcript -> first token": gap("transcript_ready", "first_token"),
        "first token -> first audio": gap("first_token", "first_audio"),
        "end of speech -> first audio": e2e,
        # what the customer feels: from their last sound, the endpointer's wait included
        # (older revisions did not record that wait: no figure for them)
        "hangover waited": row.get("hangover_s"),
        "voice -> first audio (voice to voice)": None if e2e is None or row.get("hangover_s") is None
        else e2e + row["hangover_s"],  # type: ignore[operator]
    }
    out.update(critical_path(row))
    llm_first_sentence = gap("reply_started", "first_sentence")
    if e2e is not None and llm_first_sentence is not None and row.get("first_render_s") is not None:
        # Speech to text counts only for the part after the end of speech (it may start at the
        # customer's pause, while the endpointer still waits).
        stt_after = min(row["stt_s"], gap("end_of_speech", "transcript_ready") or row["stt_s"])  # type: ignore[type-var]
        unavoidable = stt_after + llm_first_sentence + row["first_render_s"]  # type: ignore[operator]
        out["controller overhead"] = e2e - unavoidable
        out["overhead share of the turn"] = (e2e - unavoidable) / e2e
    return out


def critical_path(row: dict[str, float | None]) -> dict[str, float | None]:
    """Voice to voice split into the stages that follow each other on the way to the first
    audio (each the part left after the one before: work done ahead, while the endpointer
    waited, counts 0): waiting for the end of the turn, speech to text, the LLM to the first
    sentence, its TTS, and the start of playback."""
    eos, transcript, sentence, audio = (row.get(k) for k in ("end_of_speech", "transcript_ready", "first_sentence",
                                                             "first_audio"))
    render = row.get("first_render_s")
    if None in (eos, transcript, sentence, audio, render) or row.get("hangover_s") is None:
        return {}
    stt_left = max(0.0, transcript - eos)  # type: ignore[operator]
    llm_left = max(0.0, sentence - max(eos, transcript))  # type: ignore[operator, type-var]
    return {"  1 waiting for the end of the turn": row["hangover_s"],
            "  2 STT left after the turn ended": stt_left,
            "  3 LLM left to the first sentence": llm_left,
            "  4 TTS of the first sentence": render,
            "  5 playback start": max(0.0, audio - sentence - render)}  # type: ignore[operator]


def print_report(label: str, rows: list[dict[str, float | None]]) -> None:
    print(f"\n{label}: {len(rows)} turns")
    print(f"{'stage':38} {'median':>9} {'p95':>9} {'min':>9} {'max':>9}")
    per_turn = [stages(r) for r in rows]
    for name in per_turn[0]:
        values = [s[name] for s in per_turn if s.get(name) is not None]
        if not values:
            continue
        p95 = sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]  # nearest rank
        if name.endswith("share of the turn"):
            print(f"{name:38} {statistics.median(values) * 100:8.1f}% {p95 * 100:8.1f}% {min(values) * 100:8.1f}% "
                  f"{max(values) * 100:8.1f}%")
        else:
            print(f"{name:38} {statistics.median(values) * 1000:7.0f}ms {p95 * 1000:7.0f}ms "
                  f"{min(values) * 1000:7.0f}ms {max(values) * 1000:7.0f}ms")
    audio = sum(r["audio_s"] or 0 for r in rows)
    stt = sum(r["stt_s"] or 0 for r in rows)
    if audio:
        print(f"STT real-time factor: {stt / audio:.3f}  ({stt:.2f} s for {audio:.2f} s of speech)")



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=DEFAULT_SCENARIO, help="scenario, relative to the repo")
    parser.add_argument("--repeat", type=int, default=1, help="run the scenario N times")
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV, alternating with this tree")
    parser.add_argument("--realtime", action="store_true",
                        help="feed the customer's audio at 1x, as a microphone would (waits are real waits)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    new: list[dict[str, float | None]] = []
    old: list[dict[str, float | None]] = []
    with checked_out(args.compare) as old_tree:
        for _ in range(args.repeat):
            if old_tree is not None:
                old += run_once(old_tree, args.scenario, args.realtime)
            new += run_once(REPO, args.scenario, args.realtime)
    if old:
        print_report(f"revision {args.compare}", old)
    print_report("this tree", new)


if __name__ == "__main__":
    main()
