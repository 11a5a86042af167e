"""How much of a long conversation the dual-store memory keeps: LoCoMo replayed through it.

Each conversation of ../shared/data/locomo/locomo_dev3.json is replayed session by session
into a ``DualStoreMemory`` (speaker A as the customer, speaker B as the other side; each
session starts with its date). The summary timer fires at each session end (the clock is
advanced by one interval). Then, for every QA item with a gold answer (categories 1-4; 5
is adversarial, without one), the answer's content words are looked up in the context the
reply LLM would get (role prompt + current-prompt history + the question), next to the
full-history baseline (persona + every turn).

Reported per category: the share of questions whose answer words all appear ("hit"), the
mean share of answer words that appear ("words"), and the mean prompt tokens (the
``memory.tokens`` heuristic, ceil(chars/4) + 4 per message).

    .venv/bin/python bench/memory_locomo.py --limit 1 --sessions 6          # embedded model
    .venv/bin/python bench/memory_locomo.py --base-url http://host:8000/v1 --model NAME
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import LlmSettings, PersonaMemory  # noqa: E402
from memory import ManualClock  # noqa: E402
from memory.base import Message, Turn  # noqa: E402
from memory.dual_store import DualStoreMemory  # noqa: E402
from memory.sqlite_store import SqliteStore  # noqa: E402
from memory.tokens import count_message_tokens  # noqa: E402

DATA = REPO.parent / "shared/data/locomo/locomo_dev3.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
STOP = set("a an the of in on at to for and or is was were be been it its this that with by from as "
           "her his their they she he i you we my our your".split())
PERSONA = "You are a helpful conversation partner. Answer consistently with what was said before."


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", str(text).lower()) if w not in STOP]


@dataclass
class Tally:
    n: int = 0
    hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    recall: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tokens: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def score(answer: str, context: str) -> tuple[bool, float]:
    gold = set(words(answer))
    if not gold:
        return True, 1.0
    present = set(words(context))
    found = len(gold & present) / len(gold)
    return found == 1.0, found


def sessions_of(conv: dict) -> list[tuple[int, str, list[dict]]]:
    keys = sorted((int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k)))
    return [(k, conv.get(f"session_{k}_date_time", ""), conv[f"session_{k}"]) for k in keys]


def turn_text(turn: dict) -> str:
    text = turn["text"]
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def last_session(qa: dict) -> int:
    sessions = [int(m.group(1)) for e in qa.get("evidence", []) for m in [re.match(r"D(\d+):", e)] if m]
    return max(sessions, default=0)


async def replay(sample: dict, llm, args, tally: dict[int, Tally]) -> dict:
    conv = sample["conversation"]
    a = conv["speaker_a"]
    clock = ManualClock(start=0)
    settings = PersonaMemory(strategy=args.strategy, update_interval_s=3600, summary_timeout_s=args.summary_timeout,
                             retry_backoff_s=60)
    with tempfile.TemporaryDirectory() as tmp:
        memory = DualStoreMemory(persona_prompt=PERSONA, settings=settings, store=SqliteStore(Path(tmp) / "m.sqlite3"),
                                 llm=llm, user=sample["sample_id"], token_budget=args.budget, clock=clock,
                                 guard_facts=0 if args.no_fact_guard else 8)
        await memory.open()
        await memory.start()
        full: list[Message] = [{"role": "system", "content": PERSONA}]
        sessions = sessions_of(conv)[: args.sessions or None]
        pending = [q for q in sample["qa"] if q.get("category") in CATEGORIES and "answer" in q]
        for number, date, turns in sessions:
            for i, t in enumerate(turns):
                text = (f"[{date}] " if i == 0 and date else "") + turn_text(t)
                role = "user" if t["speaker"] == a else "assistant"
                await memory.record(Turn(role, text, speaker=t["speaker"]))
                full.append({"role": role, "content": f"{t['speaker']}: {text}"})
            await clock.advance(settings.update_interval_s)  # the session ends: the timer fires
            await memory.wait_idle()
            print(f"  {sample['sample_id']} session {number}: {len(turns)} turns, summary "
                  f"v{memory.summary.version if memory.summary else 0}, history {len(memory.history)}, "
                  f"failures {memory.failures}", file=sys.stderr, flush=True)
            if args.ask_at == "evidence":
                await ask([q for q in pending if last_session(q) == number], memory, full, tally)
        if args.ask_at == "end":
            await ask([q for q in pending if 0 < last_session(q) <= sessions[-1][0]], memory, full, tally)
        result = {"sample": sample["sample_id"], "sessions": len(sessions), "summary_versions":
                  memory.summary.version if memory.summary else 0, "final_summary": memory.summary.text if memory.summary else ""}
        await memory.aclose()
        return result


async def ask(questions: list[dict], memory: DualStoreMemory, full: list[Message], tally: dict[int, Tally]) -> None:
    for q in questions:
        t = tally[q["category"]]
        t.n += 1
        dual = await memory.build_messages(q["question"])
        baseline = full + [{"role": "user", "content": q["question"]}]
        for name, messages in (("dual", dual), ("full", baseline)):
            context = "\n".join(m["content"] for m in messages[:-1])  # the question itself is no evidence
            hit, found = score(str(q["answer"]), context)
            t.hits[name] += hit
            t.recall[name] += found
            t.tokens[name] += count_message_tokens(messages)


def report(tally: dict[int, Tally], strategy: str) -> str:
    rows = [f"{'category':<12} {'n':>4} | {strategy + ' hit':>9} {'words':>6} {'tokens':>7} | "
            f"{'full hit':>9} {'words':>6} {'tokens':>7}"]
    total = Tally()
    for cat in sorted(tally):
        t = tally[cat]
        rows.append(_row(CATEGORIES[cat], t))
        total.n += t.n
        for k in ("dual", "full"):
            total.hits[k] += t.hits[k]
            total.recall[k] += t.recall[k]
            total.tokens[k] += t.tokens[k]
    rows.append(_row("all", total))
    return "\n".join(rows)


def _row(name: str, t: Tally) -> str:
    n = max(t.n, 1)
    cells = [f"{t.hits[k] / n:>9.1%} {t.recall[k] / n:>6.1%} {t.tokens[k] / n:>7.0f}" for k in ("dual", "full")]
    return f"{name:<12} {t.n:>4} | {cells[0]} | {cells[1]}"


def openai_llm(base_url: str, model: str, api_key: str | None, max_tokens: int):
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed")

    async def complete(messages: list[Message]) -> str:
        reply = await client.chat.completions.create(model=model, messages=messages, temperature=0,
                                                     max_tokens=max_tokens)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    return complete


async def main(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.data).read_text())[: args.limit or None]
    tally: dict[int, Tally] = defaultdict(Tally)
    started = time.time()
    if args.base_url:
        results = [await replay(s, openai_llm(args.base_url, args.model, args.api_key, args.max_tokens), args, tally)
                   for s in data]
        model = args.model
    else:
        from robot.llm import open_llm  # the embedded model through the robot's own client

        settings = LlmSettings(temperature=0, max_tokens=args.max_tokens, context_tokens=4096, threads=args.threads,
                               timeout_s=args.summary_timeout, retries=0)
        async with open_llm(settings) as client:
            results = [await replay(s, client.complete, args, tally) for s in data]
        model = "embedded:smollm2-135m"
    print(f"LoCoMo {Path(args.data).name}: {len(data)} conversations, sessions {args.sessions or 'all'}, "
          f"strategy {args.strategy}, budget {args.budget} tokens, summaries by {model}, "
          f"fact guard {'off' if args.no_fact_guard else 'on'}, asked at {args.ask_at}, {time.time() - started:.0f} s")
    print(report(tally, args.strategy))
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "results": results, "tally": {
            CATEGORIES[c]: {"n": t.n, "hits": t.hits, "recall": t.recall, "tokens": t.tokens} for c, t in tally.items()
        }}, indent=2, default=str))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--base-url", help="an OpenAI-compatible server for the summaries (default: the embedded model)")
    p.add_argument("--model", default="gpt-4o-mini")
    p.add_argument("--api-key", default=None)
    p.add_argument("--limit", type=int, default=0, help="conversations to replay (0: all)")
    p.add_argument("--sessions", type=int, default=0, help="sessions per conversation (0: all)")
    p.add_argument("--strategy", choices=["rsum", "swin"], default="rsum")
    p.add_argument("--budget", type=int, default=1500, help="memory.token_budget")
    p.add_argument("--max-tokens", type=int, default=300, help="summary length cap for the LLM")
    p.add_argument("--summary-timeout", type=float, default=120.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ask-at", choices=["end", "evidence"], default="end",
                   help="ask each question after the last replayed session, or right after its evidence")
    p.add_argument("--no-fact-guard", action="store_true", help="measure the LLM summary alone")
    p.add_argument("--out", help="write the figures and final summaries as JSON")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
