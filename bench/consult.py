"""Consultations: the robot recommends, quotes, keeps the plan and hands a sheet to staff.

Each scripted consultation (bench/data/consult_dev.yaml and consult_dev2.yaml, tuned on; bench/data/consult_blind.yaml,
written from the persona and knowledge files before the code and never tuned on) is played as a
visitor's typed turns through the real controller (``robot chat``'s path: the embedded LLM for
what the robot does not say itself), or through espeak-ng and Whisper (``--voice``). After each
turn with an ``expect`` it checks:
- recommend: every offer recommended meets every hard wish (is in the gold ``fits``); when nothing
  fits, none is recommended and the wish named is the gold one; every total spoken for an offer
  is the gold total;
- plan: the offers of the visitor's plan, in order, and its total;
- handover: a ``handover`` event with a complete sheet (party, the plan priced, the total or an
  open question) whose plan, total and party are the gold ones;
- recap_has: the recap names these offers.
It prints each share, the turns to the first recommendation, the reply length (seconds of
speech, estimated as the robot's budget does), the time a recommendation adds to a turn (p50,
p95; recommend + quote, on one core with ``--one-core``), and the profile's slots at the end
against the gold ones.

    .venv/bin/python bench/consult.py [--sets dev|dev2|blind|all|FILE...] [--voice] [--show] [--one-core]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from decimal import Decimal
from io import StringIO
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SETS = {"dev": ["bench/data/consult_dev.yaml"], "dev2": ["bench/data/consult_dev2.yaml"],
        "blind": ["bench/data/consult_blind.yaml"]}


@dataclass
class Score:
    right: int = 0
    of: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, ok: bool, miss: str) -> None:
        self.of += 1
        self.right += ok
        if not ok:
            self.misses.append(miss)

    def __str__(self) -> str:
        return f"{self.right}/{self.of} ({100 * self.right / self.of:.0f} %)" if self.of else "0/0"


@dataclass
class Report:
    recommend: Score = field(default_factory=Score)
    totals: Score = field(default_factory=Score)
    nothing: Score = field(default_factory=Score)
    plan: Score = field(default_factory=Score)
    handover: Score = field(default_factory=Score)
    recap: Score = field(default_factory=Score)
    profile: Score = field(default_factory=Score)
    invented: int = 0
    to_recommendation: list[int] = field(default_factory=list)
    reply_s: list[float] = field(default_factory=list)
    recommend_ms: list[float] = field(default_factory=list)


def amount(text: str | None) -> int | None:
    if not text:
        return None
    m = re.search(r"\d[\d,]*", text)
    return int(m.group(0).replace(",", "")) if m else None


async def play(path: Path, voice: bool, show: bool) -> Report:
    from config.loader import load_persona, load_settings
    from robot.app.runtime import open_runtime
    from robot.consult.recommend import Wishes, recommend
    from robot.core.events import HandoverEvent
    from robot.speaking.length import spoken_seconds

    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    report = Report()
    heard = _Hearing() if voice else None
    by_persona: dict[Path, list[dict]] = {}
    for item in spec["consultations"]:
        by_persona.setdefault((path.parent / (item.get("persona") or spec["persona"])).resolve(), []).append(item)
    for persona_path, items in by_persona.items():
        persona = load_persona(persona_path)
        settings = load_settings()
        settings.llm.seed = 7
        with tempfile.TemporaryDirectory() as tmp:
            settings.memory.store, settings.memory.db_path = None, Path(tmp) / "memory.sqlite3"
            settings.knowledge.cache_dir = REPO / ".bench-cache"
            async with open_runtime(settings, persona, persona_path, audio_out="text", listen=False) as rt:
                await _understanding_ready(rt)
                for item in items:  # each a new visitor (a returning one by their card)
                    await _consultation(rt, persona, item, report, heard, show, recommend, Wishes, HandoverEvent,
                                        spoken_seconds)
    return report


async def _understanding_ready(rt, wait_s: float = 600.0) -> None:
    """Wait for the knowledge's vectors and the intents' examples: on a busy machine they are
    embedded after the start, and until then the robot reads by words alone. The bench measures
    what the robot understands, not how soon after a start (``main`` lets the embedding run at
    the normal priority: at a low one, beside other work, it was not done in 600 s)."""
    from robot.consult.intents import intent_model

    index = getattr(rt.controller.knowledge, "index", None)
    deadline = time.monotonic() + wait_s
    while index is not None and time.monotonic() < deadline:
        model = intent_model(index)
        if index.ready and (model is None or model.ready):
            return
        await asyncio.sleep(0.2)
    print("warning: the knowledge's vectors were not ready: this run read by words", file=sys.stderr)


async def _consultation(rt, persona, item, report, heard, show, recommend, Wishes, HandoverEvent, spoken_seconds):
    c = rt.controller
    visitor = item.get("visitor") or f"visitor-{item['id']}"
    await c.sessions.start(visitor)
    c.consulting.consult.state.recommended = ()
    first_rec = None
    for n, turn in enumerate(item["turns"], start=1):
        if turn.get("new_session"):
            await c.sessions.end("command")
            await c.sessions.start(visitor)
            c.consulting.consult.state.recommended = ()
        text = await heard.hear(turn["say"], c) if heard else turn["say"]
        before = len(rt.recorder.of(HandoverEvent))
        consult = c.consulting.consult
        last = consult.last if consult else None
        with redirect_stdout(StringIO()):
            result = await c.handle_text(text or "...")
        reply = result.reply_text
        report.reply_s.append(spoken_seconds(reply, persona.rate or 150))
        if show:
            print(f"[{item['id']}] {turn['say']}" + (f" (heard: {text})" if text != turn["say"] else "")
                  + f"\n      -> {reply}")
        rec = consult.last if consult and consult.last is not last else None
        if rec is not None and first_rec is None:
            first_rec = n
            started = time.perf_counter()
            profile = getattr(c.memory, "profile", {})
            recommend(consult.book, Wishes.of(profile, {k: s.type for k, s in persona.memory.profile.items()}))
            report.recommend_ms.append((time.perf_counter() - started) * 1000)
        expect = turn.get("expect") or {}
        where = f"{item['id']} turn {n}"
        if "recommend" in expect:
            _recommended(report, expect["recommend"], rec, reply, where)
        if "plan" in expect:
            _planned(report, expect["plan"], c, consult, where)
        if "handover" in expect:
            _handed(report, expect["handover"], rt.recorder.of(HandoverEvent)[before:], where)
        if "recap_has" in expect:
            report.recap.add(all(name.lower() in reply.lower() for name in expect["recap_has"]),
                             f"{where}: recap without {expect['recap_has']}: {reply[:120]}")
    report.to_recommendation.append(first_rec or 0)
    _profile(report, item.get("profile") or {}, getattr(c.memory, "profile", {}), item["id"])
    await c.sessions.end("command")


def _recommended(report: Report, gold: dict, rec, reply: str, where: str) -> None:
    fits = set(gold.get("fits") or [])
    if rec is None:
        report.recommend.add(False, f"{where}: no recommendation made: {reply[:140]}")
        return
    said = [f.offer.name for f in rec.best]
    if not fits:
        ok = not said and (not gold.get("ruled_out_by") or rec.ruling_wish == gold["ruled_out_by"])
        report.nothing.add(ok, f"{where}: nothing fits ({gold.get('ruled_out_by')}), said {said} / {rec.ruling_wish}")
        report.recommend.add(not said, f"{where}: recommended {said} where nothing fits")
        return
    report.recommend.add(bool(said) and all(s in fits for s in said), f"{where}: recommended {said}, fits {sorted(fits)}")
    for fit in rec.best:
        gold_total = (gold.get("totals") or {}).get(fit.offer.name)
        spoken = fit.quote.total is not None and fit.quote.total.said() in reply
        if gold_total is not None and spoken:
            report.totals.add(int(fit.quote.total.amount) == int(gold_total),
                              f"{where}: {fit.offer.name} total {fit.quote.total.said()}, gold {gold_total}")
        elif spoken and gold_total is None:
            report.totals.add(False, f"{where}: {fit.offer.name} total {fit.quote.total.said()} spoken, gold has none")


def _planned(report: Report, gold: dict, c, consult, where: str) -> None:
    names = (getattr(c.memory, "consultation", None) or {}).get("plan", [])
    ok = names == list(gold.get("offers") or [])
    if ok and "total" in gold and consult is not None:
        from robot.consult.quote import quote
        from robot.consult.recommend import Wishes

        profile = getattr(c.memory, "profile", {})
        wishes = Wishes.of(profile, {k: s.type for k, s in c.persona.memory.profile.items()})
        quotes = [quote(consult.book.named(n), wishes.party, consult.book) for n in names]
        total = sum(int(q.total.amount) for q in quotes if q.total is not None) if all(
            q.total is not None and not q.missing for q in quotes) else None
        ok = total == gold["total"]
        where += f" (total {total}, gold {gold['total']})"
    report.plan.add(ok, f"{where}: plan {names}, gold {gold.get('offers')}")


def _handed(report: Report, gold: dict, events, where: str) -> None:
    from robot.consult.sheet import complete

    sheet = events[-1].sheet if events else None
    if not sheet:
        report.handover.add(False, f"{where}: no handover with a sheet")
        return
    plan = [p["offer"] for p in sheet.get("plan") or []]
    ok = complete(sheet) and (not gold.get("plan") or plan == gold["plan"])
    ok = ok and ("total" not in gold or amount(sheet.get("total")) == gold["total"])
    ok = ok and ("party" not in gold or sheet.get("party") == gold["party"])
    ok = ok and (not gold.get("open") or bool(sheet.get("open")))
    report.handover.add(ok, f"{where}: sheet plan {plan} total {sheet.get('total')} party {sheet.get('party')} "
                            f"open {sheet.get('open')}; gold {gold}")


def _profile(report: Report, gold: dict, profile: dict, where: str) -> None:
    for slot, value in gold.items():
        values = value if isinstance(value, list) else [value]
        got = [v.lower() for v in profile.get(slot, [])]
        report.profile.add(all(str(v).lower() in got for v in values), f"{where}: {slot} {profile.get(slot)} != {value}")


class _Hearing:
    """The visitor's line said by espeak-ng and heard by Whisper tiny.en with the turn's names."""

    def __init__(self) -> None:
        from speech.stt import Transcriber

        self.stt = Transcriber()
        self.stt.load()

    async def hear(self, text: str, controller) -> str:
        from speech.espeak_cli import EspeakCliSynthesizer

        pcm = (await EspeakCliSynthesizer(voice="en-us", rate=150).synthesize(text, sample_rate=16000)).pcm
        return (await self.stt.transcribe(pcm, controller.turn_vocabulary())).text


def show(report: Report, label: str, misses: bool) -> None:
    print(f"\n== {label}")
    print(f"recommendations meeting every hard wish: {report.recommend}; nothing-fits said right: {report.nothing}")
    print(f"spoken totals exactly right: {report.totals}; plans exactly right after each change: {report.plan}")
    print(f"handovers with a complete, right sheet: {report.handover}; recaps naming the plan: {report.recap}")
    print(f"profile slots at the end as gold: {report.profile}")
    turns = [t for t in report.to_recommendation if t]
    print(f"turns to the first recommendation: median {statistics.median(turns) if turns else '-'}; "
          f"reply length p50 {statistics.median(report.reply_s):.1f} s, max {max(report.reply_s):.1f} s")
    if report.recommend_ms:
        ms = sorted(report.recommend_ms)
        print(f"recommend + quote per turn: p50 {statistics.median(ms):.2f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.2f} ms")
    if misses:
        for s in (report.recommend, report.nothing, report.totals, report.plan, report.handover, report.recap,
                  report.profile):
            for m in s.misses:
                print(f"  - {m}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["dev"], help="dev, blind, all, or consultation files")
    parser.add_argument("--voice", action="store_true", help="each line said by espeak-ng and heard by Whisper")
    parser.add_argument("--show", action="store_true", help="every line and reply")
    parser.add_argument("--one-core", action="store_true", help="pin to one core (the ms figures)")
    parser.add_argument("--quiet", action="store_true", help="figures only")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING)
    import memory.recall.knowledge.vectors as vectors

    vectors.yield_to_replies = lambda: None  # the shop's embedding at the normal priority (above)
    if args.one_core and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    names = {**SETS, "all": SETS["dev"] + SETS["dev2"] + SETS["blind"]}
    for name in [s for a in args.sets for s in names.get(a, [a])]:
        report = asyncio.run(play(REPO / name, args.voice, args.show))
        kind = "BLIND" if "blind" in name else "dev"
        show(report, f"{kind}: {Path(name).name}" + (" (voice)" if args.voice else ""), not args.quiet and kind == "dev")


if __name__ == "__main__":
    main()
