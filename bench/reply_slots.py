"""A reply request made right after one was closed: the reply server with two slots against one.

The reply's request is closed early when the grounding guard holds a sentence back (the LLM
is then asked again at once, robot/reply/grounding.py) or the customer goes on. The embedded
llama.cpp server lets a closed request go only at its next token; a request that comes before
then goes to a free slot, and with two slots that is the other one, whose cache lacks the
prompt. Per trial, on a fresh server (the sample persona's role prompt, a short history, the
reply threads of the robot's defaults): the prompt read once (as the robot reads it ahead),
a reply to it closed at its first sentence, then at once the request asked again with the
grounding guard's instruction. Printed: that request's time to its first token, per arm.

    .venv/bin/python bench/reply_slots.py [--trials 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.loader import load_persona, load_settings  # noqa: E402
from prompts import load_prompt  # noqa: E402
from robot.llm import open_llm  # noqa: E402
from robot.llm.client import LLMClient  # noqa: E402

PERSONA = REPO / "config/personas/travel_agent.yaml"
HISTORY = [("assistant", "Hello and welcome! I'm Sakura, your travel consultant. Where would you like to go?"),
           ("user", "Hello, my name is Ken and I would like to visit Kyoto in April."),
           ("assistant", "Noted: places Kyoto; when April. Kyoto is lovely in spring."),
           ("user", "Is April a good time for the cherry blossoms?")]


async def first_token_s(llm: LLMClient, messages: list[dict[str, str]], close_at: str | None = None) -> float:
    """Seconds to the first token; with ``close_at``, the request is closed once its text holds it."""
    started, first, text = time.perf_counter(), None, ""
    async with contextlib.aclosing(llm.stream(messages)) as deltas:
        async for delta in deltas:
            first = first or time.perf_counter() - started
            text += delta
            if close_at is not None and close_at in text:
                break
    return first if first is not None else float("nan")


async def trial(parallel: int) -> float:
    settings = load_settings([]).llm
    messages = [{"role": "system", "content": load_persona(PERSONA).role_prompt},
                *({"role": role, "content": text} for role, text in HISTORY)]
    again = [*messages, {"role": "user", "content": load_prompt("grounding_retry").strip()}]
    async with open_llm(settings, parallel=parallel) as llm:
        await first_token_s(llm, messages)  # read ahead, as the robot's PromptWarmer does
        await first_token_s(llm, messages, close_at=".")  # a first sentence the guard held back
        return await first_token_s(llm, again)


async def main(args: argparse.Namespace) -> None:
    results: dict[int, list[float]] = {1: [], 2: []}
    for k in range(args.trials):
        for parallel in (2, 1):  # alternating: both arms see the same machine
            results[parallel].append(await trial(parallel))
            print(f"trial {k + 1}, {parallel} slot{'s' * (parallel > 1)}: the request asked again "
                  f"{results[parallel][-1] * 1000:.0f} ms to its first token", flush=True)
    print(f"\nthe request asked again at once, time to its first token ({args.trials} fresh servers an arm):")
    for parallel, values in results.items():
        print(f"  {parallel} slot{'s' * (parallel > 1)}: median {statistics.median(values) * 1000:.0f} ms, "
              f"max {max(values) * 1000:.0f} ms")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=3)
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
