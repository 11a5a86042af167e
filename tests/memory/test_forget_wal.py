"""A forgotten visitor's words and the PostgreSQL write-ahead log (issue 28, item 8), on a
real server started for the test: `robot memory forget` (the real CLI) deletes the rows,
rewrites the tables, and, where its account may, closes the WAL segment that holds the
words and checkpoints, so that with `wal_recycle = off` no file of the server holds them.
An account without that right is told what is left and what an administrator runs.
docs/reliability.md has the procedure and the measured times."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from memory.core.base import Remark
from memory.stores.pg_store import PostgresStore
from tests.pg_server import PgServer

REPO = Path(__file__).resolve().parents[2]
WORDS = "Quokkaville 4417 Elm Street"


def files_holding(data: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file() and needle in p.read_bytes())


async def remember(url: str, visitor: str) -> None:
    store = PostgresStore(url)
    await store.connect()
    try:
        user = await store.user_id(visitor, create=True, now=time.time())
        for i in range(5):
            await store.add_turn(user, None, Remark("user", f"I live at {WORDS}, flat {i}."))
    finally:
        await store.close()


def forget(url: str, visitor: str) -> str:
    run = subprocess.run([sys.executable, "-m", "robot.app.cli", "memory", "forget", "--db", url, "--visitor", visitor],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_forget_leaves_the_words_in_no_file_of_the_server():
    server = PgServer("wal_recycle=off")  # the setting docs/reliability.md asks of an administrator
    server.start()
    try:
        url = server.create_database()  # the tests' superuser: it may switch the WAL and checkpoint
        asyncio.run(remember(url, "card-7"))
        assert any(f.startswith("pg_wal/") for f in files_holding(server.data, WORDS.encode()))  # there before
        said = forget(url, "card-7")
        assert "deleted user 'card-7': 5 turns" in said and "write-ahead log segment closed and removed" in said
        assert files_holding(server.data, WORDS.encode()) == []  # no table, index or WAL file

        # a robot's own account, without the right: the words stay in the WAL, and it says so
        server.psql("postgres", "CREATE ROLE kiosk LOGIN")
        server.psql("postgres", "CREATE DATABASE kiosk_memory OWNER kiosk")
        kiosk = f"postgresql://kiosk@127.0.0.1:{server.port}/kiosk_memory"
        asyncio.run(remember(kiosk, "card-8"))
        said = forget(kiosk, "card-8")
        assert "deleted user 'card-8': 5 turns" in said
        assert "write-ahead log still holds the words" in said and "SELECT pg_switch_wal(); CHECKPOINT;" in said
        assert [f for f in files_holding(server.data, WORDS.encode()) if not f.startswith("pg_wal/")] == []

        # the rights granted as docs/reliability.md says: the robot's forget closes the segment itself
        server.psql("postgres", "GRANT pg_checkpoint TO kiosk")
        server.psql("kiosk_memory", "GRANT EXECUTE ON FUNCTION pg_switch_wal() TO kiosk")  # in its database
        asyncio.run(remember(kiosk, "card-9"))
        said = forget(kiosk, "card-9")
        assert "deleted user 'card-9': 5 turns" in said and "write-ahead log segment closed and removed" in said
        assert files_holding(server.data, WORDS.encode()) == []  # card-8's segment went with it
    finally:
        server.close()
