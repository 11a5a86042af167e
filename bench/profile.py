"""The visitor profile on customer phrasings: the typed slots (config/personas/*.yaml, by
type) against the regular expressions they replaced (bench/data/profile_patterns_before.yaml),
in one run: per-slot precision and recall, and the time per utterance.

    .venv/bin/python bench/profile.py [--rounds 5] [--misses] [--dev2-misses] [--chat N] [--cpu N]

The phrasings (bench/data/profile_phrasings.yaml) are scored in two parts: `tuning`, which
the slot types were developed against, and `heldout`, written at the same time and kept out
of the tuning; each is printed on its own. An English item is read by the travel persona, a
German one by the German travel persona (config/personas/reisebuero.yaml); the patterns of
before are English only, and are scored on every item (as a German persona made from them
would have been). Their raw values ("two thousand dollars") are read through the same slot's
type before comparing ("$2,000"), so only finding the value is compared, not its wording.

A value counts when it equals the expected one (any case); for places and needs each value
of the list counts. Precision: right values / values given; recall: right / expected.
Two more sets are scored apart: `profile_dev2.yaml` (159 utterances written like the blind set, by
a helper from the persona and the value format without the code: tuned on) and
`profile_blind.yaml` (133, written from the persona alone: never tuned on, its misses only with
``--blind-misses``). ``--chat N`` reads N lines of each Multi-Session Chat session
(../shared/data/msc), each alone as a visitor's, and counts the lines that fill each slot: open
conversation, where a value set is nearly always wrong (``--chat-show`` prints the parties and
budgets).

Time: ``Profile.update`` over all of a persona's slots, per utterance, pinned to one core
(``--cpu``), after one warm-up pass (a persona's first utterance loads dateparser's language
data, at start, not mid-conversation); p50 / p95 / max over ``--rounds`` passes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config.loader import load_persona  # noqa: E402
from memory.recall.profile import Profile, ProfileSlot, make_slots  # noqa: E402

DATA = ROOT / "bench" / "data"
CHAT = ROOT.parent / "shared" / "data" / "msc"  # Multi-Session Chat: open conversation, no trip in it
PERSONAS = {"en": ROOT / "config" / "personas" / "travel_agent.yaml",
            "de": ROOT / "config" / "personas" / "reisebuero.yaml"}


@dataclass
class Score:
    right: int = 0
    given: int = 0
    expected: int = 0

    def precision(self) -> float | None:
        return self.right / self.given if self.given else None

    def recall(self) -> float | None:
        return self.right / self.expected if self.expected else None


@dataclass
class Run:
    scores: dict[str, Score] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)


def typed_slots() -> dict[str, tuple[ProfileSlot, ...]]:
    slots = {}
    for lang, path in PERSONAS.items():
        persona = load_persona(path)
        slots[lang] = make_slots({k: v.model_dump() for k, v in persona.memory.profile.items()},
                                 persona.vocabulary, persona.language)
    return slots


def pattern_slots() -> tuple[ProfileSlot, ...]:
    before = yaml.safe_load((DATA / "profile_patterns_before.yaml").read_text())
    return make_slots(before["profile"], before["vocabulary"], "en")


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _norm(value: str) -> str:
    return " ".join(value.casefold().split())


def profile_of(slots: tuple[ProfileSlot, ...], item: dict[str, Any], today: date) -> tuple[dict[str, list[str]], float]:
    profile = Profile()
    for line in item.get("before", []):
        profile.update(slots, line, today)
    start = time.perf_counter()
    profile.update(slots, item["say"], today)
    return profile.to_dict(), (time.perf_counter() - start) * 1000


def score(items: list[dict[str, Any]], read, slot_names: list[str], today: date) -> Run:
    run = Run({name: Score() for name in slot_names})
    for item in items:
        got, ms = read(item)
        run.times_ms.append(ms)
        expect = {k: _values(v) for k, v in item["expect"].items()}
        for name in slot_names:
            want = {_norm(v) for v in expect.get(name, [])}
            have = {_norm(v) for v in got.get(name, [])}
            s = run.scores[name]
            s.right += len(want & have)
            s.given += len(have)
            s.expected += len(want)
            if want != have:
                run.misses.append(f"  {name}: {item['say']!r}: want {sorted(want)}, got {sorted(have)}")
    return run


def normalized_by(typed: dict[str, tuple[ProfileSlot, ...]], lang: str, raw: dict[str, list[str]]) -> dict[str, list[str]]:
    """The patterns' raw values read through the typed slot of the same name."""
    by_name = {s.name: s for s in typed[lang]}
    return {name: [by_name[name].normalized(v) if name in by_name else v for v in values]
            for name, values in raw.items()}


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:5.3f}"


def table(title: str, typed: Run, before: Run, names: list[str]) -> None:
    print(f"\n{title}")
    print(f"  {'slot':<13} {'typed P':>8} {'typed R':>8} {'n':>4}   {'before P':>8} {'before R':>8}")
    for name in names:
        t, b = typed.scores[name], before.scores[name]
        print(f"  {name:<13} {_fmt(t.precision()):>8} {_fmt(t.recall()):>8} {t.expected:>4}   "
              f"{_fmt(b.precision()):>8} {_fmt(b.recall()):>8}")


_SETS_APART = {"DEV2": "written like the blind set, from the persona alone; tuned on: bench/data/profile_dev2.yaml",
               "BLIND": "written from the persona alone, never tuned on: bench/data/profile_blind.yaml"}


def _dated(name: str) -> list[dict[str, Any]]:
    """A set's items, each with the set's ``today``."""
    data = yaml.safe_load((DATA / name).read_text())
    return [{**i, "today": data["today"]} for i in data["heldout"]]


def chat(slots: tuple[ProfileSlot, ...], n: int, names: list[str], show: bool) -> None:
    """Open conversation read line by line as a visitor's: how many lines fill each slot. Its people
    talk of their families, jobs and money, not of a trip: a party or budget set there is one the
    robot would quote for."""
    import json
    import random

    for session in sorted(p.name for p in CHAT.iterdir() if (p / "test.txt").is_file()):
        lines = [t["text"] for row in (CHAT / session / "test.txt").read_text().splitlines() if row.strip()
                 for t in json.loads(row)["dialog"]]
        sample = random.Random(1).sample(lines, min(n, len(lines)))
        filled = {name: 0 for name in names}
        for line in sample:
            profile = Profile()
            profile.update(slots, line, date(2026, 12, 5))
            got = profile.to_dict()
            for name in names:
                filled[name] += bool(got.get(name))
            if show and (got.get("party") or got.get("budget")):
                print(f"  chat: {line[:110]!r} -> party {got.get('party')}, budget {got.get('budget')}")
        print(f"chat {session} ({len(sample)} lines): lines filling " + ", ".join(f"{k} {v}" for k, v in filled.items()))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over every utterance")
    parser.add_argument("--misses", action="store_true", help="print the tuning part's misses")
    parser.add_argument("--heldout-misses", action="store_true", help="print the held-out part's misses too")
    parser.add_argument("--dev2-misses", action="store_true", help="print the second development set's misses")
    parser.add_argument("--blind-misses", action="store_true", help="print the blind set's misses (never to tune on)")
    parser.add_argument("--chat", type=int, default=0, metavar="N",
                        help="also read N lines of each Multi-Session Chat session (../shared/data/msc) alone, "
                             "as if said at the counter, and count the slots they fill (small talk: nearly all wrong)")
    parser.add_argument("--chat-show", action="store_true", help="print the chat lines that fill party or budget")
    parser.add_argument("--cpu", type=int, default=None, help="the core to pin to (default: the first allowed)")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        cpu = args.cpu if args.cpu is not None else min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        print(f"pinned to core {cpu}; load average {os.getloadavg()[0]:.1f}")
    phrasings = yaml.safe_load((DATA / "profile_phrasings.yaml").read_text())
    today = phrasings["today"]
    typed = typed_slots()
    before = pattern_slots()
    # the slots the phrasings are about: those the three share (the travel persona has more since
    # consultations: interests, time, children's ages; they are read by bench/consult.py's turns)
    names = [s.name for s in typed["en"] if s.name in {t.name for t in typed["de"]} & {b.name for b in before}]

    def read_typed(item):
        return profile_of(typed[item.get("lang", "en")], item, item.get("today", today))

    def read_before(item):
        got, ms = profile_of(before, item, today)
        return normalized_by(typed, item.get("lang", "en"), got), ms

    for item in phrasings["tuning"]:  # warm-up: dateparser's language data, compiled patterns
        read_typed(item), read_before(item)
    parts = {"tuning": phrasings["tuning"], "heldout": phrasings["heldout"]}
    parts["all"] = parts["tuning"] + parts["heldout"]
    counts = {k: (len(v), sum(1 for i in v if not i["expect"]), sum(1 for i in v if "before" in i or i.get("correction")),
                  sum(1 for i in v if i.get("lang") == "de")) for k, v in parts.items()}
    for k, (n, nothing, corrections, german) in counts.items():
        print(f"{k}: {n} utterances ({nothing} fill nothing, {corrections} corrections, {german} German)")
    runs = {}
    for part, items in parts.items():
        runs[part] = (score(items, read_typed, names, today), score(items, read_before, names, today))
        table(f"{part}: precision and recall per slot (typed slots | the patterns of before)", *runs[part], names)
    def scored_apart(items: list[dict], title: str) -> Run:
        """A set with its own day, English, scored typed and by the patterns of before."""
        typed_run = score(items, read_typed, names, items[0]["today"])
        before_run = score(items, lambda i: (normalized_by(typed, "en", profile_of(before, i, i["today"])[0]), 0.0),
                           names, items[0]["today"])
        table(f"{title} ({len(items)} utterances {_SETS_APART[title]})", typed_run, before_run, names)
        return typed_run

    dev2_typed = scored_apart(_dated("profile_dev2.yaml"), "DEV2")
    blind_typed = scored_apart(_dated("profile_blind.yaml"), "BLIND")
    english = [i for i in parts["all"] if i.get("lang", "en") == "en"]
    table("all, English only (the patterns' own language)", score(english, read_typed, names, today),
          score(english, read_before, names, today), names)
    if args.misses:
        print("\ntuning misses (typed):")
        print("\n".join(runs["tuning"][0].misses) or "  none")
    if args.heldout_misses:
        print("\nheld-out misses (typed):")
        print("\n".join(runs["heldout"][0].misses) or "  none")
    if args.dev2_misses:
        print("\nDEV2 misses (typed):")
        print("\n".join(dev2_typed.misses) or "  none")
    if args.blind_misses:
        print("\nBLIND misses (typed):")
        print("\n".join(blind_typed.misses) or "  none")

    if args.chat and CHAT.is_dir():
        chat(typed["en"], args.chat, names, args.chat_show)

    typed_ms, before_ms = [], []
    for _ in range(args.rounds):  # interleaved, so both see the same machine
        for item in parts["all"]:
            typed_ms.append(read_typed(item)[1])
            before_ms.append(profile_of(before, item, today)[1])
    print(f"\ntime per utterance, {len(typed_ms)} updates ({args.rounds} rounds), one core:")
    for name, ms in (("typed slots", typed_ms), ("patterns of before", before_ms)):
        print(f"  {name:<19} p50 {statistics.median(ms):.3f} ms  p95 {percentile(ms, 0.95):.3f} ms  max {max(ms):.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
