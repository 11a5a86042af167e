"""Resampling speed: the pre-reshape numpy polyphase filter against soxr (the one in use).

Measures one whole-buffer call on 60 s of audio for the conversions the robot makes:
a 48 kHz microphone -> 16 kHz, espeak's 22050 Hz -> 16 kHz, and 16 kHz -> 48 kHz for
playback; plus the microphone path, block by block in 20 ms blocks. The numpy baseline
is not kept in the tree: it is loaded from git history at run time (the last commit that
still has it); without git, or outside the checkout, only soxr is measured.

    .venv/bin/python bench/resample.py [--seconds 60] [--repeat 5] [--baseline-rev REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speech.audio.resample import StreamResampler, resample  # noqa: E402

MODULE = "speech/audio/resample.py"
MARK = "def _polyphase_filter"  # only the numpy implementation has it
CASES = [(48000, 16000), (22050, 16000), (16000, 48000)]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _show(rev: str) -> str:
    """The resampler module's text at ``rev``; empty where git or the file is missing."""
    try:
        return _git("show", f"{rev}:{MODULE}")
    except (OSError, subprocess.CalledProcessError):
        return ""


def load_baseline(rev: str | None) -> tuple[ModuleType, str] | None:
    """The numpy resampler module from git history, and the revision it came from."""
    if rev is None:  # HEAD while it still has the numpy filter, else the commit before its removal
        rev = "HEAD"
        if MARK not in _show(rev):
            try:
                changed = _git("log", "--format=%H", f"-S{MARK}", "--", MODULE).split()
            except (OSError, subprocess.CalledProcessError):
                return None
            rev = changed[0] + "^" if changed else rev
    source = _show(rev)
    if MARK not in source:
        return None
    path = Path(tempfile.mkdtemp()) / "resample_numpy_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("resample_numpy_baseline", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, _git("rev-parse", "--short", rev).strip()


def ms_per_call(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: filter design, caches
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def streamed(factory: Callable[[int, int], object], x: np.ndarray, src: int, dst: int) -> np.ndarray:
    conv = factory(src, dst)
    block = src // 50  # 20 ms
    parts = [conv.process(x[i : i + block]) for i in range(0, len(x), block)]
    return np.concatenate(parts + [conv.flush()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=5, help="best of N timed calls")
    parser.add_argument("--baseline-rev", help="git revision holding the numpy resampler (default: found)")
    args = parser.parse_args()

    baseline = load_baseline(args.baseline_rev)
    if baseline is None:
        print("numpy baseline: not found in git history; measuring soxr only")
    else:
        print(f"numpy baseline: pre-reshape polyphase filter from {MODULE} at {baseline[1]}")
    rng = np.random.default_rng(0)
    print(f"{args.seconds:g} s of audio (440 Hz tone + white noise), best of {args.repeat}, ms per call;")
    print("max diff: largest sample difference between the two outputs (full scale 1.0)")
    print(f"{'conversion':<26}{'numpy':>10}{'soxr':>10}{'numpy/soxr':>12}{'max diff':>10}")
    rows = [(f"{s} -> {d}", s, d, False) for s, d in CASES] + [("48000 -> 16000, 20 ms", 48000, 16000, True)]
    for label, src, dst, blocks in rows:
        t = np.arange(int(args.seconds * src)) / src
        x = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(len(t))).astype(np.float32)
        if blocks:
            new: Callable[[], np.ndarray] = lambda: streamed(StreamResampler, x, src, dst)  # noqa: E731
        else:
            new = lambda: resample(x, src, dst)  # noqa: E731
        soxr_ms = ms_per_call(new, args.repeat)
        if baseline is None:
            print(f"{label:<26}{'-':>10}{soxr_ms:>10.1f}{'-':>12}{'-':>10}")
            continue
        old_mod = baseline[0]
        if blocks:
            old: Callable[[], np.ndarray] = lambda: streamed(old_mod.StreamResampler, x, src, dst)  # noqa: E731
        else:
            old = lambda: old_mod.resample(x, src, dst)  # noqa: E731
        numpy_ms = ms_per_call(old, args.repeat)
        a, b = old(), new()
        n = min(len(a), len(b))
        diff = float(np.abs(a[: n - 200] - b[: n - 200]).max())  # pass bands differ: 95 % vs 91 %
        print(f"{label:<26}{numpy_ms:>10.1f}{soxr_ms:>10.1f}{numpy_ms / soxr_ms:>11.1f}x{diff:>10.4f}")


if __name__ == "__main__":
    main()
