"""What the memory store costs a kiosk, SQLite against PostgreSQL, side by side:

1. recording one turn (``DualStoreMemory.record``: the write, durable on return), p50/p95;
2. building a reply's prompt (``build_messages``) after those turns, p50/p95;
3. a fleet: 1, 4 and 16 robots writing turns as fast as they can into one store (one
   PostgreSQL database; one SQLite file for comparison), each robot a separate process
   with its own store (its own connection pool), as real kiosks are: turns/s over the
   whole fleet, per-turn p50/p95, and the turns that failed (a busy SQLite file says so).

    .venv/bin/python bench/store.py [--turns 300] [--fleet-turns 200] [--pg-url URL] [--pg-fsync on|off]

The memory is the robot's own (``create_memory``, strategy rsum) over the store. No summary
runs while turns are timed: whatever ``update_interval_s`` is, the token backstop
(``memory/recall/prompt_budget.py``) starts one after some 25 turns, so the summarizing LLM is held
until the timing ends (one summary waits on it, no other starts). The prompts are then
built at their largest: the summaries fold the history, and new turns are added until the
next summary starts, so the prompt holds the summary and the longest history it carries.

PostgreSQL is a throwaway server (``tests/pg_server.PgServer``, its data under /tmp, deleted
at the end) unless ``--pg-url`` names one (the bench then leaves its visitors in that
database: ``ken-bench<time>``, ``robot-N-bench<time>-<fleet size>x``). It runs with fsync
on, like SQLite's ``synchronous=FULL``, unless ``--pg-fsync off`` (the tests' setting).
SQLite files go to a temporary directory. Figures depend on the machine and what else runs
on it: compare the two stores within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Only memory/ at the top: each fleet robot is a fresh process importing this file.
from memory.core.base import LLMCallable, Message, Remark  # noqa: E402
from memory.core.settings import StoreSettings, SummaryPolicy  # noqa: E402
from memory.dual_store import DualStoreMemory  # noqa: E402
from memory.factory import create_memory  # noqa: E402
from memory.stores.location import parse_location  # noqa: E402
from memory.stores.opening import open_store  # noqa: E402

if TYPE_CHECKING:
    from tests.pg_server import PgServer

PERSONA = REPO / "config/personas/travel_agent.yaml"
WARMUP = 10  # untimed turns first (the pool's and the file's first uses)
USER_TEXT = "Could you suggest a quiet temple in Kyoto that we can reach without stairs?"
SUMMARY = "Ken Tanaka plans a week in Kyoto and Nara in April with his wife; budget two thousand dollars."
LINES = (
    ("user", "Hello, my name is Ken Tanaka and I would like to plan a trip to Kyoto."),
    ("assistant", "Welcome, Mr. Tanaka. Kyoto is lovely in spring. When would you like to travel there?"),
    ("user", "We are thinking about the first two weeks of April, if the cherry blossoms are out."),
    ("assistant", "Early April is usually peak bloom. How many people are travelling, and what is your budget?"),
    ("user", "Two adults, my wife and me, and we hope to spend about two thousand dollars."),
    ("assistant", "Two thousand dollars is enough for a week with mid-range hotels and a rail pass."),
    ("user", "My wife uses a wheelchair, so every hotel needs step-free access and a roll-in shower."),
    ("assistant", "Understood. I will only suggest hotels with step-free access and accessible bathrooms for you."),
    ("user", "Could we also spend a day in Nara to see the deer and the big Buddha?"),
    ("assistant", "Yes, Nara is forty-five minutes from Kyoto by train, and Todai-ji is mostly step-free."),
)


# --- measurement helpers ---------------------------------------------------------------------

def pct(values: list[float], q: float) -> float:
    """The q-th percentile, nearest rank (NaN when there is nothing)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def remark(i: int) -> Remark:
    role, text = LINES[i % len(LINES)]
    return Remark(role, text, turn_id=f"turn-{i // 2}")  # type: ignore[arg-type]


async def timed_ms(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


def held_llm(gate: asyncio.Event) -> LLMCallable:
    """The summarizing LLM: a short fixed summary, once ``gate`` is set."""
    async def llm(messages: list[Message]) -> str:
        await gate.wait()
        return SUMMARY
    return llm


async def open_memory(store: str, user: str, persona: str, gate: asyncio.Event) -> DualStoreMemory:
    memory = await create_memory(persona, SummaryPolicy(update_interval_s=3600),
                                 StoreSettings(store=store, user=user), held_llm(gate))
    assert isinstance(memory, DualStoreMemory)
    return memory


async def prepare_store(store: str) -> None:
    """Create the schema once, before the robots start together."""
    s = open_store(parse_location(store))
    try:
        await s.connect()  # type: ignore[attr-defined]
        await s.has_user("nobody")
    finally:
        await s.close()


# --- one robot: record and build-prompt latency --------------------------------------------

@dataclass
class Single:
    record_ms: list[float]
    build_ms: list[float]
    messages: int  # in each built prompt
    history: int  # turns left unsummarized when the prompts were built
    summary: int  # the summary's version then


async def fill_to_trigger(memory: DualStoreMemory, gate: asyncio.Event, said: int) -> None:
    """The largest prompt a reply gets: let the summaries fold the history, then hold the LLM
    again and add turns until the next summary starts (it waits): the history is then as
    long as it grows before a summary, all of it still in the prompt."""
    gate.set()
    await memory.wait_idle()
    gate.clear()
    while not memory.updating:
        await memory.record(remark(said))
        said += 1


async def one_robot(store: str, user: str, persona: str, turns: int, calls: int) -> Single:
    gate = asyncio.Event()
    memory = await open_memory(store, user, persona, gate)
    try:
        for i in range(WARMUP):
            await memory.record(remark(i))
        record_ms = [await timed_ms(lambda i=i: memory.record(remark(i))) for i in range(WARMUP, WARMUP + turns)]
        await fill_to_trigger(memory, gate, WARMUP + turns)
        build_ms = [await timed_ms(lambda: memory.build_messages(USER_TEXT)) for _ in range(calls)]
        messages = len(await memory.build_messages(USER_TEXT))
        version = memory.summary.version if memory.summary else 0
        return Single(record_ms, build_ms, messages, len(memory.history), version)
    finally:
        gate.set()
        await memory.aclose()


# --- the fleet: each robot a process running this file with --robot ------------------------

@dataclass
class RobotSpec:
    store: str
    user: str
    persona: str
    turns: int


@dataclass
class RobotRun:
    start: float  # time.monotonic(): CLOCK_MONOTONIC, one clock for every process of the machine
    end: float
    ms: list[float]  # each recorded turn
    errors: list[str]  # each turn that failed


async def robot_process(spec: RobotSpec) -> None:
    """A fleet robot: open its visitor, say READY, wait for GO on stdin, record its turns
    as fast as it can, print RESULT {json}."""
    gate = asyncio.Event()
    memory = await open_memory(spec.store, spec.user, spec.persona, gate)
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    run = RobotRun(time.monotonic(), 0.0, [], [])
    for i in range(spec.turns):
        try:
            run.ms.append(await timed_ms(lambda i=i: memory.record(remark(i))))
        except Exception as exc:  # noqa: BLE001 - counted and shown: a locked SQLite file, say
            run.errors.append(f"{type(exc).__name__}: {exc}")
    run.end = time.monotonic()
    gate.set()
    await memory.aclose()
    print("RESULT " + json.dumps(asdict(run)), flush=True)


@dataclass
class Fleet:
    turns_per_s: float
    ms: list[float]
    errors: list[str]


def spawn(spec: RobotSpec) -> subprocess.Popen[str]:
    log = tempfile.TemporaryFile("w+")  # not a pipe: a chatty robot cannot block on it
    return subprocess.Popen([sys.executable, __file__, "--robot", json.dumps(asdict(spec))], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)


def result_of(proc: subprocess.Popen[str]) -> RobotRun:
    out, _ = proc.communicate(timeout=600)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        log = proc.stderr
        assert log is not None
        log.seek(0)
        raise RuntimeError(f"a robot process failed (exit {proc.returncode}): {log.read().strip()[-600:]}")
    return RobotRun(**json.loads(lines[-1][len("RESULT "):]))


def run_fleet(store: str, robots: int, turns: int, persona: str, tag: str) -> Fleet:
    asyncio.run(prepare_store(store))
    procs = [spawn(RobotSpec(store, f"robot-{i + 1}{tag}", persona, turns)) for i in range(robots)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "READY":
                result_of(proc)  # raises, with what the robot wrote on stderr
                raise RuntimeError("a robot process did not say READY")
        for proc in procs:  # all start together
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        runs = [result_of(proc) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    wall = max(r.end for r in runs) - min(r.start for r in runs)
    ms, errors = [m for r in runs for m in r.ms], [e for r in runs for e in r.errors]
    return Fleet(len(ms) / wall, ms, errors)


# --- PostgreSQL, and the report -----------------------------------------------------------

def start_pg(fsync: bool) -> PgServer:
    """A throwaway PostgreSQL server (tests/pg_server.py), fsync on unless told otherwise."""
    from tests.pg_server import PgServer

    class DurablePgServer(PgServer):
        def start(self) -> None:  # PgServer.start, without its -c fsync=off
            options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
            self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "server.log"),
                      "-w", "-t", "30", "start")

    server = (DurablePgServer if fsync else PgServer)()
    try:
        server.start()
    except BaseException:
        server.close()
        raise
    return server


def report_single(sq: Single, pg: Single) -> None:
    rows = (("record a turn", sq.record_ms, pg.record_ms), ("build a prompt", sq.build_ms, pg.build_ms))
    print(f"\n{'one robot':<24}{'SQLite':>10}{'PostgreSQL':>12}")
    for label, a, b in rows:
        for q in (50, 95):
            print(f"{label + f'  p{q} ms':<24}{pct(a, q):>10.3f}{pct(b, q):>12.3f}")
    print(f"(each prompt, SQLite / PostgreSQL: {sq.messages} / {pg.messages} messages: the role prompt with "
          f"summary v{sq.summary} / v{pg.summary}, {sq.history} / {pg.history} unsummarized turns and the new "
          f"utterance; built from RAM, the store is not read)")
    print("\nThe turn write is not on the reply path: the controller records the customer's turn in a task "
          "while the reply starts (robot/dialogue/controller.py, _converse).")
    print(f"time a reply would have waited if it were on the path (record p95): "
          f"SQLite {pct(sq.record_ms, 95):.2f} ms, PostgreSQL {pct(pg.record_ms, 95):.2f} ms")


def fleet_row(robots: int, store: str, run: Callable[[], Fleet]) -> None:
    try:
        f = run()
    except Exception as exc:  # noqa: BLE001 - what happened is the figure
        print(f"{robots:>6}  {store:<11} failed: {exc}")
        return
    print(f"{robots:>6}  {store:<11}{f.turns_per_s:>9.0f}{pct(f.ms, 50):>9.2f}{pct(f.ms, 95):>9.2f}"
          f"{len(f.errors):>8}")
    if f.errors:
        print(f"{'':8}first failure: {f.errors[0][:150]}")


def run(args: argparse.Namespace, pg_url: Callable[[], str], tmp: Path, tag: str, persona: str) -> None:
    sq = asyncio.run(one_robot(str(tmp / "single.sqlite3"), f"ken{tag}", persona, args.turns, args.turns))
    pg = asyncio.run(one_robot(pg_url(), f"ken{tag}", persona, args.turns, args.turns))
    report_single(sq, pg)
    print(f"\nfleet: robots writing into one store at once, each robot a separate process with its own store, "
          f"{args.fleet_turns} turns each; the robots and the database share this machine's {os.cpu_count()} CPUs")
    print(f"{'robots':>6}  {'store':<11}{'turns/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'failed':>8}")
    for robots in (1, 4, 16):
        fleet_row(robots, "SQLite", lambda: run_fleet(str(tmp / f"fleet-{robots}.sqlite3"), robots,
                                                      args.fleet_turns, persona, tag))
        url = pg_url()
        fleet_row(robots, "PostgreSQL", lambda: run_fleet(url, robots, args.fleet_turns, persona,
                                                          f"{tag}-{robots}x" if tag else tag))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="turns recorded (and prompts built) by one robot")
    parser.add_argument("--fleet-turns", type=int, default=200, help="turns each fleet robot records")
    parser.add_argument("--pg-url", help="an existing PostgreSQL database instead of a throwaway server")
    parser.add_argument("--pg-fsync", choices=("on", "off"), default="on", help="the throwaway server's fsync")
    parser.add_argument("--robot", help=argparse.SUPPRESS)  # a fleet robot's process (JSON spec)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.robot:
        asyncio.run(robot_process(RobotSpec(**json.loads(args.robot))))
        return
    from robot.control.actions import persona_prompt  # the robot's role prompt (not needed by fleet robots)
    from config.loader import load_persona

    persona = persona_prompt(load_persona(PERSONA))
    print(f"store bench: one robot records {args.turns} turns (after {WARMUP} untimed) and builds "
          f"{args.turns} prompts; then fleets of 1, 4 and 16 robot processes")
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        if args.pg_url:
            print(f"PostgreSQL: {args.pg_url} (given); SQLite: synchronous=FULL, WAL")
            run(args, lambda: args.pg_url, Path(tmp), f"-bench{int(time.time())}", persona)
            return
        import pytest

        try:
            server = start_pg(args.pg_fsync == "on")
        except pytest.fail.Exception as exc:  # PgServer reports through pytest.fail
            sys.exit(f"could not start a throwaway PostgreSQL server: {exc.msg}\n"
                     "(install it with scripts/setup.sh --test, or give --pg-url URL)")
        try:
            print(f"PostgreSQL {server.bin.parent.name}: throwaway server, fsync {args.pg_fsync}, a fresh "
                  f"database per measurement; SQLite: synchronous=FULL, WAL")
            run(args, server.create_database, Path(tmp), "", persona)
        finally:
            server.close()


if __name__ == "__main__":
    main()
