"""Thread counts for the embedded LLM and STT on this machine: idle, and under a kiosk's load.

For each LLM setting (1 or 2 threads; summaries on the same server or on one of their own) it
measures a spoken reply's first-token time and generation speed (tokens/s after the first)
  - idle: nothing else of ours runs;
  - loaded: a memory summary runs (on the server's other slot, or on its own server;
    started just before the reply, as when the timer fires while the customer talks) and faster-whisper transcribes
    a customer utterance over and over, with 1 or 2 STT threads; the STT's seconds per
    utterance are printed too.
Settings and conditions are interleaved round by round, so all see the same machine; the
figures are medians. Then the prompt cache: the process's RSS after a run of distinct long
prompts, with llama.cpp's default 8 GiB cache and with ours (each in a fresh process).

``--prompt`` measures instead the threads that read a reply's prompt (``llm.prompt_threads``;
generating keeps one thread): the time to the first token of a reply whose role prompt and
history are cached and whose last message carries a turn's notes (about 200 new tokens, as at
the customer's pause with the shop's entries found), idle and with faster-whisper (1 thread)
transcribing beside it, as when a customer goes on and pauses again; Whisper's seconds per
utterance beside it show what the read costs it.

    .venv/bin/python bench/threads.py [--rounds 3] [--skip-rss] [--prompt]

Compare within one run only: what else runs on the machine moves every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openai import AsyncOpenAI  # noqa: E402

from robot.llm.embedded import EmbeddedServer, ServerOptions  # noqa: E402

MODEL = "embedded:smollm2-135m"
ROLE = ("You are Sakura, a friendly travel consultant at a travel agency kiosk. You help one customer "
        "plan a trip that visits two tourist spots. Keep every answer short.")
HISTORY = [
    ("user", "Hello. My name is Ken. I would like to plan a trip to Kyoto and Nara."),
    ("assistant", "Welcome, Ken! Kyoto and Nara are a lovely pair. When would you like to travel?"),
    ("user", "We are two adults, we want to go in April, and our budget is two thousand dollars."),
    ("assistant", "April is cherry blossom season, so book early. Two thousand dollars is enough for a week."),
]
QUESTION = "What should we see first, the temples in Kyoto or the deer park in Nara?"
REPLY_TOKENS = 80
SUMMARY_TOKENS = 300
CUSTOMER = "What should we see first, the temples in Kyoto or the deer park in Nara?"


@dataclass(frozen=True)
class LlmSetting:
    label: str
    threads: int
    poll: int = 50
    batch: int = 2048  # llama.cpp's n_batch: prompt tokens per decoding step, all slots together
    summary_threads: int | None = None  # summaries on a server of their own with these threads


# Earlier runs also tried llama.cpp's busy-wait off (poll 0) and n_batch 256 (so that a reply's
# prompt might join a summary's sooner): neither helped, see README "Benchmarks".
SETTINGS = [LlmSetting("1 thread", 1), LlmSetting("2 threads", 2),
            LlmSetting("1 + summary srv 1", 1, summary_threads=1), LlmSetting("2 + summary srv 1", 2, summary_threads=1)]
CONDITIONS = ["idle", "loaded, STT 1 thread", "loaded, STT 2 threads"]


def reply_messages(n: int) -> list[dict[str, str]]:
    # Role prompt and history as in a real turn (llama.cpp reuses them from the slot's cache);
    # a new customer line each time, so every reply reads its own question.
    return [{"role": "system", "content": ROLE}] + [{"role": r, "content": t} for r, t in HISTORY] + [
        {"role": "user", "content": f"Question {n}. {QUESTION}"}]


def summary_messages(n: int) -> list[dict[str, str]]:
    # A different transcript each time: a summary never finds its prompt in the cache.
    turns = "\n".join(f"Customer: {t}" if r == "user" else f"Consultant: {t}" for r, t in HISTORY * 6)
    return [{"role": "system", "content": "You write the memory of a travel consultant about one customer."},
            {"role": "user", "content": f"Session {n}.\n{turns}\nWrite the updated memory."}]


async def stream_tokens(client: AsyncOpenAI, messages: list[dict[str, str]], max_tokens: int) -> tuple[float, float]:
    """(seconds to the first token, tokens/s after it); every chunk of llama.cpp's stream is one token."""
    started = time.perf_counter()
    first: float | None = None
    count = 0
    response = await client.chat.completions.create(
        model="m", messages=messages, max_tokens=max_tokens, stream=True, temperature=0.3, seed=7,  # type: ignore[arg-type]
        extra_body={"ignore_eos": True})  # every reply the same length, whatever the model says
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
            first = first or time.perf_counter()
    end = time.perf_counter()
    first = first or end
    return first - started, (count - 1) / (end - first) if count > 1 and end > first else 0.0


class SttLoad:
    """faster-whisper transcribing one utterance over and over on its own thread."""

    def __init__(self, model: object, pcm: object) -> None:
        self.model, self.pcm, self.times = model, pcm, []  # type: ignore[var-annotated]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            segments, _ = self.model.transcribe(self.pcm, language="en", beam_size=1, temperature=0.0)  # type: ignore[attr-defined]
            "".join(s.text for s in segments)
            self.times.append(time.perf_counter() - started)

    def __enter__(self) -> "SttLoad":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def measure(client: AsyncOpenAI, summarizer: AsyncOpenAI, condition: str, stt: dict[int, object],
                  pcm: object, round_no: int) -> tuple[float, float, list[float]]:
    n = round_no * len(CONDITIONS) + CONDITIONS.index(condition)
    if condition == "idle":
        first, rate = await stream_tokens(client, reply_messages(n), REPLY_TOKENS)
        return first, rate, []
    stt_threads = 1 if "1 thread" in condition else 2
    with SttLoad(stt[stt_threads], pcm) as load:
        summary = asyncio.create_task(stream_tokens(summarizer, summary_messages(n), SUMMARY_TOKENS))
        await asyncio.sleep(0.2)  # the summary is already reading its prompt when the customer's turn comes
        first, rate = await stream_tokens(client, reply_messages(n), REPLY_TOKENS)
        summary.cancel()  # closing its stream stops the server's generation too
        await asyncio.gather(summary, return_exceptions=True)
    return first, rate, load.times


def customer_pcm() -> object:
    from speech.audio import pcm_to_float
    from speech.espeak_cli import EspeakCliSynthesizer
    from speech.types import SAMPLE_RATE

    return pcm_to_float(EspeakCliSynthesizer("en-us", 140).synthesize_sync(CUSTOMER, SAMPLE_RATE).pcm)


def stt_models() -> dict[int, object]:
    from faster_whisper import WhisperModel

    from models import resolve_model_path

    path = str(resolve_model_path("embedded:tiny.en", "stt"))
    return {n: WhisperModel(path, device="cpu", compute_type="int8", cpu_threads=n, num_workers=1) for n in (1, 2)}


async def thread_bench(rounds: int) -> None:
    pcm, stt = customer_pcm(), stt_models()
    servers_kept: list[EmbeddedServer] = []
    servers = {s: await EmbeddedServer.start(MODEL, ServerOptions(context_tokens=4096, threads=s.threads, poll=s.poll,
                                                                  batch_tokens=s.batch))
               for s in SETTINGS}
    clients = {s: AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0) for s, srv in servers.items()}
    summarizers = dict(clients)
    for s in SETTINGS:
        if s.summary_threads is not None:
            srv = await EmbeddedServer.start(MODEL, ServerOptions(context_tokens=4096, threads=s.summary_threads))
            servers_kept.append(srv)
            summarizers[s] = AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
    for client in clients.values():  # warm-up: the role prompt and history are in each server's cache
        await stream_tokens(client, reply_messages(-1), 4)
    results: dict[tuple[str, str], list[tuple[float, float, list[float]]]] = {}
    for round_no in range(rounds):
        for setting in SETTINGS:
            for condition in CONDITIONS:
                got = await measure(clients[setting], summarizers[setting], condition, stt, pcm, round_no)
                results.setdefault((setting.label, condition), []).append(got)
    print(f"{'LLM':<20}{'condition':<24}{'first token':>12}{'tokens/s':>10}{'STT s/utt':>11}  (medians of {rounds})")
    for setting in SETTINGS:
        for condition in CONDITIONS:
            runs = results[(setting.label, condition)]
            stt_times = [t for r in runs for t in r[2]]
            stt_col = f"{statistics.median(stt_times):>11.2f}" if stt_times else f"{'-':>11}"
            print(f"{setting.label:<20}{condition:<24}{statistics.median(r[0] for r in runs) * 1000:>10.0f}ms"
                  f"{statistics.median(r[1] for r in runs):>10.1f}{stt_col}")
    for client in {*clients.values(), *summarizers.values()}:
        await client.close()


NOTES = ("From the shop's own information: Kyoto Temples Day Tour: a guided day visiting Kinkaku-ji, "
         "Ginkaku-ji and Fushimi Inari; 9,800 yen per adult, 4,900 yen per child; departs 9:00 from Kyoto "
         "Station, back by 17:00; lunch not included. Nara Deer Park Half Day: the deer park, Todai-ji and "
         "Kasuga Taisha; 6,500 yen per adult; by the JR Nara Line, 45 minutes from Kyoto. Cherry blossoms "
         "in Kyoto usually open in late March and early April; book hotels early in that season.")


def notes_messages(n: int) -> list[dict[str, str]]:
    # The turn's notes come before the customer's words, which start with a new number each
    # time: nothing of the last message is in the cache.
    return reply_messages(-1)[:-1] + [{"role": "user", "content": f"Visit {n}. {NOTES}\n\n{QUESTION}"}]


async def prompt_bench(rounds: int) -> None:
    pcm, stt = customer_pcm(), stt_models()
    servers = {n: await EmbeddedServer.start(MODEL, ServerOptions(context_tokens=4096, threads=1, batch_threads=n))
               for n in (1, 2)}
    clients = {n: AsyncOpenAI(base_url=srv.base_url, api_key="none", max_retries=0) for n, srv in servers.items()}
    for client in clients.values():
        await stream_tokens(client, reply_messages(-1), 4)
    firsts: dict[tuple[int, str], list[float]] = {}
    stt_times: dict[tuple[int, str], list[float]] = {}
    for round_no in range(rounds):
        for n, client in clients.items():
            for condition in ("idle", "STT 1 thread beside it"):
                key, visit = (n, condition), round_no * 10 + n * 2 + (condition != "idle")
                if condition == "idle":
                    first, _ = await stream_tokens(client, notes_messages(visit), 2)
                else:
                    with SttLoad(stt[1], pcm) as load:
                        await asyncio.sleep(0.3)  # Whisper is under way when the prompt comes
                        first, _ = await stream_tokens(client, notes_messages(visit), 2)
                    stt_times.setdefault(key, []).extend(load.times)
                firsts.setdefault(key, []).append(first)
    print(f"{'prompt threads':<16}{'condition':<26}{'first token':>12}{'STT s/utt':>11}  (medians of {rounds})")
    for key, values in firsts.items():
        stt_col = f"{statistics.median(stt_times[key]):>11.2f}" if key in stt_times else f"{'-':>11}"
        print(f"{key[0]:<16}{key[1]:<26}{statistics.median(values) * 1000:>10.0f}ms{stt_col}")
    for client in clients.values():
        await client.close()


async def rss_child(cache_mib: int, prompts: int) -> None:
    """One server, distinct long prompts one after another; print RSS before and after (MB)."""
    server = await EmbeddedServer.start(MODEL, ServerOptions(context_tokens=4096, threads=1, prompt_cache_mib=cache_mib))
    client = AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    before = rss_mb()
    for i in range(prompts):
        text = " ".join(f"Turn {i}.{k}: the customer asked about day {k} of trip {i} to Kyoto and Nara." for k in range(60))
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}], max_tokens=1)
    print(json.dumps({"cache_mib": cache_mib, "before_mb": before, "after_mb": rss_mb()}))
    await client.close()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_bench(prompts: int) -> None:
    print(f"\nprompt cache: RSS of a fresh process before and after {prompts} distinct ~1,300-token prompts")
    for mib in (8192, ServerOptions(0, 1).prompt_cache_mib):
        out = subprocess.run([sys.executable, __file__, "--rss-child", str(mib), "--prompts", str(prompts)],
                             capture_output=True, text=True, timeout=900, cwd=REPO)
        line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]
        figures = json.loads(line)
        print(f"  cache_ram_mib {mib:>5}: {figures['before_mb']:.0f} MB -> {figures['after_mb']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=24)
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--prompt", action="store_true", help="the threads that read a reply's prompt instead")
    parser.add_argument("--rss-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child is not None:
        asyncio.run(rss_child(args.rss_child, args.prompts))
        return
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    if args.prompt:
        asyncio.run(prompt_bench(args.rounds))
        return
    asyncio.run(thread_bench(args.rounds))
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    if not args.skip_rss:
        rss_bench(args.prompts)


if __name__ == "__main__":
    main()
