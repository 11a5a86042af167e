"""Whisper's encoder window (``stt.window_s``): speech to text's time and what it hears, per
window, on the same audio in one run.

faster-whisper pads every turn to Whisper's 30 s window and encodes all of it; the robot's
Transcriber encodes the turn and 2 s after it, at least ``window_s``. Per window this prints:
- the shared read clips (../shared/data/audio/speech, under 29 s), whole and cut at 60 % (an
  early transcript's kind of audio): word error rate against their reference text (the cut
  ones against the whole clip's transcript at 30 s: only the change is counted there), and
  speech to text's time p50 / p95;
- every shared noise clip, two 4 s pieces: the words the guard let through (false words);
- the place names in espeak-ng lines with the persona's vocabulary (bench/hearing.py's trial).

    .venv/bin/python bench/stt_window.py [--windows 30,10] [--no-names]

Figures depend on the machine: compare windows within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import SttSettings  # noqa: E402
from speech.audio import read_wav_16k_mono  # noqa: E402
from speech.stt import Transcriber  # noqa: E402
from speech.types import SAMPLE_RATE  # noqa: E402
from tests.hearing_tools import wer  # noqa: E402
from tests.shared_data import shared_root  # noqa: E402

NOISE_PIECE_S = 4.0


def speech_clips(audio: Path) -> list[tuple[str, bytes, str]]:
    """(name, pcm, reference text or "" for a cut clip)."""
    manifest = json.loads((audio / "manifest.json").read_text())
    clips = []
    for c in manifest:
        if c["kind"] == "speech" and "vad_labeled" not in c["path"] and c["duration_s"] < 29:
            pcm = read_wav_16k_mono(audio / c["path"])
            cut = len(pcm) * 6 // 10 // 2 * 2
            name = Path(c["path"]).stem
            clips += [(name, pcm, c["transcript_or_label"]), (name + "[:60%]", pcm[:cut], "")]
    return clips


def noise_pieces(audio: Path) -> list[tuple[str, bytes]]:
    pieces = []
    for path in sorted((audio / "noise").glob("*.wav")):
        pcm, size = read_wav_16k_mono(path), int(NOISE_PIECE_S * SAMPLE_RATE) * 2
        pieces += [(f"{path.stem}@{at}", pcm[at * size: (at + 1) * size])
                   for at in (0, 1) if len(pcm) >= (at + 1) * size]
    return pieces


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def run_window(window: float, clips: list[tuple[str, bytes, str]], noise: list[tuple[str, bytes]],
                     whole: dict[str, str]) -> dict[str, str]:
    t = Transcriber(SttSettings(window_s=window))
    await t.aload()
    times, errors, changed = [], [], []
    for name, pcm, reference in clips:
        heard = await t.transcribe(pcm)
        times.append(heard.stt_s)
        if reference:
            errors.append(wer(reference, heard.text))
            whole.setdefault(name, heard.text)
        else:
            changed.append(wer(whole.setdefault(name, heard.text), heard.text))
    false_words = []
    for name, pcm in noise:
        heard = await t.transcribe(pcm)
        times.append(heard.stt_s)
        if heard.text:
            false_words.append(f"{name}: {heard.text!r}")
    t.close()
    return {"window": f"{window:g} s", "stt p50": f"{1000 * statistics.median(times):.0f} ms",
            "stt p95": f"{1000 * p95(times):.0f} ms", "WER (whole clips)": f"{statistics.mean(errors):.1%}",
            "cut clips changed": f"{statistics.mean(changed):.1%}",
            "noise with words": f"{len(false_words)}/{len(noise)}"
                                + (f" ({'; '.join(false_words)})" if false_words else "")}


async def names(window: float) -> None:
    from bench.hearing import OTHER_LINES, PLACE_LINES, _names_heard
    from config.loader import DEFAULT_PERSONA, load_persona
    from robot.dialogue.knowledge import ShopKnowledge

    knowledge = ShopKnowledge.of_persona(load_persona(DEFAULT_PERSONA), 300)
    t = Transcriber(SttSettings(window_s=window))
    await t.aload()
    for title, lines in (("scenario lines", PLACE_LINES), ("other lines", OTHER_LINES)):
        hits, _, stt_s = await _names_heard(t, knowledge, lines, "now")
        print(f"  {window:g} s, {title}: " + ", ".join(f"{w} {a}/{b}" for w, (a, b) in hits.items() if b)
              + f"; speech to text {stt_s * 1000:.0f} ms per line", flush=True)
    t.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=lambda v: [float(x) for x in v.split(",")], default=[30.0, 10.0],
                        help="encoder windows in seconds (comma-separated)")
    parser.add_argument("--no-names", action="store_true", help="skip the place-name trial (espeak-ng lines)")
    args = parser.parse_args()
    audio = shared_root() / "data" / "audio"
    clips, noise, whole = speech_clips(audio), noise_pieces(audio), {}
    print(f"{len(clips) // 2} read clips (whole and cut at 60 %), {len(noise)} noise pieces of {NOISE_PIECE_S:g} s")
    rows = [await run_window(w, clips, noise, whole) for w in args.windows]
    for row in rows:
        print("  " + " | ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    if not args.no_names:
        print("place names heard (espeak-ng voices x lines, the persona's vocabulary as hotwords):")
        for window in args.windows:
            await names(window)


if __name__ == "__main__":
    asyncio.run(main())
