"""End of turn: how long the customer waits after their last word, and how often they are
cut off at a pause in mid-sentence, for the silence-only policy and Smart Turn.

Real speech (../shared/data/audio/speech, or $SHARED_DIR: the clips under 20 s) goes through
the real front end (webrtcvad, Silero, the policy) as a microphone would deliver it:

- finished: each clip, then silence. The wait is the silence the endpointer let pass after
  the last voiced frame (``Utterance.hangover_s``): 700 ms with silence alone.
- paused: each clip with a pause of 400, 600 or 900 ms inserted at a word boundary in its
  middle (the quietest 60 ms between 30 % and 70 % of its length). Cut off = the turn
  ended at that pause (more than one utterance came out).

    .venv/bin/python bench/turn_end.py [--pause-ms 250] [--threshold 0.5] [--hangover-ms 700,1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import VadSettings  # noqa: E402
from speech.audio import read_wav_16k_mono, silence  # noqa: E402
from speech.smart_turn import SmartTurn  # noqa: E402
from speech.turn_end import EndOfTurn  # noqa: E402
from tests.hearing_tools import turns_of, word_gap  # noqa: E402

PAUSES_MS = (400, 600, 900)


def clips() -> list[Path]:
    root = Path(os.environ.get("SHARED_DIR") or REPO.parent / "shared") / "data" / "audio"
    manifest = json.loads((root / "manifest.json").read_text())
    return [root / c["path"] for c in manifest
            if c["kind"] == "speech" and "vad_labeled" not in c["path"] and c["duration_s"] < 20]


async def measure(name: str, make: Callable[[], EndOfTurn | None], audio: list[bytes],
                  vad: VadSettings | None = None) -> dict[str, object]:
    waits, cut = [], {p: 0 for p in PAUSES_MS}
    for pcm in audio:
        finished = await turns_of(pcm, make(), vad)
        if finished:
            waits.append(finished[-1].hangover_s * 1000)
        at = word_gap(pcm)
        for pause in PAUSES_MS:
            if len(await turns_of(pcm[:at] + silence(pause / 1000) + pcm[at:], make(), vad)) > 1:
                cut[pause] += 1
    n = len(audio)
    return {"policy": name, "wait_p50": statistics.median(waits), "wait_p95": sorted(waits)[int(0.95 * (len(waits) - 1))],
            **{f"cut_{p}": cut[p] / n for p in PAUSES_MS}, "n": n}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pause-ms", type=int, default=250)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--hangover-ms", type=lambda v: [int(x) for x in v.split(",")], default=[700],
                        help="silence-only hangovers to compare (comma-separated)")
    args = parser.parse_args()
    audio = [read_wav_16k_mono(p) for p in clips()]
    model = SmartTurn()
    rows = [await measure(f"silence ({ms} ms)", lambda: None, audio, VadSettings(hangover_ms=ms))
            for ms in args.hangover_ms]
    rows += [
            await measure(f"smart turn ({args.pause_ms} ms, p>={args.threshold})",
                          lambda: EndOfTurn(model, args.pause_ms, args.threshold), audio)]
    print(f"{rows[0]['n']} real speech clips; wait = silence after the last voiced frame until the turn ended")
    print(f"{'policy':<32} {'wait p50':>9} {'wait p95':>9} " + " ".join(f"{'cut@' + str(p):>8}" for p in PAUSES_MS))
    for r in rows:
        print(f"{r['policy']:<32} {r['wait_p50']:>7.0f}ms {r['wait_p95']:>7.0f}ms "
              + " ".join(f"{r['cut_' + str(p)]:>8.0%}" for p in PAUSES_MS))


if __name__ == "__main__":
    asyncio.run(main())
