"""Answers from the shop's knowledge, through the real reply path.

Each question of a question set (bench/questions/*.yaml) is put to the robot as a visitor's
typed turn (``DialogueController.handle_text``: the knowledge search, the prompt, the LLM,
the grounding guard, the spoken text), each by a new anonymous visitor. It prints:
- fact accuracy: answerable questions whose spoken reply holds their gold fact;
- invented facts: numbers and names in spoken replies found in no source (the persona, the
  question, the entries retrieved for it, what the robot said from an entry);
- handover rate: unanswerable questions handed over to staff (a ``handover`` event);
- false handovers: answerable questions handed over;
- the time the knowledge search and the guard add to a turn (p50, p95), measured on the
  same texts as the turn (the search and the guard are pure CPU work, repeatable).

    .venv/bin/python bench/knowledge.py [--questions bench/questions/travel.yaml] [--limit N]
        [--base-url URL --model NAME [--api-key KEY]] [--show] [--entries 5000] [--compare]

``--compare`` also puts the same questions, in the same run, to the same robot without its
knowledge files (the robot before issue 27): the "before" of each figure. Its invented facts
are counted against the same sources (what the shop's files hold for the question).

Default LLM: the embedded SmolLM2-135M. ``--base-url`` runs the same set against any
OpenAI-compatible server. ``--entries N`` also times one query against N synthetic entries
on one core (the index's own speed, the issue's 5,000-entry budget).
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
from io import StringIO
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.knowledge import KnowledgeEntry  # noqa: E402
from config.loader import load_persona, load_settings  # noqa: E402
from memory.recall.facts import digits, facts_of, name_found, numbers_of, quantities_of, words_of  # noqa: E402
from memory.recall.knowledge import KnowledgeIndex, p95  # noqa: E402
from robot.control.actions import persona_prompt  # noqa: E402
from robot.core.events import HandoverEvent  # noqa: E402
from robot.reply.grounding import GroundingGuard  # noqa: E402

DEFAULT_QUESTIONS = REPO / "bench/questions/travel.yaml"


@dataclass
class Outcome:
    question: str
    reply: str
    handed_over: bool
    gold: str | None
    unanswerable: bool
    paraphrase: bool
    invented: list[str] = field(default_factory=list)
    added_s: float = 0.0

    @property
    def correct(self) -> bool:
        return self.gold is not None and has_fact(self.reply, self.gold)


def normal(text: str) -> str:
    """Lower case, numbers in digits without thousands separators, single spaces."""
    text = digits(text).lower()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return " ".join(re.findall(r"[a-z0-9:]+(?:-[a-z0-9]+)*", text))


def has_fact(reply: str, gold: str) -> bool:
    said = f" {normal(reply)} "
    return any(f" {normal(alt)} " in said for alt in gold.split("|") if alt.strip())


def invented(reply: str, sources: list[str]) -> list[str]:
    text = "\n".join(sources)
    numbers, words, quantities = numbers_of(text), words_of(text), quantities_of(text)
    facts = facts_of(reply)
    return sorted([n for n in facts.numbers if n not in numbers] +
                  [q for q in facts.quantities if q not in quantities] +
                  [n for n in facts.names if not name_found(n, words)])


async def run(args: argparse.Namespace, with_knowledge: bool = True) -> list[Outcome]:
    from robot.app.runtime import open_runtime
    from robot.dialogue.knowledge import ShopKnowledge

    spec = yaml.safe_load(Path(args.questions).read_text(encoding="utf-8"))
    persona_path = (Path(args.questions).parent / spec["persona"]).resolve()
    persona = load_persona(persona_path)
    # Without: the same persona, its knowledge (and the lines it makes) gone; the sources an
    # invented fact is counted against stay the shop's.
    sources = ShopKnowledge.of_persona(persona, load_settings().memory.retrieval_tokens)
    if not with_knowledge:
        persona = persona.model_copy(update={"knowledge": None})
    questions = spec["questions"][: args.limit] if args.limit else spec["questions"]
    settings = load_settings()
    if args.base_url:
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", args.base_url, args.model
        settings.llm.api_key = args.api_key or os.environ.get("OPENAI_API_KEY") or "none"
    settings.llm.seed = 7  # a run is repeatable
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        settings.memory.store, settings.memory.db_path = None, Path(tmp) / "memory.sqlite3"
        async with open_runtime(settings, persona, persona_path, audio_out="text", listen=False) as rt:
            controller = rt.controller
            fixed = [persona_prompt(persona, settings.tts), persona.greeting or "", persona.apology,
                     persona.filler or "", persona.more_offer or ""]
            if persona.knowledge is not None:
                fixed.append(persona.knowledge.no_answer)
            for item in questions:
                q = item["q"]
                if controller.sessions is not None:
                    await controller.sessions.start(None)  # a new visitor: no history in the way
                before = len(rt.recorder.of(HandoverEvent))
                with redirect_stdout(StringIO()):  # the text speaker prints each sentence
                    result = await controller.handle_text(q)
                handed = len(rt.recorder.of(HandoverEvent)) > before
                outcome = Outcome(q, result.reply_text, handed, item.get("gold"), bool(item.get("unanswerable")),
                                  bool(item.get("paraphrase")))
                outcome.invented, outcome.added_s = _replayed(controller.knowledge or sources, controller._places(),
                                                              q, result.reply_text, fixed)
                if not with_knowledge:
                    outcome.added_s = 0.0  # nothing searched nor guarded
                outcomes.append(outcome)
                if args.show:
                    mark = "H" if handed else ("ok" if outcome.correct else "--" if outcome.gold else "  ")
                    print(f"[{mark:2}] {q}\n      -> {result.reply_text}"
                          + (f"\n      invented: {outcome.invented}" if outcome.invented else ""), flush=True)
    return outcomes


def _replayed(knowledge, places: list[str], question: str, reply: str, fixed: list[str]) -> tuple[list[str], float]:
    """The turn's knowledge search and guard again, on its texts: what no source holds, and
    the seconds they take (search + building the guard + checking each spoken sentence)."""
    if knowledge is None:
        return invented(reply, [*fixed, question]), 0.0
    started = time.perf_counter()
    plan = knowledge.plan(question, places)
    guard = GroundingGuard.of([*fixed, question, plan.notes, *plan.opening, *plan.fallback])
    for sentence in re.split(r"(?<=[.!?])\s+", reply):
        guard.unsupported(sentence)
    took = time.perf_counter() - started
    return invented(reply, [*fixed, question, plan.notes, *plan.opening, *plan.fallback]), took


def report(outcomes: list[Outcome], label: str) -> None:
    answerable = [o for o in outcomes if not o.unanswerable]
    paraphrased = [o for o in answerable if o.paraphrase]
    unanswerable = [o for o in outcomes if o.unanswerable]
    bad = [o for o in outcomes if o.invented]

    def pct(part: int, whole: int) -> str:
        return f"{part}/{whole} ({100 * part / whole:.1f} %)" if whole else "0/0"

    print(f"\n== {label}: {len(outcomes)} questions")
    print(f"fact accuracy (gold fact in the spoken reply): {pct(sum(o.correct for o in answerable), len(answerable))}"
          f"; phrased without the entry's words: {pct(sum(o.correct for o in paraphrased), len(paraphrased))}")
    print(f"invented facts (a number or name in no source): {sum(len(o.invented) for o in outcomes)} in "
          f"{len(bad)} replies" + (f": {[(o.question, o.invented) for o in bad][:5]}" if bad else ""))
    print(f"handed over: unanswerable {pct(sum(o.handed_over for o in unanswerable), len(unanswerable))}; "
          f"answerable (false handovers) {pct(sum(o.handed_over for o in answerable), len(answerable))}")
    added = [o.added_s * 1000 for o in outcomes]
    if added:
        print(f"knowledge search + guard per turn: p50 {statistics.median(added):.1f} ms, p95 {p95(added):.1f} ms, "
              f"max {max(added):.1f} ms")
    kept = [o for o in unanswerable if not o.handed_over]
    if kept:
        print("unanswerable questions not handed over:")
        for o in kept:
            print(f"  {o.question} -> {o.reply[:140]}")
    missed = [o for o in answerable if not o.correct]
    if missed:
        print("answerable questions without their gold fact:")
        for o in missed:
            print(f"  {o.question} [{o.gold}]{' (handed over)' if o.handed_over else ''} -> {o.reply[:140]}")


def entries_speed(n: int, persona_path: Path) -> None:
    """One query against ``n`` synthetic entries (the sample's, renamed and repeated), pinned to one core."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    base = load_persona(persona_path).knowledge.entries
    entries = [KnowledgeEntry(f"{e.title} {i}", tuple(s.replace("yen", f"yen ({i})") for s in e.sentences),
                              tuple(f"{a} {i}" for a in e.aliases), f"synthetic:{i}")
               for i in range(n // len(base) + 1) for e in base][:n]
    started = time.perf_counter()
    index = KnowledgeIndex(entries)
    built = time.perf_counter() - started
    questions = [q["q"] for q in yaml.safe_load(DEFAULT_QUESTIONS.read_text())["questions"]]
    times = []
    for q in questions * 3:
        t = time.perf_counter()
        index.search(q, ["Kyoto", "Nara"])
        times.append((time.perf_counter() - t) * 1000)
    print(f"\n== {n} entries on one core: index built in {built:.2f} s; one query p50 "
          f"{statistics.median(times):.1f} ms, p95 {p95(times):.1f} ms ({len(times)} queries)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", default=str(DEFAULT_QUESTIONS), help="a question set (YAML)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--base-url", help="an OpenAI-compatible server instead of the embedded model")
    parser.add_argument("--model", default="default", help="the model name the server knows (with --base-url)")
    parser.add_argument("--api-key", default=None, help="the server's key (else OPENAI_API_KEY)")
    parser.add_argument("--show", action="store_true", help="print every question and reply")
    parser.add_argument("--entries", type=int, default=0, help="also time a query against N synthetic entries")
    parser.add_argument("--compare", action="store_true", help="also the same robot without its knowledge files")
    args = parser.parse_args()
    import logging

    logging.basicConfig(level=logging.WARNING)
    label = f"{Path(args.questions).name}, LLM {args.base_url or 'embedded SmolLM2-135M'}"
    if args.compare:
        report(asyncio.run(run(args, with_knowledge=False)), f"{label}, WITHOUT the knowledge files (before)")
    report(asyncio.run(run(args)), label)
    if args.entries:
        spec = yaml.safe_load(Path(args.questions).read_text(encoding="utf-8"))
        entries_speed(args.entries, (Path(args.questions).parent / spec["persona"]).resolve())


if __name__ == "__main__":
    main()
