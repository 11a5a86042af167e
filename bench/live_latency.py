"""Voice to voice through `robot run` on a PulseAudio virtual sound card, measured from outside.

`robot run` (its defaults: echo canceller on, a greeting) records from a virtual card's
microphone and plays into its loudspeaker (speech/audio/virtual_card.py). A scripted
customer speaks into the microphone as soon as the robot has greeted and listens, then each
time the robot has answered and fallen quiet. Both sides are recorded on one timeline, so each turn's true
voice to voice is measured: from the feed's last voiced sample to the loudspeaker's first
sample of the reply. Beside it, what `robot run` printed for the turn (``voice_to_voice_s``
in its turn log line), and the difference. The first turn's onset as the robot heard it
(its capture clock, a DEBUG line) is set against the feed's: the first words after start-up
must be heard whole (issue 26, item 6).

    .venv/bin/python bench/live_latency.py [--turns N] [--repeat N] [--compare REV] [--keep DIR] [--echo DB]

``--echo DB`` lets the microphone hear the loudspeaker, DB down (``VirtualCard.echo``), as in a
room. The customer here never speaks over the robot, so every time the robot stopped for
speech while it spoke ("barge-in" or "yield" in its log) it stopped for its own echo: the
count is printed per session, with the customer's words as the robot remembered them (the
echo, taken for the customer going on, is merged into them). The true voice to voice is not
measured then: the microphone's feed carries the robot's echo, so its last voiced sample is
the robot's, not the customer's.

``--compare REV`` also runs git revision REV (a temporary worktree), alternating with this
tree, so both see the same machine. Figures depend on the machine and its load: say which.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.figures import ms  # noqa: E402
from bench.revision import checked_out  # noqa: E402

from speech.audio.virtual_card import MonitorRecording, VirtualCard  # noqa: E402

CUSTOMER = [
    "Hello, my name is Ken and I would like to visit Kyoto in April.",
    "We are two adults and our budget is about two thousand dollars.",
    "What temples should we see there?",
    "How long is the train from Tokyo to Kyoto?",
    "Can you recommend a hotel near the station?",
    "Is April a good time for the cherry blossoms?",
    "What food should we try in Kyoto?",
    "Thank you, that is all for today.",
]
VOICED = 0.01  # |sample| above this is voice (espeak-ng's pauses are digital silence)
ANSWER_WAIT_S = 90.0  # for the robot's turn log line after a line was said (a loaded machine)
QUIET_S = 1.2  # the loudspeaker silent this long: the reply is over


@dataclass
class Turn:
    line: int
    true_s: float | None  # the feed's last voiced sample -> the loudspeaker's first reply sample
    printed_s: float | None  # voice_to_voice_s in robot run's turn log line
    heard_onset_error_s: float | None = None  # robot's onset minus the feed's (the first turn)
    note: str = ""  # what the robot did with a line it did not answer
    heard: str | None = None  # the customer's words as the robot remembered them


def synthesize(lines: list[str], into: Path) -> list[Path]:
    paths = []
    for i, text in enumerate(lines):
        path = into / f"customer_{i}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us+m3", "-s", "150", "-w", str(path), text], check=True)
        paths.append(path)
    return paths


def _turn_lines(log: Path) -> list[dict]:
    return [json.loads(line.split("robot.turn: ", 1)[1]) for line in log.read_text().splitlines()
            if "robot.turn: " in line]


def _ignored(log: Path) -> list[str]:
    """What the robot logged of each utterance it heard and did not answer."""
    return [line.split(": ", 1)[1] for line in log.read_text().splitlines() if " ignored" in line and ": " in line]


def _captured(log: Path) -> list[tuple[float, float]]:
    """(onset, end) of each utterance on the robot's capture clock (speech/audio/capture.py)."""
    found = re.findall(r"utterance captured from ([\d.]+) to ([\d.]+)", log.read_text())
    return [(float(a), float(b)) for a, b in found]


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def voiced_extent(rec: MonitorRecording, start: float, end: float) -> tuple[float, float] | None:
    """First and last voiced moment (time.monotonic()) the sink carried between two moments."""
    audio = rec.samples()
    a, b = rec.sample_at(start), min(rec.sample_at(end), len(audio))
    loud = np.flatnonzero(np.abs(audio[a:b]) > VOICED)
    if not len(loud):
        return None
    return rec.time_of(a + int(loud[0])), rec.time_of(a + int(loud[-1]) + 1)


def run_session(tree: Path, lines: list[str], work: Path, echo_db: float | None = None) -> tuple[list[Turn], str]:
    """One `robot run` in ``tree`` on a fresh virtual card, the customer saying ``lines``; the
    loudspeaker heard by the microphone ``echo_db`` down where given."""
    work.mkdir(parents=True, exist_ok=True)
    wavs = synthesize(lines, work)
    settings = work / "settings.yaml"
    # the anonymous customer's memory kept a day (not deleted at the exit): what was heard, per line
    settings.write_text(f"memory:\n  db_path: {work / 'memory.sqlite3'}\n  anonymous_retention_days: 1\n"
                        "logging:\n  level: DEBUG\n")
    log = work / "robot.err"
    with VirtualCard(work) as card:
        if echo_db is not None:
            card.echo(echo_db)
        feed, speaker = card.record("mic_feed"), card.record("speaker")
        _wait(lambda: feed.started() and speaker.started(), 10)
        with log.open("w") as err:
            robot = subprocess.Popen([sys.executable, "-m", "robot", "run", "--settings", str(settings)],
                                     cwd=tree, env=card.env, stdout=subprocess.DEVNULL, stderr=err)
        said: list[tuple[float, float]] = []  # when each line was played (start, end)
        printed: list[dict | None] = []  # the turn log line each line got (None: ignored or missed)
        notes: dict[int, str] = {}
        try:
            # Both lines: a revision that greets before it opens the microphone prints them the
            # other way round; either way the first line is said right after the greeting.
            if not _wait(lambda: all(s in log.read_text() for s in ("recording from", "is listening"))
                         or robot.poll() is not None, 300):
                raise RuntimeError("robot run did not open the microphone")
            for wav in wavs:  # the first right after the greeting, as a customer would
                turns, ignored = len(_turn_lines(log)), len(_ignored(log))
                started = time.monotonic()
                card.play(wav)
                said.append((started, time.monotonic()))
                _wait(lambda: len(_turn_lines(log)) > turns or len(_ignored(log)) > ignored
                      or robot.poll() is not None, ANSWER_WAIT_S)
                _wait(lambda: speaker.quiet_since(QUIET_S), 60)
                new = _turn_lines(log)[turns:]
                printed.append(new[0] if new else None)
                if not new:
                    notes[len(printed) - 1] = "; ".join(_ignored(log)[ignored:]) or "not heard"
            robot.send_signal(signal.SIGINT)
            robot.wait(60)
        finally:
            robot.kill()
            feed.stop()
            speaker.stop()
        for name, rec in (("feed", feed), ("speaker", speaker)):  # for a look afterwards (--keep)
            np.savez_compressed(work / f"{name}.npz", samples=rec.samples(), sample_0_at=rec.time_of(0))
        turns = _measure(said, feed, speaker, printed, _captured(log), echo_db is None)
        for i, note in notes.items():
            turns[i].note = note
        for turn, words in zip([t for t, row in zip(turns, printed) if row], _heard(tree, work / "memory.sqlite3")):
            turn.heard = words
        return turns, log.read_text()


def _heard(tree: Path, db: Path) -> list[str]:
    """The customer's turns in the robot's memory, in order (none from a revision that deletes them)."""
    out = subprocess.run([sys.executable, "-m", "robot", "memory", "export", "--db", str(db)], cwd=tree,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return []
    return [t["text"] for user in json.loads(out.stdout)["users"] for t in user["turns"] if t["role"] == "user"]


def _measure(said: list[tuple[float, float]], feed: MonitorRecording, speaker: MonitorRecording,
             printed: list[dict | None], captured: list[tuple[float, float]], true: bool = True) -> list[Turn]:
    """Each line's turn: its true voice to voice where the feed holds the customer alone (``true``)."""
    turns = []
    for i, (start, end) in enumerate(said):
        if not true:
            row = printed[i] if i < len(printed) else None
            turns.append(Turn(i, None, row.get("voice_to_voice_s") if row else None))
            continue
        voice = voiced_extent(feed, start - 0.5, end + 0.5)
        until = said[i + 1][0] if i + 1 < len(said) else end + 120
        reply = voiced_extent(speaker, voice[1], until) if voice else None
        row = printed[i] if i < len(printed) else None
        true = reply[0] - voice[1] if voice and reply and row else None  # an ignored line's "reply" is the next
        turn = Turn(i, true, row.get("voice_to_voice_s") if row else None)
        if i == 0 and voice and captured:
            turn.heard_onset_error_s = captured[0][0] - voice[0]
        turns.append(turn)
    return turns


def self_cuts(log: str) -> tuple[int, int]:
    """How often the robot stopped for speech while it spoke: (barge-ins, yields)."""
    return log.count("barge-in: speech"), log.count("yield: speech")


def print_report(label: str, turns: list[Turn]) -> None:
    if all(t.true_s is None for t in turns):  # --echo: the feed carries the robot's voice too
        printed = [t.printed_s for t in turns if t.printed_s is not None]
        print(f"\n{label}: {len(printed)} of {len(turns)} customer lines answered; true voice to voice not "
              f"measured (the feed carries the echo); printed p50 / p95 / max {ms(printed, 0.5)} / "
              f"{ms(printed, 0.95)} / {ms(printed, 1.0)} ms")
        return
    both = [t for t in turns if t.true_s is not None and t.printed_s is not None]
    true = [t.true_s for t in both]
    printed = [t.printed_s for t in both]
    diff = [t.true_s - t.printed_s for t in both]  # type: ignore[operator]
    print(f"\n{label}: {len(both)} of {len(turns)} customer lines answered and measured")
    print(f"{'':28}{'median':>8}{'p95':>8}{'max':>8}   (ms)")
    for name, values in (("true voice to voice", true), ("printed voice to voice", printed)):
        print(f"{name:28}{ms(values, 0.5):>8}{ms(values, 0.95):>8}{ms(values, 1.0):>8}")
    print(f"{'true - printed':28}{ms(diff, 0.5):>8}{ms(diff, 0.95):>8}{ms(diff, 1.0):>8}"
          f"   |diff| max {max((abs(d) for d in diff), default=0) * 1000:.0f} ms")
    onsets = [t.heard_onset_error_s for t in turns if t.heard_onset_error_s is not None]
    if onsets:
        print("first turn heard from (robot's onset - feed's onset): "
              + ", ".join(f"{o * 1000:+.0f} ms" for o in onsets))
    else:
        print("first turn heard from: no capture-clock line (a revision without it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=len(CUSTOMER), help="customer lines per session (<= 8)")
    parser.add_argument("--repeat", type=int, default=1, help="sessions per tree")
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV, alternating with this tree")
    parser.add_argument("--keep", type=Path, help="keep the recordings and logs in this folder")
    parser.add_argument("--echo", type=float, metavar="DB", help="the microphone hears the loudspeaker DB down")
    args = parser.parse_args()
    lines = CUSTOMER[: args.turns]
    results: dict[str, list[Turn]] = {"this tree": []}
    cuts: dict[str, list[tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp, checked_out(args.compare) as old:
        work = args.keep or Path(tmp)
        for n in range(args.repeat):
            trees = ([(f"revision {args.compare}", old)] if old else []) + [("this tree", REPO)]
            for label, tree in trees:
                turns, log = run_session(tree, lines, work / f"{label.replace(' ', '_')}_{n}", args.echo)
                results.setdefault(label, []).extend(turns)
                cuts.setdefault(label, []).append(self_cuts(log))
    for label, turns in results.items():
        print_report(label, turns)
        if args.echo is not None:
            sessions = cuts.get(label, [])
            print(f"the robot stopped for its own echo (the loudspeaker heard {args.echo:g} dB down; barge-ins + "
                  f"yields, per session): {', '.join(f'{b}+{y}' for b, y in sessions)}; sessions with none: "
                  f"{sum(1 for b, y in sessions if b + y == 0)} of {len(sessions)}")
        for t in turns:
            if t.line == 0:
                print("  a session:")
            true = "-" if t.true_s is None else f"{t.true_s * 1000:.0f}"
            printed = "-" if t.printed_s is None else f"{t.printed_s * 1000:.0f}"
            print(f"    line {t.line}: true {true} ms, printed {printed} ms" + (f" (no turn: {t.note})" if t.note else "")
                  + (f"; heard {t.heard!r}" if t.heard is not None else ""))


if __name__ == "__main__":
    main()
