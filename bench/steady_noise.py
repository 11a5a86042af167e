"""Speech inside steady noise (issue 26, set c): where does the customer's turn end?

Every noise clip in ../shared/data/audio/noise is looped to 60 s and one real spoken
sentence (../shared/data/audio/speech, clips under 10 s, one per noise in turn) is put in
the middle: once with the noise at its own recorded level, once with the noise scaled to
10 dB under the sentence's voiced level. The mix goes through the front end as the robot's
defaults build it (``robot.app.runtime._front_end(Settings())``: webrtcvad, Silero, the
echo canceller). Reported per clip: how long after the last word the turn holding the
sentence ended (the decision, on the stream clock), whether a turn holding it reached the
max cut, whether one turn's audio (pre-roll included) spans the sentence, and the turns confirmed elsewhere
(false turns); then summary lines and the front end's CPU (process CPU seconds per second
of audio, Silero and the echo canceller included).

    nice -n 5 .venv/bin/python bench/steady_noise.py [--seconds 60] [--compare REV]

``--compare REV`` also runs git revision REV's front end (checked out in a temporary
worktree, run in a subprocess) on the same mixes in the same run: before/after. Targets:
at 10 dB SNR every turn ends <= 1.5 s after the last word; at the noise's own level no
speech turn reaches the max cut for >= 90 % of clips.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.revision import checked_out  # noqa: E402
TARGET_END_S = 1.5
SNR_DB = 10.0


@dataclass(frozen=True)
class Mix:
    name: str  # noise clip stem / level
    path: str  # raw 16 kHz int16 PCM
    speech_start: float  # stream seconds of the sentence's first loud 10 ms
    last_word: float  # stream seconds where its last loud 10 ms ends
    seconds: float


def _speech_clips(audio: Path) -> list[Path]:
    manifest = json.loads((audio / "manifest.json").read_text())
    return [audio / c["path"] for c in manifest
            if c["kind"] == "speech" and "vad_labeled" not in c["path"] and c["duration_s"] < 10]


def _active_rms(x: np.ndarray) -> float:
    """RMS over the 10 ms frames above -40 dBFS: the sentence's level while it speaks."""
    frames = x[: len(x) // 160 * 160].reshape(-1, 160)
    level = np.sqrt((frames ** 2).mean(axis=1))
    loud = level[level > 0.01]
    return float(np.sqrt((loud ** 2).mean())) if len(loud) else float(np.sqrt((x ** 2).mean()))


def build_mixes(audio: Path, seconds: float, into: Path, only: str | None) -> list[Mix]:
    from tests.hearing_tools import looped, read_clip, voice_onset, voiced_s

    speech = _speech_clips(audio)
    mixes = []
    for i, noise_path in enumerate(sorted((audio / "noise").glob("*.wav"))):
        if only is not None and only not in noise_path.stem:
            continue  # each noise keeps its sentence whatever --only picks
        sentence = read_clip(speech[i % len(speech)])
        s = np.frombuffer(sentence, dtype=np.int16).astype(np.float64) / 32768
        noise = np.frombuffer(looped(read_clip(noise_path), seconds), dtype=np.int16).astype(np.float64) / 32768
        at = int((seconds / 2 - len(s) / 32000) * 16000)
        onset = voice_onset(sentence)
        for level in ("own", f"{SNR_DB:.0f}dB"):
            gain = 1.0 if level == "own" else _active_rms(s) / max(_active_rms(noise), 1e-9) / 10 ** (SNR_DB / 20)
            x = noise * gain
            x[at: at + len(s)] += s
            pcm = (np.clip(x, -1, 1) * 32767).astype(np.int16).tobytes()
            path = into / f"{noise_path.stem}.{level}.pcm"
            path.write_bytes(pcm)
            mixes.append(Mix(f"{noise_path.stem[:30]} {level}", str(path), at / 16000 + onset,
                             at / 16000 + onset + voiced_s(sentence), seconds))
    return mixes


# --- the worker: runs in a subprocess on one tree (this one, or an old revision's) -------------

def worker(tree: str, jobs_file: str) -> None:
    """Every mix through ``tree``'s front end; one JSON line of turns per mix, then the CPU."""
    sys.path.insert(0, tree)
    import asyncio
    import time

    from config.schema import Settings
    from robot.app.runtime import _front_end
    from speech.audio import QueueSource
    from speech.listen import NotSpeech
    from speech.types import Utterance

    async def run(pcm: bytes) -> tuple[list[dict], float]:
        fe = _front_end(Settings())
        source = QueueSource()
        source.push(pcm)
        source.close()
        turns, started = [], time.process_time()
        async for event in fe.events(source):
            speech = isinstance(event, Utterance)
            u = event if speech else event.utterance if isinstance(event, NotSpeech) else None
            if u is not None:
                # the endpointer's own wait after the last voiced frame (an older checkout has no overhang_s)
                waited = u.hangover_s - getattr(u, "overhang_s", 0.0)
                audio_end = u.t_end if u.truncated else min(u.t_end + 0.2, u.t_end + waited)  # the tail kept
                turns.append({"speech": speech, "t_start": u.t_start, "t_end": u.t_end,
                              "audio_start": audio_end - len(u.audio) / 32000,
                              "decided": u.t_end + waited, "truncated": u.truncated})
        return turns, time.process_time() - started

    cpu = audio_s = 0.0
    for job in json.loads(Path(jobs_file).read_text()):
        pcm = Path(job["path"]).read_bytes()
        turns, spent = asyncio.run(run(pcm))
        cpu, audio_s = cpu + spent, audio_s + len(pcm) / 32000
        print(json.dumps({"path": job["path"], "turns": turns}), flush=True)
    print(json.dumps({"cpu_s": cpu, "audio_s": audio_s}), flush=True)


def run_tree(tree: Path, mixes: list[Mix], tmp: Path) -> tuple[dict[str, list[dict]], float]:
    jobs = tmp / "jobs.json"
    jobs.write_text(json.dumps([{"path": m.path} for m in mixes]))
    out = subprocess.run([sys.executable, __file__, "--worker", str(tree), str(jobs)], cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {d["path"]: d["turns"] for d in lines if "path" in d}, lines[-1]["cpu_s"] / lines[-1]["audio_s"]


# --- the report ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    end_s: float | None  # decision after the last word; None: no turn held the sentence
    cut: bool  # a turn holding the sentence reached the max cut
    whole: bool  # one confirmed turn's audio spans the sentence
    false_turns: int  # confirmed turns that hold none of the sentence


def judge(m: Mix, turns: list[dict]) -> Outcome:
    holding = [t for t in turns if t["t_start"] <= m.last_word and t["decided"] >= m.speech_start]
    spoken = [t for t in holding if t["speech"]]
    last = max(spoken or holding, key=lambda t: t["decided"], default=None)
    whole = any(t["audio_start"] <= m.speech_start and t["t_end"] >= m.last_word - 0.25 for t in spoken)
    false = sum(t["speech"] for t in turns if t not in holding)
    end = None if last is None or not last["speech"] else last["decided"] - m.last_word
    return Outcome(end, any(t["truncated"] for t in holding), whole, false)


def _fmt(o: Outcome) -> str:
    end = "  none" if o.end_s is None else f"{o.end_s * 1000:6.0f}"
    return f"{end} {'CUT' if o.cut else '   '} {'whole' if o.whole else 'split'} {o.false_turns:2d}"


def summary(label: str, mixes: list[Mix], outcomes: list[Outcome], cpu: float) -> None:
    print(f"\n{label}: front end CPU {cpu * 100:.2f} % of a core (process CPU s per s of audio)")
    for level in sorted({m.name.split()[-1] for m in mixes}):
        rows = [o for m, o in zip(mixes, outcomes) if m.name.endswith(level)]
        ends = sorted(o.end_s for o in rows if o.end_s is not None)
        within = sum(o.end_s is not None and o.end_s <= TARGET_END_S for o in rows)
        median = f"{statistics.median(ends) * 1000:.0f}" if ends else "-"
        print(f"  {level:>5}: ended <= {TARGET_END_S} s after the last word {within}/{len(rows)}; "
              f"reached the max cut {sum(o.cut for o in rows)}/{len(rows)}; sentence in one turn "
              f"{sum(o.whole for o in rows)}/{len(rows)}; end after last word median {median} ms, "
              f"max {max(ends) * 1000 if ends else float('nan'):.0f} ms; false turns {sum(o.false_turns for o in rows)}")



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="each noise looped to this long")
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV's front end")
    parser.add_argument("--only", metavar="TEXT", help="only noise clips whose name holds TEXT")
    parser.add_argument("--worker", nargs=2, metavar=("TREE", "JOBS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    from tests.shared_data import shared_root

    audio = shared_root() / "data" / "audio"
    if not (audio / "manifest.json").is_file():
        sys.exit(f"bench/steady_noise.py needs the recordings in {audio} (../shared/data/audio beside the clone)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        mixes = build_mixes(audio, args.seconds, tmp, args.only)
        with checked_out(args.compare) as old_tree:
            runs = ([(f"revision {args.compare}", old_tree)] if old_tree is not None else []) + [("this tree", REPO)]
            results = [(label, *run_tree(tree, mixes, tmp)) for label, tree in runs]
    outcomes = {label: [judge(m, turns[m.path]) for m in mixes] for label, turns, _ in results}
    print(f"== a sentence inside steady noise, {args.seconds:.0f} s each: turn end after the last word (ms), "
          "max cut, sentence in one turn, false turns")
    print(f"{'clip':36} " + " | ".join(f"{label[:24]:>24}" for label, _, _ in results))
    for i, m in enumerate(mixes):
        print(f"{m.name:36} " + " | ".join(f"{_fmt(outcomes[label][i]):>24}" for label, _, _ in results))
    for label, _, cpu in results:
        summary(label, mixes, outcomes[label], cpu)


if __name__ == "__main__":
    main()
