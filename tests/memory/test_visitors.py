"""One memory per visitor over one SQLite file: who sees what, what is kept, what is gone.

The summaries come from the rule-based double (conftest.py); the store is a real SQLite
file, and forgetting is checked on the bytes of its files."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memory import ManualClock, StoreSettings, SummaryPolicy, create_memory
from memory.core.base import Remark
from memory.stores.sqlite_db import SqliteDb
from memory.stores.sqlite_store import SqliteStore
from memory.visitors import DAY_S, Retention, VisitorMemory, is_anonymous
from tests.memory.conftest import PERSONA

REPO = Path(__file__).resolve().parents[2]
KEN = ("My name is Ken Tanaka and my budget is 2,000 dollars.", "Noted, Mr. Tanaka.")
MARIA = ("I am Maria and I need a wheelchair.", "Of course, Maria.")


@pytest.fixture
def visitors(db: Path, llm, clock: ManualClock):
    made: list[VisitorMemory] = []

    def make(retention: Retention = Retention(known_days=90, anonymous_days=0)) -> VisitorMemory:
        store = SqliteStore(db)

        async def open_visitor(name: str, prompt: str):
            return await create_memory(prompt, SummaryPolicy(update_interval_s=300), StoreSettings(db_path=db),
                                       llm, clock=clock, store=store, user=name)

        memory = VisitorMemory(open_visitor, PERSONA, clock, store, retention)
        made.append(memory)
        return memory

    yield make


async def talk(memory: VisitorMemory, lines: tuple[str, str]) -> None:
    await memory.build_messages(lines[0])
    await memory.record(Remark("user", lines[0]))
    await memory.record(Remark("assistant", lines[1]))


def file_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


async def test_the_next_visitor_sees_nothing_of_the_one_before(visitors, db):
    memory = visitors()
    await memory.start()
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.begin(None)  # another visitor walks up: Ken's session ends
    messages = await memory.build_messages("Hello, I would like to go to Osaka.")
    sent = " ".join(m["content"] for m in messages)
    for fact in ("Ken", "Tanaka", "2,000", "budget"):
        assert fact not in sent
    assert messages[0]["content"].startswith(PERSONA)
    await memory.aclose()


async def test_a_returning_visitor_gets_their_memory_back(visitors, db):
    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.end()  # the forced summary folds Ken's talk, in the background
    await memory.wait_idle()
    await memory.begin(None)
    await talk(memory, MARIA)
    await memory.begin("card-1")  # Ken comes back
    prompt = (await memory.build_messages("Hello again."))[0]["content"]
    assert "Ken" in prompt and "2,000" in prompt
    assert "Maria" not in prompt and "wheelchair" not in prompt
    await memory.aclose()


async def test_an_anonymous_visitor_is_gone_from_every_file_when_the_session_ends(visitors, db):
    memory = visitors()
    name = await memory.begin(None)
    assert is_anonymous(name)
    await talk(memory, MARIA)
    assert b"wheelchair" in file_bytes(db)
    await memory.end()
    await memory.wait_idle()
    view = SqliteDb(db)
    assert view.user_names() == []
    view.close()
    assert b"wheelchair" not in file_bytes(db) and b"Maria" not in file_bytes(db)
    await memory.aclose()


async def test_the_session_is_folded_into_the_visitors_summary_at_exit(visitors, db):
    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.aclose()  # Ctrl-C: nothing said is lost
    view = SqliteDb(db)
    state = view.load_user("card-1", now=0)
    view.close()
    assert state.summary is not None and "Ken" in state.summary.text
    assert state.history == []


CRASHING_KIOSK = textwrap.dedent("""
    import asyncio, sys
    from memory import StoreSettings, SummaryPolicy, SystemClock, create_memory
    from memory.core.base import Remark
    from memory.stores.sqlite_store import SqliteStore
    from memory.visitors import VisitorMemory

    async def llm(messages):
        await asyncio.Event().wait()  # the forced summary never finishes: it is killed first

    async def main():
        store = SqliteStore(sys.argv[1])
        async def open_visitor(name, prompt):
            return await create_memory(prompt, SummaryPolicy(), StoreSettings(db_path=sys.argv[1]), llm,
                                       store=store, user=name)
        memory = VisitorMemory(open_visitor, "You are a consultant.", SystemClock(), store)
        await memory.begin("card-9")
        for role, text in [("user", "My name is Ken Tanaka."), ("assistant", "Hello, Mr. Tanaka.")]:
            await memory.record(Remark(role, text))
        await memory.end()  # the session closes: its forced summary starts
        print("closing", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
""")


async def test_kill_9_before_the_forced_summary_loses_nothing(visitors, db):
    child = subprocess.Popen([sys.executable, "-c", CRASHING_KIOSK, str(db)], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "closing"
        time.sleep(0.2)  # the summary request is on its way
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=10)
        child.stdout.close()
    restarted = visitors()
    await restarted.start()
    await restarted.begin("card-9")  # the visitor comes back: the raw turns are there
    assert [t.text for t in restarted.history] == ["My name is Ken Tanaka.", "Hello, Mr. Tanaka."]
    await restarted.aclose()  # and this session's forced summary folds them
    view = SqliteDb(db)
    state = view.load_user("card-9", now=0)
    view.close()
    assert state.history == [] and "Ken" in state.summary.text


async def test_known_visitors_expire_after_their_retention(visitors, db, clock):
    await clock.advance(time.time() - clock.now())  # remarks are stamped with the wall clock
    memory = visitors(Retention(known_days=30, anonymous_days=0))
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.begin("card-2")
    await talk(memory, MARIA)
    await memory.end()
    await memory.wait_idle()
    await clock.advance(29 * DAY_S)
    assert await memory.sweep() == []
    await clock.advance(2 * DAY_S)
    await memory.begin("card-3")  # the robot runs on: the next session's close sweeps
    await talk(memory, ("Hello.", "Hello!"))
    await memory.end()
    await memory.wait_idle()
    view = SqliteDb(db)
    assert view.user_names() == ["card-3"]
    view.close()
    assert b"Tanaka" not in file_bytes(db)
    await memory.aclose()


async def test_a_new_persona_keeps_the_visitor_and_the_next_visitor_starts_clean(visitors, db):
    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.set_persona_prompt("You are Hiro, a hotel concierge.")
    prompt_now = await memory.build_messages("And hotels?")
    assert prompt_now[0]["content"].startswith("You are Hiro") and "Ken" in " ".join(m["content"] for m in prompt_now)
    await memory.begin(None)
    fresh = await memory.build_messages("Hello.")
    assert fresh[0]["content"].startswith("You are Hiro") and "Ken" not in " ".join(m["content"] for m in fresh)
    await memory.aclose()


async def test_forgetting_the_visitor_now_talking_wipes_and_restarts_them(visitors, db):
    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    report = await memory.forget_user("card-1")
    assert "deleted user 'card-1'" in report
    assert "Ken" not in " ".join(m["content"] for m in await memory.build_messages("Hi."))
    await memory.aclose()
    assert b"Tanaka" not in file_bytes(db)


async def test_a_forget_from_the_command_line_counts_before_the_next_reply(visitors, db):
    from memory import admin

    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    assert "deleted user 'card-1'" in await admin.forget(db, "card-1")  # another process
    await memory.refresh()  # what the session does before each turn
    sent = " ".join(m["content"] for m in await memory.build_messages("Hi."))
    assert "Ken" not in sent and "Tanaka" not in sent
    await memory.aclose()


async def test_memory_list_shows_each_visitor(visitors, db):
    from memory import admin

    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    await memory.aclose()
    lines = (await admin.list_visitors(db)).splitlines()
    assert lines[0].split() == ["visitor", "first", "seen", "last", "seen", "turns", "summary"]
    assert lines[1].startswith("card-1 ") and lines[1].split()[-2:] == ["2", "v1"]


async def test_a_hung_summarizer_does_not_hold_the_exit_and_loses_nothing(visitors, db, llm):
    memory = visitors()
    await memory.begin("card-1")
    await talk(memory, KEN)
    llm.hang = True  # the LLM server accepts the summary request and never answers
    await memory.aclose(timeout_s=0.2)
    view = SqliteDb(db)
    state = view.load_user("card-1", now=0)
    view.close()
    assert [t.text for t in state.history] == list(KEN) and state.summary is None


def _visitors_whose_summaries_never_end(db, clock) -> VisitorMemory:
    """A visitor memory on ``db`` whose LLM accepts a summary request and never answers."""

    async def hung_llm(messages):
        await asyncio.Event().wait()

    store = SqliteStore(db)

    async def open_visitor(name: str, prompt: str):
        return await create_memory(prompt, SummaryPolicy(update_interval_s=300), StoreSettings(db_path=db),
                                   hung_llm, clock=clock, store=store, user=name)

    return VisitorMemory(open_visitor, PERSONA, clock, store)


async def test_an_exit_out_of_time_stops_the_summary_at_once_and_loses_nothing(visitors, db, clock):
    """The exit's wait (session.exit_wait_s) bounds it: once it runs out, the visitor's close
    stops its summary at once. It went on to give the summary the memory's own close timeout
    (5 s more at every `robot run` exit with an open visit, 0 s of wait asked for)."""

    memory = _visitors_whose_summaries_never_end(db, clock)
    await memory.begin("card-8")
    for role, text in [("user", "We are two adults."), ("assistant", "Noted: travellers 2 adults.")]:
        await memory.record(Remark(role, text))
    memory.current._close_timeout_s = 3600  # the memory's own wait, made long enough to be seen as a hang
    await asyncio.wait_for(memory.aclose(timeout_s=0), 60)
    restarted = visitors()
    await restarted.start()
    await restarted.begin("card-8")
    assert [t.text for t in restarted.history] == ["We are two adults.", "Noted: travellers 2 adults."]
    await restarted.aclose()


async def test_a_hurried_exit_stops_the_forced_summary_and_loses_nothing(visitors, db, clock):
    """An operator's second Ctrl-C (`robot run`): the exit stops waiting for a summary the LLM
    is slow to write; the session's turns stay raw and are folded at the visitor's next visit."""

    memory = _visitors_whose_summaries_never_end(db, clock)  # the forced summary would take the whole exit timeout
    await memory.begin("card-9")
    for role, text in [("user", "My name is Ken Tanaka."), ("assistant", "Hello, Mr. Tanaka.")]:
        await memory.record(Remark(role, text))
    closing = asyncio.create_task(memory.aclose(timeout_s=60))
    await asyncio.sleep(0.2)  # the summary request is on its way
    assert not closing.done()
    memory.hurry()
    await asyncio.wait_for(closing, 10)  # the dual store gives a running summary 5 s, then cancels it
    restarted = visitors()
    await restarted.start()
    await restarted.begin("card-9")
    assert [t.text for t in restarted.history] == ["My name is Ken Tanaka.", "Hello, Mr. Tanaka."]
    await restarted.aclose()
