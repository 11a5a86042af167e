"""How much of a long conversation the dual-store memory keeps: LoCoMo replayed through it.

Each conversation of ../shared/data/locomo/locomo_dev3.json is replayed session by session
into a ``DualStoreMemory`` (speaker A as the customer, speaker B as the other side; each
session starts with its date). The summary timer fires at each session end (the clock is
advanced by one interval). Then, for every QA item with a gold answer (categories 1-4; 5
is adversarial, without one), the answer's content words are looked up in the context the
reply LLM would get (role prompt + current-prompt history + the question), next to the
full-history baseline (persona + every turn).

Strategies compared on the same replay: full history; the summary (``--strategy``) alone;
the summary with the exchanges retrieval adds for the question at each ``--retrieval`` room
(``memory/recall/archive.py``); and retrieval alone (persona + ``--alone-tokens`` of exchanges found
among all the turns, no summary). Reported per category: the share of questions whose
answer words all appear in the context ("hit"; the question itself does not count) and the
mean prompt tokens, in the embedded model's own tokens (its server's ``/tokenize``; with
``--base-url``, ceil(chars/4) + 4 per message); then each strategy against full history
(targets: hit >= 0.9x at <= 0.2x its tokens). After each session the prompt of a recap
question is sized too (summary, summary + 300 tokens of retrieval, full history), and turn ~300
is set against turn ~50 (target: <= 1.2x; ``--limit 1 --sessions 14`` replays 306 turns).
``--answer N``: N of the questions (drawn with a fixed seed) are also put to a reply LLM with
each strategy's prompt (the embedded model on a server of its own with ``--answer-context``
tokens, or the ``--base-url`` server), and its answer is scored against the gold answer with
LoCoMo's token F1 (lower case, no punctuation or articles, Snowball stems). Then the summaries: accepted,
rejected, failed, retried and extractive counts, seconds per summary request, and the
process's peak RSS. ``--gate both`` replays each conversation with the entity gate off and
on, in one run, on one model server.

The bench sets its own LLM timeouts (``--summary-timeout`` for the first token and the
whole request: the client's 20 s first-token default killed long summaries) and threads.

    .venv/bin/python bench/memory_locomo.py --limit 1 --sessions 6          # embedded model
    .venv/bin/python bench/memory_locomo.py --limit 1 --sessions 4 --gate both
    .venv/bin/python bench/memory_locomo.py --limit 1 --sessions 6 --answer 30    # + answer F1
    .venv/bin/python bench/memory_locomo.py --base-url http://host:8000/v1 --model NAME
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import re
import resource
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import LlmSettings  # noqa: E402
from memory import LlmLimits, ManualClock, SummaryPolicy  # noqa: E402
from memory.core.base import Message, Remark  # noqa: E402
from memory.core.tokens import MESSAGE_OVERHEAD, ServerTokenCounter, count_message_tokens  # noqa: E402
from memory.dual_store import DualStoreMemory  # noqa: E402
from memory.recall.archive import ArchiveIndex  # noqa: E402
from memory.recall.prompt_budget import with_notes  # noqa: E402
from memory.stores.sqlite_store import SqliteStore  # noqa: E402
from memory.summary.folding import SummaryStats  # noqa: E402

DATA = REPO.parent / "shared/data/locomo/locomo_dev3.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
STOP = set("a an the of in on at to for and or is was were be been it its this that with by from as "
           "her his their they she he i you we my our your".split())
PERSONA = "You are a helpful conversation partner. Answer consistently with what was said before."


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", str(text).lower()) if w not in STOP]


@dataclass(frozen=True)
class Asked:
    """A question, its gold answer and the prompt each strategy built for it (for --answer)."""

    question: str
    answer: str
    prompts: dict[str, list[Message]]


@dataclass
class Tally:
    n: int = 0
    hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    recall: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tokens: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    asked: list[Asked] = field(default_factory=list)


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


async def replay(sample: dict, llm, args, tally: dict[int, Tally], gate: float, stats: SummaryStats,
                 counter=None) -> dict:
    conv = sample["conversation"]
    a = conv["speaker_a"]
    clock = ManualClock(start=0)
    policy = SummaryPolicy(strategy=args.strategy, update_interval_s=3600, summary_timeout_s=args.summary_timeout,
                           retry_backoff_s=60, guard_facts=0 if args.no_fact_guard else 8, min_entity_recall=gate)
    with tempfile.TemporaryDirectory() as tmp:
        memory = DualStoreMemory(persona_prompt=PERSONA, policy=policy, store=SqliteStore(Path(tmp) / "m.sqlite3"),
                                 llm=llm, user=sample["sample_id"], token_budget=args.budget, clock=clock,
                                 limits=LlmLimits(args.context_tokens, args.max_tokens), count_tokens=counter,
                                 retrieval_tokens=max(args.retrieval), retrieval_min_score=args.min_score)
        memory.folder.stats = stats  # one tally over the conversations of a condition
        await memory.open()
        await memory.start()
        full: list[Message] = [{"role": "system", "content": PERSONA}]
        sessions = sessions_of(conv)[: args.sessions or None]
        growth: list[dict[str, int]] = []
        pending = [q for q in sample["qa"] if q.get("category") in CATEGORIES and "answer" in q]
        for number, date, turns in sessions:
            for i, t in enumerate(turns):
                text = (f"[{date}] " if i == 0 and date else "") + turn_text(t)
                role = "user" if t["speaker"] == a else "assistant"
                await memory.record(Remark(role, text, speaker=t["speaker"]))
                full.append({"role": role, "content": f"{t['speaker']}: {text}"})
            await clock.advance(policy.update_interval_s)  # the session ends: the timer fires
            await memory.wait_idle()
            while memory.failures and memory.history:  # a failed fold is retried after its backoff
                await clock.advance(policy.retry_backoff_s)
                await memory.wait_idle()
            print(f"  {sample['sample_id']} session {number}: {len(turns)} turns, summary "
                  f"v{memory.summary.version if memory.summary else 0}, history {len(memory.history)}, "
                  f"accepted {stats.accepted}, extractive {stats.extractive}", file=sys.stderr, flush=True)
            growth.append(await prompt_size(memory, full, counter))
            if args.ask_at == "evidence":
                await ask([q for q in pending if last_session(q) == number], memory, full, tally, args, counter)
        if args.ask_at == "end":
            await ask([q for q in pending if 0 < last_session(q) <= sessions[-1][0]], memory, full, tally, args,
                      counter)
        result = {"sample": sample["sample_id"], "sessions": len(sessions), "growth": growth, "summary_versions":
                  memory.summary.version if memory.summary else 0, "final_summary": memory.summary.text if memory.summary else ""}
        await memory.aclose()
        return result


GROWTH_PROBE = "Can you remind me what we planned so far?"  # a recall cue: the profile and retrieval both come


async def prompt_size(memory: DualStoreMemory, full: list[Message], counter) -> dict[str, int]:
    """The reply prompt's real tokens now, for a recap question (the largest prompt the robot
    builds: recent history, the summary, retrieval and the profile), against full history."""
    probe = {"role": "user", "content": GROWTH_PROBE}
    return {"turns": len(full) - 1,
            "summary": await real_tokens(await memory.build_messages(GROWTH_PROBE, retrieval_tokens=0), counter),
            "summary+r300": await real_tokens(await memory.build_messages(GROWTH_PROBE, retrieval_tokens=300), counter),
            "full": await real_tokens(full + [probe], counter)}


def growth_report(results: list[dict]) -> str:
    """Prompt tokens as the conversation grows, per conversation; turn ~300 against turn ~50."""
    lines = ["\nprompt tokens of a recap question after each session (real tokens)",
             f"{'conversation':<14} {'turns':>6} {'summary':>8} {'+r300':>8} {'full':>8}"]
    for r in results:
        for g in r["growth"]:
            lines.append(f"{r['sample']:<14} {g['turns']:>6} {g['summary']:>8} {g['summary+r300']:>8} {g['full']:>8}")
        early = min(r["growth"], key=lambda g: abs(g["turns"] - 50))
        late = min(r["growth"], key=lambda g: abs(g["turns"] - 300))
        if late["turns"] > early["turns"]:
            lines.append(f"{r['sample']}: turn {late['turns']} against turn {early['turns']}: summary "
                         f"{late['summary'] / early['summary']:.2f}x, summary+r300 "
                         f"{late['summary+r300'] / early['summary+r300']:.2f}x, full {late['full'] / early['full']:.2f}x "
                         "(target for the robot's prompt: <= 1.2x)")
    return "\n".join(lines)


async def contexts(question: str, memory: DualStoreMemory, full: list[Message], alone: ArchiveIndex,
                   args) -> dict[str, list[Message]]:
    """The prompt each strategy would send for ``question``, by strategy name."""
    prompts = {"full": full + [{"role": "user", "content": question}],
               args.strategy: await memory.build_messages(question, retrieval_tokens=0)}
    for room in args.retrieval:
        prompts[f"{args.strategy}+r{room}"] = await memory.build_messages(question, retrieval_tokens=room)
    found = alone.render(await alone.search(question, args.alone_tokens))
    prompts[f"bm25 {args.alone_tokens}"] = [{"role": "system", "content": PERSONA},
                                            {"role": "user", "content": with_notes(question, found)}]
    return prompts


async def ask(questions: list[dict], memory: DualStoreMemory, full: list[Message], tally: dict[int, Tally],
              args, counter) -> None:
    alone = ArchiveIndex(memory.archive.labels, memory.archive.min_score)  # retrieval over every turn, no summary
    await alone.replace(await memory._store.turns(memory._state.require_user()))  # noqa: SLF001 - a bench
    for q in questions:
        t = tally[q["category"]]
        t.n += 1
        prompts = await contexts(q["question"], memory, full, alone, args)
        if args.answer:
            t.asked.append(Asked(q["question"], str(q["answer"]), prompts))
        for name, messages in prompts.items():
            # The question itself is no evidence: only the notes beside it are.
            context = "\n".join(m["content"] for m in messages).replace(q["question"], "")
            hit, found = score(str(q["answer"]), context)
            t.hits[name] += hit
            t.recall[name] += found
            t.tokens[name] += await real_tokens(messages, counter)


async def real_tokens(messages: list[Message], counter) -> int:
    """The reply model's own tokens (the server's /tokenize); ceil(chars/4) without one."""
    if counter is None:
        return count_message_tokens(messages)
    return sum([await counter(m["content"]) + MESSAGE_OVERHEAD for m in messages])


def report(tally: dict[int, Tally]) -> str:
    total = Tally()
    for t in tally.values():
        total.n += t.n
        for k in t.hits:
            total.hits[k] += t.hits[k]
            total.recall[k] += t.recall[k]
            total.tokens[k] += t.tokens[k]
    names = list(total.hits)
    rows = [f"{'category':<12} {'n':>4} | " + " | ".join(f"{n:>15}" for n in names),
            f"{'':<12} {'':>4} | " + " | ".join(f"{'hit':>6} {'tokens':>8}" for _ in names)]
    rows += [_row(CATEGORIES[cat], tally[cat], names) for cat in sorted(tally)]
    rows.append(_row("all", total, names))
    n = max(total.n, 1)
    full_hit, full_tokens = total.hits["full"] / n, total.tokens["full"] / n
    rows.append("")
    for name in names[1:]:
        hit, tokens = total.hits[name] / n, total.tokens[name] / n
        rows.append(f"{name:>15}: hit {hit / full_hit if full_hit else 0:.2f}x of full history's "
                    f"(target >= 0.90x) at {tokens / full_tokens if full_tokens else 0:.2f}x its tokens (target <= 0.20x)")
    return "\n".join(rows)


def _row(name: str, t: Tally, names: list[str]) -> str:
    n = max(t.n, 1)
    return f"{name:<12} {t.n:>4} | " + " | ".join(f"{t.hits[k] / n:>6.1%} {t.tokens[k] / n:>8.0f}" for k in names)


def openai_llm(base_url: str, model: str, api_key: str | None, max_tokens: int):
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed")

    async def complete(messages: list[Message]) -> str:
        reply = await client.chat.completions.create(model=model, messages=messages, temperature=0,
                                                     max_tokens=max_tokens)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    return complete


ANSWER_HINT = " Answer in a short phrase."  # the same for every strategy: LoCoMo answers are phrases
ARTICLES = re.compile(r"\b(a|an|the|and)\b")


@functools.cache
def _stemmer():
    import Stemmer  # one stemmer for every answer scored, made when the first is

    return Stemmer.Stemmer("english")


def answer_words(text: str) -> list[str]:
    """LoCoMo's normalisation: lower case, no punctuation, no articles, stemmed words."""
    text = ARTICLES.sub(" ", re.sub(r"[^\w\s]", " ", str(text).lower()))
    return _stemmer().stemWords(text.split())


def f1(prediction: str, gold: str) -> float:
    """Token F1 of a reply against the gold answer (bag of stemmed words)."""
    said, want = answer_words(prediction), answer_words(gold)
    common = sum(min(said.count(w), want.count(w)) for w in set(said))
    if not said or not want or not common:
        return 0.0
    precision, recall = common / len(said), common / len(want)
    return 2 * precision * recall / (precision + recall)


async def answer(tally: dict[int, Tally], complete, args) -> str:
    """Put ``--answer`` questions to the reply LLM with each strategy's prompt; F1 per
    category and strategy, one strategy after the other (a server's prompt cache keeps the
    shared prefix of one strategy's prompts)."""
    everyone = [(cat, a) for cat, t in sorted(tally.items()) for a in t.asked]
    chosen = random.Random(0).sample(everyone, min(args.answer, len(everyone)))
    if not chosen:
        return "answers: no questions"
    names = list(chosen[0][1].prompts)
    scores: dict[tuple[int, str], list[float]] = defaultdict(list)
    started, failed = time.monotonic(), 0
    for name in names:
        for cat, a in chosen:
            messages = [dict(m) for m in a.prompts[name]]
            messages[-1]["content"] += ANSWER_HINT
            try:
                reply = await complete(messages)
            except Exception as e:  # noqa: BLE001 - a bench: a failed answer scores 0 and is counted
                print(f"  answer failed ({name}): {type(e).__name__}: {e}", file=sys.stderr)
                reply, failed = "", failed + 1
            scores[(cat, name)].append(f1(reply, a.answer))
            print(f"  {name}: {a.question!r} gold {a.answer!r} said {' '.join(reply.split())[:100]!r} "
                  f"F1 {scores[(cat, name)][-1]:.2f}", file=sys.stderr)
            scores[(0, name)].append(scores[(cat, name)][-1])
    per = (time.monotonic() - started) / (len(chosen) * len(names))
    cats = sorted({cat for cat, _ in chosen})
    rows = [f"\nanswer F1 of the reply LLM, {len(chosen)} questions, {per:.1f} s per answer, {failed} failed",
            f"{'category':<12} {'n':>4} | " + " | ".join(f"{n:>15}" for n in names)]
    for cat in cats + [0]:
        n = len(scores[(cat, names[0])])
        label = CATEGORIES.get(cat, "all")
        rows.append(f"{label:<12} {n:>4} | " + " | ".join(
            f"{sum(scores[(cat, k)]) / max(n, 1):>15.3f}" for k in names))
    full = sum(scores[(0, "full")]) / len(chosen)
    for name in names[1:]:
        mine = sum(scores[(0, name)]) / len(chosen)
        rows.append(f"{name:>15}: F1 {mine / full if full else 0:.2f}x of full history's")
    return "\n".join(rows)


def summary_report(stats: SummaryStats) -> str:
    folded = stats.accepted + stats.extractive
    share = stats.accepted / folded if folded else 0.0
    per = stats.llm_seconds / stats.llm_calls if stats.llm_calls else 0.0
    recall = sum(stats.recalls) / len(stats.recalls) if stats.recalls else 0.0
    return (f"summaries: {folded} folds, accepted {stats.accepted} ({share:.0%}), extractive {stats.extractive}, "
            f"rejected {stats.rejected}, failed {stats.failed}, retried {stats.retried}; {stats.llm_calls} requests, "
            f"{per:.1f} s per request; mean entity recall of usable answers {recall:.0%}")


async def run_condition(data: list[dict], llm, args, gate: float, counter) -> tuple[dict, list[dict], SummaryStats]:
    tally: dict[int, Tally] = defaultdict(Tally)
    stats = SummaryStats()
    results = [await replay(s, llm, args, tally, gate, stats, counter) for s in data]
    return tally, results, stats


async def main(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.data).read_text())[: args.limit or None]
    gates = {"on": [args.min_entity_recall], "off": [0.0], "both": [0.0, args.min_entity_recall]}[args.gate]
    started = time.time()
    conditions = []
    if args.base_url:
        llm = openai_llm(args.base_url, args.model, args.api_key, args.max_tokens)
        for gate in gates:
            conditions.append((gate, *await run_condition(data, llm, args, gate, None)))
        model = args.model
    else:
        from robot.llm import open_llm  # the embedded model through the robot's own client

        # The bench's own limits: a summary may take summary_timeout for its first token too.
        settings = LlmSettings(temperature=0, max_tokens=args.max_tokens, context_tokens=args.context_tokens,
                               threads=args.threads, timeout_s=args.summary_timeout,
                               first_token_timeout_s=args.summary_timeout, retries=0)
        async with open_llm(settings) as client:
            counter = ServerTokenCounter(str(client._client.base_url))  # noqa: SLF001 - the server's /tokenize
            for gate in gates:
                conditions.append((gate, *await run_condition(data, client.complete, args, gate, counter)))
        model = "embedded:smollm2-135m"
    answers = await answer_conditions(conditions, args) if args.answer else []
    print(f"LoCoMo {Path(args.data).name}: {len(data)} conversations, sessions {args.sessions or 'all'}, "
          f"strategy {args.strategy}, budget {args.budget} tokens, summaries by {model} "
          f"({args.threads} threads, context {args.context_tokens}, timeout {args.summary_timeout:g} s), "
          f"fact guard {'off' if args.no_fact_guard else 'on'}, asked at {args.ask_at}, {time.time() - started:.0f} s")
    for gate, tally, results, stats in conditions:
        print(f"\nentity gate {'off' if not gate else f'on (min recall {gate:g})'}")
        print(report(tally))
        print(summary_report(stats))
        print(growth_report(results))
        if answers:
            print(answers.pop(0))
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "conditions": [
            {"gate": gate, "results": results, "stats": vars(stats), "tally": {
                CATEGORIES[c]: {"n": t.n, "hits": t.hits, "recall": t.recall, "tokens": t.tokens}
                for c, t in tally.items()}} for gate, tally, results, stats in conditions]}, indent=2, default=str))


async def answer_conditions(conditions: list, args) -> list[str]:
    """The F1 report of each condition, by the ``--base-url`` server or an embedded model
    server of its own (full history needs a longer context than the summaries')."""
    if args.base_url:
        complete = openai_llm(args.base_url, args.model, args.api_key, args.answer_tokens)
        return [await answer(tally, complete, args) for _, tally, _, _ in conditions]
    from robot.llm import open_llm

    settings = LlmSettings(temperature=0, max_tokens=args.answer_tokens, context_tokens=args.answer_context,
                           threads=args.threads, timeout_s=args.summary_timeout,
                           first_token_timeout_s=args.summary_timeout, retries=0)
    async with open_llm(settings, parallel=1) as client:
        return [await answer(tally, client.complete, args) for _, tally, _, _ in conditions]


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
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads of the embedded model")
    p.add_argument("--context-tokens", type=int, default=2048, help="the embedded model's context per request")
    p.add_argument("--gate", choices=["on", "off", "both"], default="on", help="the entity gate of summaries")
    p.add_argument("--min-entity-recall", type=float, default=0.5, help="the gate's threshold when on")
    p.add_argument("--ask-at", choices=["end", "evidence"], default="end",
                   help="ask each question after the last replayed session, or right after its evidence")
    p.add_argument("--no-fact-guard", action="store_true", help="measure the LLM summary alone")
    p.add_argument("--retrieval", type=lambda v: [int(x) for x in v.split(",")], default=[300, 600, 1000],
                   help="retrieval_tokens to compare beside the summary (comma-separated)")
    p.add_argument("--alone-tokens", type=int, default=600, help="room of retrieval alone (persona + exchanges)")
    p.add_argument("--min-score", type=float, default=1.0, help="memory.retrieval_min_score")
    p.add_argument("--answer", type=int, default=0, help="questions put to the reply LLM for answer F1 (0: none)")
    p.add_argument("--answer-tokens", type=int, default=32, help="the length cap of an answer")
    p.add_argument("--answer-context", type=int, default=8192,
                   help="the embedded answering model's context (full history must fit)")
    p.add_argument("--out", help="write the figures and final summaries as JSON")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
