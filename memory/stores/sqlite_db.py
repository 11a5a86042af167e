"""The SQLite memory file, synchronous: one WAL file per deployment, every write committed
before it returns (the async store over it is ``memory/stores/sqlite_store.py``).

Durability choice: ``journal_mode=WAL`` with ``synchronous=FULL``. WAL alone already keeps
every committed transaction through a process kill (kill -9): the commit is in the WAL file
(the OS page cache) before ``commit`` returns. FULL also fsyncs the WAL at each commit, so a
committed turn survives a power cut too, which a kiosk unplugged at night will see. It
costs one fsync per utterance, a few milliseconds against turns seconds apart.

Forgetting: ``secure_delete=ON`` (set here, not left to how SQLite was built) overwrites
deleted rows with zeros, and a ``wal_checkpoint(TRUNCATE)`` after a forget empties the WAL,
which otherwise keeps the old pages (and the words) until the process ends.

``SqliteDb`` is the synchronous core (also used by the operator CLI); ``SqliteStore`` runs
it on one worker thread of its own.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from memory.core.base import Remark
from memory.core.records import (ForgetReport, RolePromptVersion, StoredRemark, SummaryVersion, UserDump, UserState,
                                 VisitorRecord, role_prompt_of, summary_of, turn_of)
from memory.stores.protocol import SummaryConflict, UserGone
from memory.stores.sqlite_schema import SCHEMA, SCHEMA_VERSION, next_version


class SqliteDb:
    """Synchronous access to one memory file. Not thread-safe: one thread at a time."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are opened explicitly in ``_write``.
        self.conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        try:
            self._prepare()
        except sqlite3.Error:  # not a database (a --db at the wrong file): no connection left open
            self.conn.close()
            raise

    def _prepare(self) -> None:
        self.conn.row_factory = sqlite3.Row
        self._refuse_if_not_ours()  # before anything changes the file (WAL mode rewrites its header)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA secure_delete=ON")  # a forgotten user's words are zeroed, not just unlinked
        self.conn.execute("PRAGMA busy_timeout=5000")  # the operator CLI may read meanwhile
        # Its page cache: SQLite's default (2 MiB) was most of what a long run's RSS still grew
        # by once the file passed that size (bench/soak.py: +2.1 MB over 4,500 turns, +0.6 with
        # 100 KiB). A visitor's turns are read once per session; the OS caches the file anyway.
        self.conn.execute("PRAGMA cache_size=-512")  # KiB
        if self._schema_version() == SCHEMA_VERSION:
            return  # a file of this version opens without a write (a full disk still opens it)
        with self._write():
            for statement in filter(str.strip, SCHEMA.split(";")):
                self.conn.execute(statement)
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    def _schema_version(self) -> int | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:  # no meta table yet: a new file
            return None
        return int(row[0]) if row is not None else None

    def _refuse_if_not_ours(self) -> None:
        """Another application's database (tables but no ``meta``), or a memory file of a newer
        version, is refused untouched: sqlite3.DatabaseError naming why."""
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        user_version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if tables and "meta" not in tables or user_version not in (0,):
            marks = [f"tables: {', '.join(sorted(tables))[:80]}"] if tables else []
            marks += [f"user_version {user_version}"] if user_version else []
            raise sqlite3.DatabaseError(f"it holds another application's data ({'; '.join(marks)})")
        if "meta" in tables:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is not None and int(row[0]) > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"it was written by a newer version of the robot (schema {row[0]}, "
                                            f"this one knows {SCHEMA_VERSION})")

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so a transaction never fails half-way on it.
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @staticmethod
    def _require_user(c: sqlite3.Connection, user_id: int) -> None:
        # Another process (robot memory forget) may have deleted the user under a running memory.
        if c.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone() is None:
            raise UserGone(f"user id {user_id} is no longer in the store")

    # --- users and sessions -------------------------------------------------------------

    def user_id(self, name: str, create: bool = False, now: float = 0.0) -> int | None:
        row = self.conn.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()
        if row is not None or not create:
            return row["id"] if row else None
        with self._write() as c:
            return c.execute("INSERT INTO users (name, created) VALUES (?, ?)", (name, now)).lastrowid

    def user_names(self) -> list[str]:
        return [r["name"] for r in self.conn.execute("SELECT name FROM users ORDER BY id")]

    def visitors(self) -> list[VisitorRecord]:
        """Every user with when they were first and last seen, oldest first."""
        rows = self.conn.execute("""
            SELECT u.name, u.created,
                   MAX(u.created, COALESCE((SELECT MAX(ts) FROM turns WHERE user_id = u.id), 0),
                       COALESCE((SELECT MAX(COALESCE(ended, started)) FROM sessions WHERE user_id = u.id), 0))
                       AS last_seen,
                   (SELECT COUNT(*) FROM turns WHERE user_id = u.id) AS turns,
                   COALESCE((SELECT version FROM summaries WHERE id = u.current_summary_id), 0) AS version
            FROM users u ORDER BY u.id""")
        return [VisitorRecord(r["name"], r["created"], r["last_seen"], r["turns"], r["version"]) for r in rows]

    def start_session(self, user_id: int, started: float) -> int:
        with self._write() as c:
            self._require_user(c, user_id)
            return c.execute("INSERT INTO sessions (user_id, started) VALUES (?, ?)", (user_id, started)).lastrowid

    def end_session(self, session_id: int, ended: float) -> None:
        with self._write() as c:
            c.execute("UPDATE sessions SET ended = ? WHERE id = ?", (ended, session_id))

    def sessions(self, user_id: int) -> list[tuple[int, float, float | None]]:
        rows = self.conn.execute("SELECT id, started, ended FROM sessions WHERE user_id = ? ORDER BY id", (user_id,))
        return [(r["id"], r["started"], r["ended"]) for r in rows]

    # --- turns ----------------------------------------------------------------------------

    def add_turn(self, user_id: int, session_id: int | None, turn: Remark) -> StoredRemark:
        with self._write() as c:
            self._require_user(c, user_id)
            turn_id = c.execute(
                "INSERT INTO turns (user_id, session_id, role, text, ts, loop_turn_id, speaker)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user_id, session_id, turn.role, turn.text, turn.ts, turn.turn_id, turn.speaker),
            ).lastrowid
        return StoredRemark(turn_id, turn.role, turn.text, turn.ts, turn.turn_id, turn.speaker, session_id)

    def turns(self, user_id: int) -> list[StoredRemark]:
        rows = self.conn.execute("SELECT * FROM turns WHERE user_id = ? ORDER BY id", (user_id,))
        return [turn_of(r) for r in rows]

    # --- summaries ------------------------------------------------------------------------

    def summary(self, summary_id: int | None) -> SummaryVersion | None:
        if summary_id is None:
            return None
        row = self.conn.execute("SELECT * FROM summaries WHERE id = ?", (summary_id,)).fetchone()
        if row is None:
            return None
        absorbed = tuple(r["turn_id"] for r in self.conn.execute(
            "SELECT turn_id FROM summary_turns WHERE summary_id = ? ORDER BY turn_id", (summary_id,)))
        return summary_of(row, absorbed)

    def summaries(self, user_id: int) -> list[SummaryVersion]:
        ids = [r["id"] for r in self.conn.execute(
            "SELECT id FROM summaries WHERE user_id = ? ORDER BY version", (user_id,))]
        return [s for s in map(self.summary, ids) if s is not None]

    def current_summary(self, user_id: int) -> SummaryVersion | None:
        row = self.conn.execute("SELECT current_summary_id FROM users WHERE id = ?", (user_id,)).fetchone()
        return self.summary(row["current_summary_id"]) if row else None

    def chain(self, summary: SummaryVersion | None) -> list[SummaryVersion]:
        """The current summary and its predecessors, newest first."""
        chain: list[SummaryVersion] = []
        while summary is not None:
            chain.append(summary)
            summary = self.summary(summary.predecessor_id)
        return chain

    def commit_summary(self, user_id: int, text: str, strategy: str, absorbed: list[int],
                       predecessor_id: int | None, persona_prompt: str, role_prompt: str,
                       created: float) -> tuple[SummaryVersion, RolePromptVersion]:
        with self._write() as c:
            self._require_user(c, user_id)
            current = c.execute("SELECT current_summary_id FROM users WHERE id = ?", (user_id,)).fetchone()[0]
            if current != predecessor_id:
                raise SummaryConflict(f"user id {user_id}: current summary is {current}, not {predecessor_id}")
            version = next_version(c, "summaries", user_id)
            summary_id = c.execute(
                "INSERT INTO summaries (user_id, version, text, created, strategy, predecessor_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (user_id, version, text, created, strategy, predecessor_id),
            ).lastrowid
            c.executemany("INSERT INTO summary_turns VALUES (?, ?)", [(summary_id, t) for t in absorbed])
            c.execute("UPDATE users SET current_summary_id = ? WHERE id = ?", (summary_id, user_id))
            prompt = self._insert_role_prompt(c, user_id, persona_prompt, summary_id, role_prompt, "summary", created)
        summary = SummaryVersion(summary_id, version, text, created, strategy, predecessor_id, tuple(sorted(absorbed)))
        return summary, prompt

    def set_current_summary(self, user_id: int, summary_id: int | None, persona_prompt: str,
                            role_prompt: str, created: float) -> RolePromptVersion:
        """Roll back (or forward): point the user at another summary version, in one transaction."""
        with self._write() as c:
            c.execute("UPDATE users SET current_summary_id = ? WHERE id = ?", (summary_id, user_id))
            return self._insert_role_prompt(c, user_id, persona_prompt, summary_id, role_prompt, "rollback", created)

    # --- role prompts ---------------------------------------------------------------------

    def add_role_prompt(self, user_id: int, persona_prompt: str, summary_id: int | None, text: str,
                        reason: str, created: float) -> RolePromptVersion:
        with self._write() as c:
            self._require_user(c, user_id)
            return self._insert_role_prompt(c, user_id, persona_prompt, summary_id, text, reason, created)

    def _insert_role_prompt(self, c: sqlite3.Connection, user_id: int, persona_prompt: str,
                            summary_id: int | None, text: str, reason: str, created: float) -> RolePromptVersion:
        version = next_version(c, "role_prompts", user_id)
        row_id = c.execute(
            "INSERT INTO role_prompts (user_id, version, text, created, persona_prompt, summary_id, reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (user_id, version, text, created, persona_prompt, summary_id, reason),
        ).lastrowid
        return RolePromptVersion(row_id, version, text, created, persona_prompt, summary_id, reason)  # type: ignore[arg-type]

    def role_prompts(self, user_id: int) -> list[RolePromptVersion]:
        rows = self.conn.execute("SELECT * FROM role_prompts WHERE user_id = ? ORDER BY version", (user_id,))
        return [role_prompt_of(r) for r in rows]

    def latest_role_prompt(self, user_id: int) -> RolePromptVersion | None:
        row = self.conn.execute(
            "SELECT * FROM role_prompts WHERE user_id = ? ORDER BY version DESC LIMIT 1", (user_id,)).fetchone()
        return role_prompt_of(row) if row else None

    # --- the visitor profile -------------------------------------------------------------

    def profile(self, user_id: int) -> dict[str, list[str]]:
        row = self.conn.execute("SELECT data FROM profiles WHERE user_id = ?", (user_id,)).fetchone()
        return json.loads(row["data"]) if row else {}

    def save_profile(self, user_id: int, data: dict[str, list[str]], updated: float) -> None:
        with self._write() as c:
            self._require_user(c, user_id)
            c.execute("INSERT INTO profiles VALUES (?, ?, ?) ON CONFLICT (user_id) DO UPDATE "
                      "SET data = excluded.data, updated = excluded.updated",
                      (user_id, json.dumps(data, ensure_ascii=False), updated))

    # --- whole-user views -----------------------------------------------------------------

    def load_user(self, name: str, now: float, recent_absorbed: int = 0) -> UserState:
        user_id = self.user_id(name, create=True, now=now)
        assert user_id is not None
        summary = self.current_summary(user_id)
        absorbed = {t for s in self.chain(summary) for t in s.absorbed}
        turns = self.turns(user_id)
        history = [t for t in turns if t.id not in absorbed]
        recent = [t for t in turns if t.id in absorbed][-recent_absorbed:] if recent_absorbed else []
        return UserState(user_id, name, summary, history, recent, self.latest_role_prompt(user_id),
                         self.profile(user_id))

    def dump_user(self, name: str) -> UserDump | None:
        user_id = self.user_id(name)
        if user_id is None:
            return None
        user = self.conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        return UserDump(name, user["created"], user["current_summary_id"], self.sessions(user_id),
                        self.turns(user_id), self.summaries(user_id), self.role_prompts(user_id),
                        self.profile(user_id))

    def load_dump(self, dump: UserDump) -> None:
        """Copy a user in from another store, in one transaction; ids are this file's own,
        the links between records are kept."""
        if self.user_id(dump.name) is not None:
            raise ValueError(f"visitor {dump.name!r} is already in {self.path}; not copied")
        with self._write() as c:
            def insert(table: str, **row: object) -> int:
                cols = ", ".join(row)
                marks = ", ".join("?" * len(row))
                return c.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(row.values())).lastrowid

            user_id = insert("users", name=dump.name, created=dump.created)
            sessions = {old: insert("sessions", user_id=user_id, started=started, ended=ended)
                        for old, started, ended in dump.sessions}
            turns = {t.id: insert("turns", user_id=user_id, session_id=sessions.get(t.session_id), role=t.role,
                                  text=t.text, ts=t.ts, loop_turn_id=t.loop_turn_id, speaker=t.speaker)
                     for t in dump.turns}
            summaries: dict[int, int] = {}
            for s in sorted(dump.summaries, key=lambda s: s.version):
                summaries[s.id] = insert("summaries", user_id=user_id, version=s.version, text=s.text,
                                         created=s.created, strategy=s.strategy,
                                         predecessor_id=summaries.get(s.predecessor_id))
                c.executemany("INSERT INTO summary_turns VALUES (?, ?)", [(summaries[s.id], turns[t]) for t in s.absorbed])
            for p in dump.role_prompts:
                insert("role_prompts", user_id=user_id, version=p.version, text=p.text, created=p.created,
                       persona_prompt=p.persona_prompt, summary_id=summaries.get(p.summary_id), reason=p.reason)
            c.execute("UPDATE users SET current_summary_id = ? WHERE id = ?",
                      (summaries.get(dump.current_summary_id), user_id))
            if dump.profile:
                c.execute("INSERT INTO profiles VALUES (?, ?, ?)",
                          (user_id, json.dumps(dump.profile, ensure_ascii=False), dump.created))

    def forget_user(self, name: str) -> ForgetReport:
        user_id = self.user_id(name)
        if user_id is None:
            return ForgetReport(name)
        with self._write() as c:
            def count(table: str) -> int:
                return c.execute(f"SELECT COUNT(*) FROM {table} WHERE user_id = ?", (user_id,)).fetchone()[0]

            report = ForgetReport(name, count("turns"), count("summaries"), count("role_prompts"), count("sessions"))
            # Children first; self-references and the user's pointer are cleared before deletes.
            c.execute("UPDATE users SET current_summary_id = NULL WHERE id = ?", (user_id,))
            c.execute("DELETE FROM summary_turns WHERE summary_id IN (SELECT id FROM summaries WHERE user_id = ?)",
                      (user_id,))
            c.execute("DELETE FROM role_prompts WHERE user_id = ?", (user_id,))
            c.execute("DELETE FROM profiles WHERE user_id = ?", (user_id,))
            c.execute("UPDATE summaries SET predecessor_id = NULL WHERE user_id = ?", (user_id,))
            for table in ("summaries", "turns", "sessions"):
                c.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
            c.execute("DELETE FROM users WHERE id = ?", (user_id,))
        # The WAL still holds the pages as they were (the words too): copy it back and empty it.
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return report
