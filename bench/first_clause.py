"""How much sooner an LLM reply can be spoken from its first clause than from its first sentence.

The robot hands the TTS its reply's first clause ("Of course,", "In April,") as soon as the
LLM has written it, the rest in whole sentences (tts.first_chunk "clause";
robot/reply/sentences.py). Both cuts are measured on the SAME token stream, so the machine's
noise moves both alike: per question, the embedded LLM (the robot's reply settings, a fixed
seed) answers as the persona, with its role prompt read ahead first (as the robot's prompt
warmer does), and the deltas go through a splitter of each kind; printed are the seconds from
the request to each splitter's first piece, and how often the clause came first.

The questions are bench/questions/*.yaml (visitors' questions for the knowledge bench), asked
alone, without the shop's knowledge: this is the LLM's own first sentence, what the robot
says in turns no fixed line answers.

    .venv/bin/python bench/first_clause.py [--limit 40] [--questions bench/questions/travel.yaml]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.figures import ms  # noqa: E402
from config.loader import load_persona, load_settings  # noqa: E402
from robot.control.actions import persona_prompt  # noqa: E402
from robot.llm import open_llm  # noqa: E402
from robot.llm.client import LLMClient  # noqa: E402
from robot.reply.sentences import SentenceSplitter  # noqa: E402
from speech.tts import Synthesizer  # noqa: E402

QUESTIONS = [REPO / "bench/questions/travel.yaml", REPO / "bench/questions/museum.yaml"]


@dataclass
class Cut:
    """One reply: when each splitter handed out its first piece (s after the request), and what."""

    clause_s: float | None = None
    sentence_s: float | None = None
    clause: str = ""
    sentence: str = ""


def questions(paths: list[Path], limit: int) -> list[tuple[Path, str]]:
    """(persona file, question), taken in turn from each file, ``limit`` in all."""
    per_file = []
    for path in paths:
        data = yaml.safe_load(path.read_text())
        per_file.append([((path.parent / data["persona"]).resolve(), q["q"]) for q in data["questions"]])
    mixed = [item for group in itertools.zip_longest(*per_file) for item in group if item is not None]
    return mixed[:limit]


async def one_reply(llm: LLMClient, system: str, question: str) -> Cut:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    cut, clause, sentence = Cut(), SentenceSplitter(first_clause=True), SentenceSplitter()
    started = time.perf_counter()
    async with contextlib.aclosing(llm.stream(messages)) as deltas:
        async for delta in deltas:
            now = time.perf_counter() - started
            if cut.clause_s is None and (pieces := clause.feed(delta)):
                cut.clause_s, cut.clause = now, pieces[0]
            if cut.sentence_s is None and (pieces := sentence.feed(delta)):
                cut.sentence_s, cut.sentence = now, pieces[0]
            if cut.clause_s is not None and cut.sentence_s is not None:
                break
    end = time.perf_counter() - started  # a reply of one sentence: its end is its first piece
    if cut.clause_s is None:
        cut.clause_s, cut.clause = end, (clause.flush() or [""])[0]
    if cut.sentence_s is None:
        cut.sentence_s, cut.sentence = end, (sentence.flush() or [""])[0]
    return cut


async def run(paths: list[Path], limit: int) -> list[Cut]:
    settings = load_settings([]).llm.model_copy(update={"seed": 7})
    cuts = []
    async with open_llm(settings, parallel=1) as llm:
        for persona_path, question in questions(paths, limit):
            system = persona_prompt(load_persona(persona_path))
            with contextlib.suppress(Exception):  # the prompt read ahead, as the robot does while idle
                await one_reply(llm, system, "Hello.")
            cuts.append(await one_reply(llm, system, question))
    return cuts


def report(cuts: list[Cut]) -> None:
    sentence = [c.sentence_s for c in cuts]
    clause = [c.clause_s for c in cuts]
    earlier = [c for c in cuts if c.clause != c.sentence]
    gains = [c.sentence_s - c.clause_s for c in earlier]
    print(f"\n{len(cuts)} replies of the embedded LLM: request -> first piece handed to the TTS")
    print(f"{'':28}{'median':>8}{'p95':>8}{'max':>8}   (ms)")
    for name, values in (("first sentence", sentence), ("first clause", clause)):
        print(f"{name:28}{ms(values, 0.5):>8}{ms(values, 0.95):>8}{ms(values, 1.0):>8}")
    print(f"the clause came first in {len(earlier)} of {len(cuts)} replies", end="")
    if gains:
        print(f"; there it was {statistics.median(gains) * 1000:.0f} ms sooner (median), "
              f"{max(gains) * 1000:.0f} ms at most")
        # A gap inside the sentence: its rest written after the clause's audio ended.
        synth = Synthesizer()
        said = [synth.synthesize_sync(c.clause).duration_s for c in earlier]
        late = [g - d for g, d in zip(gains, said) if g > d]
        print(f"the sentence's rest was written before the clause's audio (espeak-ng, "
              f"{statistics.median(said):.2f} s median) ended in {len(earlier) - len(late)} of {len(earlier)}"
              + (f"; a gap of {max(late) * 1000:.0f} ms at most" if late else ""))
    else:
        print()
    for c in earlier[:8]:
        print(f"  {c.clause!r} ({c.clause_s * 1000:.0f} ms) before {c.sentence!r} ({c.sentence_s * 1000:.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="questions asked")
    parser.add_argument("--questions", type=Path, action="append", help="a questions file (default: both)")
    args = parser.parse_args()
    report(asyncio.run(run(args.questions or QUESTIONS, args.limit)))


if __name__ == "__main__":
    main()
