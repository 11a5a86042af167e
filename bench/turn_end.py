"""End of turn: how long the customer waits after their last word, and how often they are
cut off at a pause in mid-clause, per end-of-turn policy, on two sets of real recordings
(bench/pause_sets.py builds them; the audio is read from ../shared or $SHARED_DIR):

- (a) conversation: gaps inside one speaker's turn (pauses: the turn must not end) and gaps
  before another speaker (finished turns), cut out of the dialogue recordings; pauses at
  their own length and made 400-1,200 ms long;
- (b) read speech: pauses of 400, 600, 900 and 1,200 ms after a word that cannot end a
  sentence, and the clips ended at their sentence ends (finished turns).

Every case goes through the real front end (webrtcvad, Silero, the policy) as a microphone
would deliver it, then 1.5 s of silence. wait = the silence the endpointer let pass after
the last voiced frame of a finished turn (``Utterance.hangover_s`` less ``overhang_s``: the
customer's voice ended about 100 ms before that frame, and robot's printed figures count
from there, but the policies are compared on the endpointer's own wait, as older revisions
report it); cut = a turn ended at the pause.

    .venv/bin/python bench/turn_end.py [--compare REV] [--parts a,b] [--pause-ms 500,600]
        [--threshold 0.5] [--hangover-ms 1000] [--words [--words-ms 800] [--words-at-once] [--stt-window 10]
        [--hold-ms 1600]]

Rows: silence alone at each ``--hangover-ms``; this tree's default (as robot/app/runtime.py
builds it from config/schema.py's defaults, but with no words at the pause: no speech to text
runs in it); Smart Turn alone at each short bound; with ``--words`` the transcript of the turn
up to the pause too (the robot's Whisper, known only once it would be: 200 ms after the last
word plus the time it took here): silence with unfinished words held open for ``--hold-ms``
(``vad.unfinished_hold_ms``: the robot's default), and Smart Turn with the words used when ready,
waited for, and (``--words-ms``) trusted alone at a longer pause, with and without the hold;
``--words-at-once`` as if
speech to text took no time (a faster machine's upper bound); and with ``--compare REV`` the
default of git revision REV (checked out in a temporary worktree, run in a subprocess on the
same cases in the same run).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.revision import checked_out  # noqa: E402

from bench.pause_sets import PAUSES_MS, Case, conversation_cases, read_speech_cases  # noqa: E402
from config.schema import VadSettings  # noqa: E402
from speech.turn_end import EndOfTurn, UnfinishedHold  # noqa: E402
from speech.types import Transcript  # noqa: E402

SILENCE_AFTER_S = 2.5  # after each case: longer than any hold, so a turn ends on its own, not at the end
VERBOSE = False  # --verbose: each cut and each finished turn, with what the policy knew

# Run inside a checkout (this one or an older one): the front end the robot builds from its
# default settings (echo cancelling off: no loudspeaker here), over each case in CASES_DIR.
# Prints one line per case: the utterances' (t_end, hangover_s).
_COLLECT = r"""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, ".")
from config.schema import BargeInSettings, Settings
from robot.app.runtime import _front_end
from tests.hearing_tools import events_of
from speech.types import Utterance

async def main():
    settings = Settings(barge_in=BargeInSettings(echo_cancel=False))
    for path in sorted(Path(sys.argv[1]).glob("*.pcm"), key=lambda p: int(p.stem)):
        events = await events_of(path.read_bytes(), _front_end(settings))
        print("CASE " + json.dumps([path.stem, [[e.t_end, e.hangover_s - getattr(e, "overhang_s", 0.0)] for e in events if isinstance(e, Utterance)]]))

asyncio.run(main())
"""


@dataclass
class Outcome:
    """What a policy did with one case: its utterances' (t_end, hangover_s)."""

    case: Case
    turns: list[tuple[float, float]]

    @property
    def cut(self) -> bool:
        """A turn ended at the pause (and another one followed it)."""
        end = self.case.at_s + self.case.pause_ms / 1000
        return any(self.case.at_s - 0.6 <= t <= end for t, _ in self.turns[:-1])

    @property
    def wait_ms(self) -> float | None:
        return self.turns[-1][1] * 1000 if self.turns else None


@dataclass
class Row:
    policy: str
    outcomes: list[Outcome] = field(default_factory=list)

    def figures(self, part: str) -> dict[str, str]:
        mine = [o for o in self.outcomes if o.case.part == part]
        waits = sorted(w for o in mine if o.case.kind == "finished" and (w := o.wait_ms) is not None)
        out = {"n": f"{len(waits)}", "wait p50": f"{statistics.median(waits):.0f}" if waits else "-",
               "wait p95": f"{waits[min(len(waits) - 1, round(0.95 * (len(waits) - 1)))]:.0f}" if waits else "-"}
        pauses = [o for o in mine if o.case.kind == "pause"]
        if part == "a":
            real = [o for o in pauses if o.case.real]
            out["own gap"] = f"{sum(o.cut for o in real)}/{len(real)}"
        for ms in PAUSES_MS:
            at = [o for o in pauses if o.case.pause_ms == ms and not o.case.real]
            out[f"cut@{ms}"] = f"{sum(o.cut for o in at) / len(at):.0%} ({sum(o.cut for o in at)}/{len(at)})" if at \
                else "-"
        return out


async def run_policy(name: str, cases: list[Case], make: Callable[[], EndOfTurn | None],
                     vad: VadSettings | None = None, hold: Callable[[], UnfinishedHold] | None = None) -> Row:
    from speech.types import Utterance
    from tests.hearing_tools import events_of, front_end

    row = Row(name)
    for case in cases:
        policy = make()
        ended: list[str] = []  # --verbose: what the policy knew at each early end
        if VERBOSE and policy is not None:
            _log_ends(policy, ended)
        fe = front_end(vad=vad, turn_end=policy, hold=hold() if hold is not None else None)
        events = await events_of(case.pcm, fe, silence_after_s=SILENCE_AFTER_S)
        row.outcomes.append(outcome := Outcome(case, [(e.t_end, e.hangover_s - e.overhang_s) for e in events
                                                      if isinstance(e, Utterance)]))
        if VERBOSE and policy is not None and (outcome.cut or case.kind == "finished"):
            print(f"  {name[:20]} {case.kind} {case.pause_ms} cut={outcome.cut} wait={outcome.wait_ms} "
                  f"p={policy.last_probability} words={policy.last_text!r} | {case.source}; ended: {ended}")
    return row


def _log_ends(policy: EndOfTurn, ended: list[str]) -> None:
    """Note what the policy knew each time it ended a turn early (silence, probability, words)."""
    decide = policy.finished

    async def finished(endpointer):  # type: ignore[no-untyped-def]
        done = await decide(endpointer)
        if done:
            assert endpointer.pause is not None
            ended.append(f"{endpointer.pause[1]:.0f} ms p={policy.last_probability or 0:.2f} {policy.last_text!r}")
        return done

    policy.finished = finished  # type: ignore[method-assign]


def run_checkout(name: str, tree: Path, cases: list[Case]) -> Row:
    """The default front end of the checkout ``tree`` over the cases, in a subprocess."""
    with tempfile.TemporaryDirectory() as folder:
        for i, case in enumerate(cases):
            (Path(folder) / f"{i}.pcm").write_bytes(case.pcm)
        done = subprocess.run([sys.executable, "-c", _COLLECT, folder], cwd=tree, capture_output=True, text=True)
    lines = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    if done.returncode or len(lines) != len(cases):
        sys.exit(f"the run in {tree} failed:\n{done.stderr[-2000:]}")
    return Row(name, [Outcome(cases[int(i)], [tuple(t) for t in turns]) for i, turns in lines])


class Words:
    """The transcript of the turn up to the pause (the robot's Whisper, its last word placed
    as the robot's early transcript places it), cached by audio; records how long each took."""

    def __init__(self, window_s: float | None = None) -> None:
        from config.schema import SttSettings
        from speech.stt import Transcriber

        self._stt = Transcriber(SttSettings() if window_s is None else SttSettings(window_s=window_s))
        self._stt.load()  # not in the first pause's time
        self._cache: dict[str, Transcript] = {}
        self.seconds: list[float] = []

    def at_once(self, pcm: bytes) -> Transcript:
        """The same words, as if speech to text took no time."""
        return dataclasses.replace(self(pcm), stt_s=0.0)

    def __call__(self, pcm: bytes) -> Transcript:
        key = hashlib.sha1(pcm).hexdigest()
        if key not in self._cache:
            self._cache[key] = self._stt.transcribe_sync(pcm, words_end=True)
            self.seconds.append(self._cache[key].stt_s)
        return self._cache[key]



def print_table(rows: list[Row], part: str, count: str) -> None:
    title = {"a": "(a) conversation", "b": "(b) read speech"}[part]
    print(f"\n{title}: {count}")
    columns = list(rows[0].figures(part))
    print(f"{'policy':<44} " + " ".join(f"{c:>13}" for c in columns))
    for row in rows:
        print(f"{row.policy:<44} " + " ".join(f"{v:>13}" for v in row.figures(part).values()))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV's default policy")
    parser.add_argument("--parts", default="a,b", help="which sets: a, b or a,b")
    parser.add_argument("--pause-ms", type=lambda v: [int(x) for x in v.split(",")], default=[VadSettings().pause_ms],
                        help="the policy's short bounds to compare (comma-separated)")
    parser.add_argument("--threshold", type=float, default=VadSettings().turn_complete_threshold)
    parser.add_argument("--hangover-ms", type=lambda v: [int(x) for x in v.split(",")], default=[1000],
                        help="silence-only hangovers to compare (comma-separated)")
    parser.add_argument("--words", action="store_true", help="also the policy with the transcript at the pause")
    parser.add_argument("--words-ms", type=lambda v: [int(x) for x in v.split(",") if x], default=[],
                        help="with --words: pauses after which finished-looking words end the turn alone")
    parser.add_argument("--limit", type=int, default=0, help="every Nth case only (a quick look)")
    parser.add_argument("--words-at-once", action="store_true",
                        help="with --words: also as if the transcript were ready at the pause")
    parser.add_argument("--stt-window", type=float, default=None, metavar="S",
                        help="with --words: Whisper's encoder window (stt.window_s; default: the setting's)")
    parser.add_argument("--hold-ms", type=int, default=VadSettings().unfinished_hold_ms,
                        help="with --words: silence after unfinished words (vad.unfinished_hold_ms) in the rows "
                             "marked 'hold'")
    parser.add_argument("--verbose", action="store_true", help="print each cut and finished turn")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    parts = args.parts.split(",")
    cases = (conversation_cases() if "a" in parts else []) + (read_speech_cases() if "b" in parts else [])
    if args.limit:
        cases = cases[:: args.limit]
    from speech.smart_turn import SmartTurn

    model = SmartTurn()
    rows = [await run_policy(f"silence ({ms} ms)", cases, lambda: None, VadSettings(hangover_ms=ms))
            for ms in args.hangover_ms]
    rows.append(run_checkout("this tree's default, no words", REPO, cases))
    words = Words(args.stt_window) if args.words else None
    hold = (lambda: UnfinishedHold(args.hold_ms, words)) if words is not None else None
    if hold is not None:  # what the robot does by default: the words at the pause may hold it open
        rows += [await run_policy(f"silence ({ms} ms), hold {args.hold_ms} ms", cases, lambda: None,
                                  VadSettings(hangover_ms=ms), hold) for ms in args.hangover_ms]
    for ms in args.pause_ms:
        rows.append(await run_policy(f"smart turn ({ms} ms, p>={args.threshold})", cases,
                                     lambda: EndOfTurn(model, ms, args.threshold)))
        if words is None:
            continue
        rows.append(await run_policy(f"+ words when ready ({ms} ms)", cases,
                                     lambda: EndOfTurn(model, ms, args.threshold, words)))
        rows.append(await run_policy(f"+ waits for the words ({ms} ms)", cases,
                                     lambda: EndOfTurn(model, ms, args.threshold, words, wait_for_words=True)))
        for alone in args.words_ms:
            rows.append(await run_policy(f"+ waits, words alone at {alone} ms ({ms} ms)", cases,
                                         lambda: EndOfTurn(model, ms, args.threshold, words, True, alone)))
            rows.append(await run_policy(f"  the same, hold {args.hold_ms} ms", cases,
                                         lambda: EndOfTurn(model, ms, args.threshold, words, True, alone), hold=hold))
        if args.words_at_once:  # what a faster speech to text would give: the words known at the pause
            rows.append(await run_policy(f"+ waits, words at once ({ms} ms)", cases,
                                         lambda: EndOfTurn(model, ms, args.threshold, words.at_once, True)))
            for alone in args.words_ms:
                rows.append(await run_policy(f"+ words at once, alone at {alone} ms ({ms} ms)", cases,
                                             lambda: EndOfTurn(model, ms, args.threshold, words.at_once, True, alone)))
    if args.compare:
        with checked_out(args.compare) as old:
            rows.append(run_checkout(f"{args.compare}'s default", old, cases))
    for part in parts:
        mine = [c for c in cases if c.part == part]
        print_table(rows, part, f"{sum(c.kind == 'finished' for c in mine)} finished turns, "
                                f"{sum(c.kind == 'pause' for c in mine)} pauses; wait in ms")
    if words is not None and words.seconds:
        s = sorted(words.seconds)
        print(f"\nthe transcript at the pause took {statistics.median(s) * 1000:.0f} ms (p50), "
              f"{s[round(0.95 * (len(s) - 1))] * 1000:.0f} ms (p95) on this machine; the robot starts it 200 ms "
              "after the last word (Paused), so it is ready at the short bound only if that is longer")


if __name__ == "__main__":
    asyncio.run(main())
