"""Visitor sessions: opened by a turn or a command, closed by silence, a command or exit,
announced as events. The clock is the injectable one; the store a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import ManualClock, StoreSettings, SummaryPolicy, create_memory
from memory.core.base import Remark
from memory.stores.sqlite_db import SqliteDb
from memory.stores.sqlite_store import SqliteStore
from memory.visitors import Retention, VisitorMemory
from robot.control.commands import SessionEnd, SessionStart, parse_command
from robot.core.events import RecordingPublisher, SessionEvent
from robot.dialogue.sessions import Sessions
from tests.memory.conftest import PERSONA, RuleLLM


@pytest.fixture
async def kiosk(tmp_path: Path):
    clock = ManualClock(start=1_000_000.0)
    db = tmp_path / "memory.sqlite3"
    store = SqliteStore(db)

    async def open_visitor(name: str, prompt: str):
        return await create_memory(prompt, SummaryPolicy(update_interval_s=300), StoreSettings(db_path=db),
                                   RuleLLM(), clock=clock, store=store, user=name)

    memory = VisitorMemory(open_visitor, PERSONA, clock, store, Retention())
    recorder = RecordingPublisher()
    sessions = Sessions(memory, recorder, clock, idle_timeout_s=90, after_goodbye_s=15)
    sessions.start_watching()
    yield sessions, clock, recorder, db
    await sessions.aclose()
    await memory.aclose()


async def customer_turn(sessions: Sessions, text: str) -> None:
    await sessions.turn()
    await sessions.memory.record(Remark("user", text))
    sessions.touch()


def session_events(recorder: RecordingPublisher) -> list[tuple[str, str, int, str]]:
    return [(e.state, e.visitor, e.turns, e.reason) for e in recorder.of(SessionEvent)]


async def test_the_first_turn_after_idle_opens_a_session_and_silence_closes_it(kiosk):
    sessions, clock, recorder, db = kiosk
    await customer_turn(sessions, "Hello, I want to see Kyoto.")
    assert session_events(recorder) == [("started", "anonymous", 0, "")]
    await clock.advance(89)
    assert sessions.open
    await customer_turn(sessions, "In April, please.")  # talking again restarts the idle clock
    await clock.advance(89)
    assert sessions.open
    await clock.advance(2)
    assert not sessions.open
    assert session_events(recorder)[-1] == ("ended", "anonymous", 2, "idle")
    await sessions.memory.wait_idle()
    assert SqliteDb(db).user_names() == []  # anonymous: not kept after the session


async def test_idle_timeout_runs_the_forced_summary_of_a_known_visitor(kiosk):
    sessions, clock, recorder, db = kiosk
    await sessions.start("card-7")
    await customer_turn(sessions, "My name is Ken and my budget is 2,000 dollars.")
    await clock.advance(91)
    await sessions.memory.wait_idle()
    assert session_events(recorder) == [("started", "card-7", 0, ""), ("ended", "card-7", 1, "idle")]
    state = SqliteDb(db).load_user("card-7", now=0)
    assert state.history == [] and "Ken" in state.summary.text  # the record is complete


async def test_a_new_visitor_ends_the_session_before(kiosk):
    sessions, clock, recorder, db = kiosk
    await sessions.start("card-7")
    await customer_turn(sessions, "Hello.")
    await sessions.start(None)
    assert session_events(recorder) == [("started", "card-7", 0, ""), ("ended", "card-7", 1, "new visitor"),
                                        ("started", "anonymous", 0, "")]
    assert await sessions.end() and not await sessions.end()


def test_session_commands_parse():
    assert parse_command(b'{"command": "session/start", "visitor": "card-7"}', 1000) == SessionStart(
        command="session/start", visitor="card-7")
    assert parse_command(b'{"command": "session/start"}', 1000).visitor is None
    assert parse_command(b'{"command": "session/end"}', 1000) == SessionEnd(command="session/end")
    assert parse_command(b'{"command": "forget", "visitor": "card-7"}', 1000).user == "card-7"


async def test_the_first_visitors_memory_finds_the_profile_slots_read_at_start_off_the_event_loop(tmp_path,
                                                                                                 monkeypatch):
    """The persona's profile slots are made at start-up, in a worker thread: making them loads
    dateparser's language data (0.25-0.7 s on a two-core Xeon), which held the event loop when
    the first visitor's memory opened at their first pause, and their turn waited out the whole
    hangover. A visitor's memory gets the slots made at start."""
    import threading

    from config.loader import DEFAULT_PERSONA, load_persona, load_settings
    from memory.recall import profile
    from memory.recall.slots import dates
    from robot.app.runtime import open_runtime

    on_the_loop: list[bool] = []
    warm = dates._warm

    def watched(code: str) -> None:
        on_the_loop.append(threading.current_thread() is threading.main_thread())
        return warm(code)

    monkeypatch.setattr(dates, "_warm", watched)
    monkeypatch.setattr(profile, "_MADE", {})  # as in a new process: no slots made yet
    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    async with open_runtime(settings, load_persona(DEFAULT_PERSONA), DEFAULT_PERSONA, audio_out="text",
                            listen=False) as rt:
        assert on_the_loop == [False]  # made once at start, in a worker thread (the persona has a date slot)
        await rt.controller.sessions.open_early()  # the first visitor's first words
        assert rt.controller.sessions.open
        assert on_the_loop == [False]  # the visitor's memory made none of its own


async def test_a_goodbye_ends_the_session_sooner_unless_the_visitor_goes_on(kiosk):
    """After the farewell the session closes after ``after_goodbye_s`` of silence (reason
    "goodbye"), not the whole idle timeout; a turn within it puts the idle timeout back."""
    sessions, clock, recorder, _ = kiosk
    await customer_turn(sessions, "Thank you, that is all for today.")
    sessions.goodbye()
    await clock.advance(10)
    await customer_turn(sessions, "Oh, one more thing: is Nara far?")  # they went on
    await clock.advance(20)
    assert sessions.open  # the whole idle timeout again
    sessions.goodbye()
    await clock.advance(14)
    assert sessions.open
    await clock.advance(2)
    assert not sessions.open
    assert session_events(recorder)[-1] == ("ended", "anonymous", 2, "goodbye")
    sessions.goodbye()  # no session: nothing to end
    assert not sessions.open
