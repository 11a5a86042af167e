"""A file given as the memory store that is not this robot's (issue 50, item 14): another
application's SQLite database, one marked with a user_version, one written by a newer robot,
and a memory file another process holds locked. Each is refused in one line by the CLI in a
subprocess, and the refused file is left byte for byte as it was (no WAL switch, no -wal or
-shm beside it); a locked file is called locked, not "not a memory file"."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory.stores.sqlite_db import SqliteDb
from memory.stores.sqlite_schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def robot(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "robot", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})


def another_apps(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('shopping list')")


def marked(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 999")


def newer(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION + 1),))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("make, reason", [(another_apps, "another application's data (tables: notes)"),
                                          (marked, "another application's data (user_version 999)"),
                                          (newer, "written by a newer version of the robot")],
                         ids=["another-app", "user-version", "newer"])
@pytest.mark.parametrize("argv", [["memory", "list"], ["chat"]], ids=" ".join)
def test_a_file_that_is_not_ours_is_refused_untouched(tmp_path, make, reason, argv):
    db = tmp_path / "their.db"
    make(db)
    before = digest(db)
    run = robot(*argv, "--db", str(db), home=tmp_path)
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0] and str(db) in lines[0], run.stderr
    assert digest(db) == before  # not switched to WAL, nothing written
    assert sorted(p.name for p in tmp_path.glob("their.db*")) == ["their.db"]


def test_a_locked_memory_file_is_called_locked(tmp_path):
    db = tmp_path / "memory.sqlite3"
    SqliteDb(db).close()  # a memory file of ours
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")  # another process writing, and not letting go
    try:
        run = robot("memory", "list", "--db", str(db), home=tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "locked by another process" in run.stderr and "not a memory file" not in run.stderr, run.stderr
