"""Requests in a row to the embedded LLM server: a reused connection against one per request.

The embedded llama.cpp server now and then closes a kept-alive connection just as the next
request is sent on it: the client reads "Server disconnected without sending a response".
The robot's retries hide it, at the price of a retry's backoff (0.5 s) on that reply; a
summary with retries used up fails. The embedded backend's client now sends "Connection:
close" (a new loopback connection per request). Both are run here, alternating round by
round on one server, retries off; printed: failed requests and the mean time per request.

    .venv/bin/python bench/llm_connections.py [--requests 150] [--rounds 2] [--max-tokens 8]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import LlmSettings  # noqa: E402
from robot.llm import open_llm  # noqa: E402
from robot.llm.client import LLMClient  # noqa: E402

ARMS = {"reused connection": True, "one per request": False}


async def run_arm(base_url: str, model: str, reuse: bool, args: argparse.Namespace) -> tuple[list[int], float]:
    """Indices of the failed requests, and the seconds per request."""
    client = LLMClient(base_url=base_url, api_key=None, model=model, temperature=0, max_tokens=args.max_tokens,
                       retries=0, reuse_connections=reuse)
    failed: list[int] = []
    started = time.perf_counter()
    try:
        for k in range(args.requests):
            try:
                await client.complete([{"role": "user", "content": f"Question {k}: name a colour."}])
            except Exception as e:  # noqa: BLE001 - a bench: every failure is counted and shown
                failed.append(k)
                print(f"  {'reuse' if reuse else 'close'} request {k}: {e}", file=sys.stderr)
    finally:
        await client.aclose()
    return failed, (time.perf_counter() - started) / args.requests


async def main(args: argparse.Namespace) -> None:
    settings = LlmSettings(temperature=0, max_tokens=args.max_tokens, threads=args.threads, retries=0)
    totals = {name: [0, 0, 0.0] for name in ARMS}  # failed, sent, seconds
    async with open_llm(settings, parallel=1) as server:
        base_url = str(server._client.base_url)  # noqa: SLF001 - a bench talks to the same server
        for round_ in range(args.rounds):
            for name, reuse in ARMS.items():
                failed, per = await run_arm(base_url, server.model, reuse, args)
                totals[name][0] += len(failed)
                totals[name][1] += args.requests
                totals[name][2] += per * args.requests
                print(f"round {round_ + 1}, {name}: {len(failed)} of {args.requests} failed {failed}, "
                      f"{per * 1000:.0f} ms per request", flush=True)
    print(f"\n{args.rounds} rounds of {args.requests} requests in a row, retries off, max_tokens {args.max_tokens}:")
    for name, (failed, sent, seconds) in totals.items():
        print(f"  {name:<18} {failed} of {sent} failed ({failed / sent:.1%}), {seconds / sent * 1000:.0f} ms per request")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=150, help="requests per arm and round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
