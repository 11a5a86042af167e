"""A fleet of kiosks on one PostgreSQL memory store (a real server this test session starts):
robots writing the same visitor at once, the server going away mid-conversation, an
unreachable server at start, forget leaving no trace, and a kiosk's SQLite file migrated."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory import StoreSettings, SummaryPolicy, create_memory
from memory.stores.pg_store import PostgresStore
from robot.app.cli import main
from tests.memory.backends import pg_server  # noqa: F401 - fixture
from tests.memory.conftest import PERSONA, RuleLLM, say
from tests.pg_server import free_port

REPO = Path(__file__).resolve().parents[2]

ROBOT = textwrap.dedent("""
    import asyncio, sys
    from memory import StoreSettings, SummaryPolicy, create_memory
    from memory.core.base import Remark

    async def llm(messages):
        await asyncio.sleep(0.01)  # summaries run while the turns keep coming, on both robots
        said = [line for line in messages[-1]["content"].splitlines() if "says" in line]
        return " ".join(said) or "Nothing new."

    async def main():
        url, robot, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
        memory = await create_memory("You are a consultant.",
                                     SummaryPolicy(update_after_turns=3, retry_backoff_s=0.05),
                                     StoreSettings(store=url, user="ken"), llm)
        await memory.start()
        for i in range(n):
            await memory.record(Remark("user", f"{robot} says {i}"))
            await asyncio.sleep(0.01)
        await memory.flush()
        await memory.aclose()

    asyncio.run(main())
""")


async def _memory(url: str, llm, **policy):
    memory = await create_memory(PERSONA, SummaryPolicy(update_interval_s=300, **policy),
                                 StoreSettings(store=url, user="ken"), llm)
    await memory.start()
    return memory


async def test_two_robot_processes_write_one_visitor_at_once(pg_server):
    url = pg_server.create_database()
    await PostgresStore(url).connect()  # the schema first, so the robots race on turns, not on it
    robots = [subprocess.Popen([sys.executable, "-c", ROBOT, url, name, "40"], cwd=REPO, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in ("kiosk1", "kiosk2")]
    for robot in robots:
        _, err = robot.communicate(timeout=120)
        assert robot.returncode == 0, err
    store = PostgresStore(url)
    try:
        dump = await store.dump_user("ken")
    finally:
        await store.close()
    said = sorted(t.text for t in dump.turns)
    assert said == sorted(f"{robot} says {i}" for robot in ("kiosk1", "kiosk2") for i in range(40))  # none lost
    by_version = sorted(dump.summaries, key=lambda s: s.version)
    assert [s.version for s in by_version] == list(range(1, len(by_version) + 1)) and len(by_version) >= 2
    # One line of versions: each folded onto the one before it, none onto a replaced one.
    assert [s.predecessor_id for s in by_version] == [None] + [s.id for s in by_version[:-1]]
    assert dump.current_summary_id == by_version[-1].id


async def test_a_summary_racing_another_robots_is_not_committed_over_it(pg_server):
    url = pg_server.create_database()
    slow, fast = RuleLLM(), RuleLLM()
    kiosk1, kiosk2 = await _memory(url, slow), await _memory(url, fast)
    try:
        await say(kiosk1, "My name is Ken.")
        await say(kiosk2, "Our budget is 2000 dollars.")
        slow.gate = asyncio.Event()
        racing = asyncio.create_task(kiosk1.flush())  # kiosk 1 folds onto "no summary yet" ...
        await asyncio.sleep(0.1)
        assert await kiosk2.flush()  # ... while kiosk 2 commits v1
        slow.gate.set()
        assert await racing is False  # refused: it would have replaced v1 with one that never saw it
        assert kiosk1.summary.version == 1 and "2000" in kiosk1.summary.text  # kiosk 2's, reloaded
        await say(kiosk1, "We like temples.")
        slow.gate = None
        assert await kiosk1.flush()
        assert kiosk1.summary.version == 2 and kiosk1.summary.predecessor_id == kiosk2.summary.id
        assert "2000" in kiosk1.summary.text and "Ken" in kiosk1.summary.text and "temples" in kiosk1.summary.text
    finally:
        await kiosk1.aclose()
        await kiosk2.aclose()


async def test_the_server_going_away_mid_conversation_loses_no_turn(pg_server):
    url = pg_server.create_database()
    outages: list[str] = []
    memory = await create_memory(PERSONA, SummaryPolicy(update_interval_s=300), StoreSettings(store=url, user="ken"),
                                 RuleLLM(), on_store_error=outages.append)
    await memory.start()
    try:
        await say(memory, "My name is Ken.", "Hello Ken.")
        pg_server.stop()
        try:
            await asyncio.wait_for(say(memory, "We go to Kyoto.", "Lovely.", "In April."), 15)  # the talk goes on
            assert [t.text for t in memory.history][-3:] == ["We go to Kyoto.", "Lovely.", "In April."]
            assert memory.unwritten == 3 and len(outages) == 1 and pg_server.server in outages[0]
            assert "Kyoto" in (await memory.build_messages("And hotels?"))[-3]["content"] or any(
                "Kyoto" in m["content"] for m in await memory.build_messages("And hotels?"))
            assert await asyncio.wait_for(memory.restart_if_gone(), 2) is False  # no wait on a dead server
        finally:
            pg_server.start()
        await asyncio.wait_for(memory.wait_stored(), 30)
        assert memory.unwritten == 0 and all(t.id > 0 for t in memory.history)
        await say(memory, "Two adults.")
        assert await memory.flush()  # summaries run again
    finally:
        await memory.aclose()
    store = PostgresStore(url)
    try:
        dump = await store.dump_user("ken")
    finally:
        await store.close()
    assert [t.text for t in dump.turns] == ["My name is Ken.", "Hello Ken.", "We go to Kyoto.", "Lovely.",
                                           "In April.", "Two adults."]


async def test_a_visitor_arriving_while_the_server_is_away_is_talked_to_and_loaded_later(pg_server):
    url = pg_server.create_database()
    first = await _memory(url, RuleLLM())
    await say(first, "My name is Ken.", "Hello Ken.")
    assert await first.flush()
    await first.aclose()  # Ken leaves; he comes back while the database is down
    outages: list[str] = []
    pg_server.stop()
    try:
        memory = await asyncio.wait_for(create_memory(
            PERSONA, SummaryPolicy(update_interval_s=300), StoreSettings(store=url, user="ken"), RuleLLM(),
            on_store_error=outages.append), 15)
        await memory.start()
        assert memory.role_prompt == PERSONA and len(outages) == 1  # the bare persona for now
        await asyncio.wait_for(say(memory, "We go to Kyoto."), 15)
        assert memory.unwritten == 1
    finally:
        pg_server.start()
    try:
        await asyncio.wait_for(memory.wait_stored(), 30)
        assert "Ken" in memory.role_prompt  # his memory arrived with the database
        assert [t.text for t in memory.history] == ["We go to Kyoto."] and memory.history[0].id > 0
    finally:
        await memory.aclose()


def test_an_unreachable_server_at_start_is_one_line_and_status_2(tmp_path, capsys):
    port = free_port()  # nothing listens there
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  store: postgresql://kiosk@127.0.0.1:{port}/memory\n")
    assert main(["chat", "--settings", str(settings)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"127.0.0.1:{port}" in err and "memory store" in err, err
    assert main(["memory", "list", "--db", f"postgresql://kiosk@127.0.0.1:{port}/memory"]) == 2
    assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_the_environment_names_the_fleet_store(tmp_path, capsys, monkeypatch, pg_server):
    monkeypatch.setenv("ROBOT_MEMORY_STORE", pg_server.create_database())
    assert main(["memory", "list"]) == 0  # no --db: the store comes from the environment
    assert "no visitors in postgresql://" in capsys.readouterr().out


def test_a_password_in_the_url_is_refused(tmp_path, capsys):
    settings = tmp_path / "settings.yaml"
    settings.write_text("memory:\n  store: postgresql://kiosk:s3cret@127.0.0.1:5432/memory\n")
    assert main(["chat", "--settings", str(settings)]) == 2
    err = capsys.readouterr().err
    assert "PGPASSWORD" in err and "s3cret" not in err


async def test_forget_leaves_no_trace_in_the_database_files(pg_server):
    url = pg_server.create_database()
    memory = await _memory(url, RuleLLM())
    try:
        await say(memory, "My passport number is ZX8812345.", "Noted.")
        assert await memory.flush()
        pg_server.psql(url.rsplit("/", 1)[1], "CHECKPOINT")
        assert _files_holding(pg_server.data, b"ZX8812345")  # it is there before (the test can fail)
        await memory.forget_user("ken")
    finally:
        await memory.aclose()
    pg_server.psql(url.rsplit("/", 1)[1], "CHECKPOINT")
    assert _files_holding(pg_server.data, b"ZX8812345") == []


def _files_holding(data: Path, needle: bytes) -> list[str]:
    """Table and index files (not the write-ahead log, which is the server's own) holding it."""
    return [str(p.relative_to(data)) for p in (data / "base").rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_migrate_copies_a_kiosk_file_into_the_fleet_store(pg_server, tmp_path, capsys):
    kiosk = tmp_path / "kiosk.sqlite3"
    url = pg_server.create_database()

    async def fill() -> None:
        for user, lines in (("ken", ("My name is Ken.", "Hello Ken.", "Kyoto in April.")), ("mia", ("Just looking.",))):
            memory = await create_memory(PERSONA, SummaryPolicy(update_interval_s=300),
                                         StoreSettings(db_path=kiosk, user=user), RuleLLM())
            await say(memory, *lines[:2])
            await memory.flush()
            await say(memory, *lines[2:])
            await memory.aclose()

    asyncio.run(fill())
    assert main(["memory", "migrate", "--from", str(kiosk), "--to", url]) == 0
    out = capsys.readouterr().out
    assert "copied 'ken': 1 sessions, 3 turns, 1 summary versions" in out and "2 visitors copied" in out, out
    assert main(["memory", "show", "--db", url, "--visitor", "ken"]) == 0
    shown = capsys.readouterr().out
    assert "summary v1" in shown and "Kyoto in April." in shown
    assert main(["memory", "migrate", "--from", str(kiosk), "--to", url]) == 0  # again: nothing doubled
    assert "0 visitors copied" in capsys.readouterr().out
    assert main(["memory", "forget", "--db", url, "--visitor", "mia"]) == 0
    assert "deleted user 'mia': 1 turns" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["mysql://x@h/db", "sqlite://relative"])
def test_a_store_url_of_no_known_kind_is_a_configuration_error(tmp_path, capsys, value):
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  store: {value}\n")
    assert main(["chat", "--settings", str(settings)]) == 2
    assert "memory.store" in capsys.readouterr().err
