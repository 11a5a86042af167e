"""The ``MemoryStore`` on PostgreSQL: one database for a fleet of kiosks, so a visitor who
spoke to kiosk 1 is remembered at kiosk 2 and an operator inspects or forgets them in one
place (psycopg 3, asyncio, a small connection pool).

Concurrency, for two robots writing the same visitor at the same time:
- turns are plain inserts with ids from a sequence: no turn can be lost or overwrite another;
- a version number (summaries, role prompts) is taken while the visitor's ``users`` row is
  locked (``SELECT ... FOR UPDATE``), so two robots never take the same one;
- a summary is committed only if the visitor's current summary is still the one it was
  folded onto (optimistic versioning, checked under that row lock): otherwise
  ``SummaryConflict``, and the robot reloads the newer summary and folds again. Row locks
  alone would serialize the two commits but let the later one replace a newer summary
  with one that never saw it; optimistic checks alone would let both take one version.

Forgetting: the rows are deleted in one transaction, then the visitor's tables are
rewritten (``VACUUM FULL``) so their files keep no copy of the deleted words; a plain
DELETE only marks rows dead and leaves the bytes in the table's pages. The write-ahead log
holds them too (the inserts, and the pages the delete touched): where the account may
(``pg_switch_wal`` and ``CHECKPOINT``, granted by an administrator), the forget closes the
segment holding them and checkpoints, so that the server drops it; the report says what is
left (docs/reliability.md, "A forgotten visitor and the PostgreSQL write-ahead log").
"""

from __future__ import annotations

import dataclasses
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Sequence

import psycopg
from psycopg import AsyncConnection, errors, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memory.core.base import Remark
from memory.core.records import (ForgetReport, RolePromptVersion, StoredRemark, SummaryVersion, UserDump, UserState,
                                 VisitorRecord, role_prompt_of, summary_of, turn_of)
from memory.stores.location import StoreLocation
from memory.stores.pg_migrations import OWNED_TABLES, migrate
from memory.stores.protocol import StoreUnavailable, SummaryConflict, UserGone

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5
POOL_TIMEOUT_S = 3.0  # a write waits this long for a connection before the memory buffers it
POOL_MAX = 4  # one robot's concurrent writers: the turn writer, a summary, the retention sweep


class PostgresStore:
    """``MemoryStore`` over a PostgreSQL database; ``await connect()`` before use."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.server = StoreLocation("postgresql", url=url).server
        self._pool: AsyncConnectionPool | None = None

    def __str__(self) -> str:
        return self.url

    # --- connection ---------------------------------------------------------------------

    async def connect(self) -> None:
        """Reach the server (one clear ``StoreUnavailable`` naming it when it cannot be),
        apply the migrations it lacks, and open the pool."""
        try:
            conn = await AsyncConnection.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot reach the PostgreSQL memory store at {self.server}: "
                                   f"{_first_line(exc)}") from None
        async with conn:
            await migrate(conn)
        self._pool = AsyncConnectionPool(
            self.url, min_size=1, max_size=POOL_MAX, open=False, timeout=POOL_TIMEOUT_S,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S},
            check=AsyncConnectionPool.check_connection,  # a server restart leaves dead connections
            name="memory")
        await self._pool.open()

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[AsyncConnection[dict[str, Any]]]:
        if self._pool is None:
            await self.connect()
        assert self._pool is not None
        try:
            async with self._pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"PostgreSQL memory store at {self.server}: {_first_line(exc)}") from exc

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[AsyncConnection[dict[str, Any]]]:
        async with self._conn() as conn, conn.transaction():
            yield conn

    async def _rows(self, query: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self._conn() as conn:
            cur = await conn.execute(query, params)  # type: ignore[arg-type]
            return await cur.fetchall()

    @staticmethod
    async def _lock_user(conn: AsyncConnection[dict[str, Any]], user_id: int) -> dict[str, Any]:
        # The row lock that orders this visitor's version numbers across robots.
        cur = await conn.execute("SELECT * FROM users WHERE id = %s FOR UPDATE", (user_id,))
        row = await cur.fetchone()
        if row is None:
            raise UserGone(f"user id {user_id} is no longer in the store")
        return row

    # --- users and sessions -------------------------------------------------------------

    async def user_id(self, name: str, create: bool = False, now: float = 0.0) -> int | None:
        rows = await self._rows("SELECT id FROM users WHERE name = %s", (name,))
        if rows or not create:
            return rows[0]["id"] if rows else None
        created = await self._rows("INSERT INTO users (name, created) VALUES (%s, %s) ON CONFLICT (name) "
                                   "DO NOTHING RETURNING id", (name, now))
        # Nothing returned: another robot created the same visitor just now.
        return created[0]["id"] if created else await self.user_id(name)

    async def has_user(self, name: str) -> bool:
        return await self.user_id(name) is not None

    async def user_names(self) -> list[str]:
        return [r["name"] for r in await self._rows("SELECT name FROM users ORDER BY id")]

    async def visitors(self) -> list[VisitorRecord]:
        rows = await self._rows("""
            SELECT u.name, u.created,
                   GREATEST(u.created, COALESCE((SELECT MAX(ts) FROM turns WHERE user_id = u.id), 0),
                            COALESCE((SELECT MAX(COALESCE(ended, started)) FROM sessions WHERE user_id = u.id), 0))
                       AS last_seen,
                   (SELECT COUNT(*) FROM turns WHERE user_id = u.id) AS turns,
                   COALESCE((SELECT version FROM summaries WHERE id = u.current_summary_id), 0) AS version
            FROM users u ORDER BY u.id""")
        return [VisitorRecord(r["name"], r["created"], r["last_seen"], r["turns"], r["version"]) for r in rows]

    async def start_session(self, user_id: int, started: float) -> int:
        try:
            rows = await self._rows("INSERT INTO sessions (user_id, started) VALUES (%s, %s) RETURNING id",
                                    (user_id, started))
        except errors.ForeignKeyViolation:
            raise UserGone(f"user id {user_id} is no longer in the store") from None
        return rows[0]["id"]

    async def end_session(self, session_id: int, ended: float) -> None:
        await self._rows("UPDATE sessions SET ended = %s WHERE id = %s RETURNING id", (ended, session_id))

    async def sessions(self, user_id: int) -> list[tuple[int, float, float | None]]:
        rows = await self._rows("SELECT id, started, ended FROM sessions WHERE user_id = %s ORDER BY id", (user_id,))
        return [(r["id"], r["started"], r["ended"]) for r in rows]

    # --- turns ----------------------------------------------------------------------------

    async def add_turn(self, user_id: int, session_id: int | None, turn: Remark) -> StoredRemark:
        try:  # one statement: the foreign key says whether the visitor still exists
            rows = await self._rows(
                "INSERT INTO turns (user_id, session_id, role, text, ts, loop_turn_id, speaker)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (user_id, session_id, turn.role, turn.text, turn.ts, turn.turn_id, turn.speaker))
        except errors.ForeignKeyViolation:
            raise UserGone(f"user id {user_id} is no longer in the store") from None
        return StoredRemark(rows[0]["id"], turn.role, turn.text, turn.ts, turn.turn_id, turn.speaker, session_id)

    async def turns(self, user_id: int) -> list[StoredRemark]:
        return [turn_of(r) for r in await self._rows("SELECT * FROM turns WHERE user_id = %s ORDER BY id", (user_id,))]

    # --- summaries ------------------------------------------------------------------------

    async def summary(self, summary_id: int | None) -> SummaryVersion | None:
        if summary_id is None:
            return None
        rows = await self._rows("SELECT * FROM summaries WHERE id = %s", (summary_id,))
        if not rows:
            return None
        absorbed = await self._rows("SELECT turn_id FROM summary_turns WHERE summary_id = %s ORDER BY turn_id",
                                    (summary_id,))
        return summary_of(rows[0], tuple(r["turn_id"] for r in absorbed))

    async def summaries(self, user_id: int) -> list[SummaryVersion]:
        rows = await self._rows("SELECT id FROM summaries WHERE user_id = %s ORDER BY version", (user_id,))
        return [s for r in rows if (s := await self.summary(r["id"])) is not None]

    async def current_summary(self, user_id: int) -> SummaryVersion | None:
        rows = await self._rows("SELECT current_summary_id FROM users WHERE id = %s", (user_id,))
        return await self.summary(rows[0]["current_summary_id"]) if rows else None

    async def chain(self, summary: SummaryVersion | None) -> list[SummaryVersion]:
        """The current summary and its predecessors, newest first."""
        chain: list[SummaryVersion] = []
        while summary is not None:
            chain.append(summary)
            summary = await self.summary(summary.predecessor_id)
        return chain

    async def commit_summary(self, user_id: int, text: str, strategy: str, absorbed: list[int],
                             predecessor_id: int | None, persona_prompt: str, role_prompt: str,
                             created: float) -> tuple[SummaryVersion, RolePromptVersion]:
        async with self._tx() as c:
            user = await self._lock_user(c, user_id)
            if user["current_summary_id"] != predecessor_id:
                raise SummaryConflict(f"user id {user_id}: current summary is {user['current_summary_id']}, "
                                      f"not {predecessor_id}")
            version = await _next_version(c, "summaries", user_id)
            cur = await c.execute(
                "INSERT INTO summaries (user_id, version, text, created, strategy, predecessor_id)"
                " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                (user_id, version, text, created, strategy, predecessor_id))
            summary_id = (await cur.fetchone())["id"]  # type: ignore[index]
            async with c.cursor() as many:
                await many.executemany("INSERT INTO summary_turns VALUES (%s, %s)", [(summary_id, t) for t in absorbed])
            await c.execute("UPDATE users SET current_summary_id = %s WHERE id = %s", (summary_id, user_id))
            prompt = await _insert_role_prompt(c, user_id, persona_prompt, summary_id, role_prompt, "summary", created)
        summary = SummaryVersion(summary_id, version, text, created, strategy, predecessor_id, tuple(sorted(absorbed)))
        return summary, prompt

    async def set_current_summary(self, user_id: int, summary_id: int | None, persona_prompt: str,
                                  role_prompt: str, created: float) -> RolePromptVersion:
        """Roll back (or forward): point the user at another summary version, in one transaction."""
        async with self._tx() as c:
            await self._lock_user(c, user_id)
            await c.execute("UPDATE users SET current_summary_id = %s WHERE id = %s", (summary_id, user_id))
            return await _insert_role_prompt(c, user_id, persona_prompt, summary_id, role_prompt, "rollback", created)

    # --- role prompts ---------------------------------------------------------------------

    async def add_role_prompt(self, user_id: int, persona_prompt: str, summary_id: int | None, text: str,
                              reason: str, created: float) -> RolePromptVersion:
        async with self._tx() as c:
            await self._lock_user(c, user_id)
            return await _insert_role_prompt(c, user_id, persona_prompt, summary_id, text, reason, created)

    async def role_prompts(self, user_id: int) -> list[RolePromptVersion]:
        rows = await self._rows("SELECT * FROM role_prompts WHERE user_id = %s ORDER BY version", (user_id,))
        return [role_prompt_of(r) for r in rows]

    async def latest_role_prompt(self, user_id: int) -> RolePromptVersion | None:
        rows = await self._rows("SELECT * FROM role_prompts WHERE user_id = %s ORDER BY version DESC LIMIT 1",
                                (user_id,))
        return role_prompt_of(rows[0]) if rows else None

    # --- the visitor profile -------------------------------------------------------------

    async def profile(self, user_id: int) -> dict[str, list[str]]:
        rows = await self._rows("SELECT data FROM profiles WHERE user_id = %s", (user_id,))
        return dict(rows[0]["data"]) if rows else {}

    async def save_profile(self, user_id: int, data: dict[str, list[str]], updated: float) -> None:
        try:
            await self._rows("INSERT INTO profiles VALUES (%s, %s, %s) ON CONFLICT (user_id) DO UPDATE "
                             "SET data = excluded.data, updated = excluded.updated RETURNING user_id",
                             (user_id, Jsonb(data), updated))
        except errors.ForeignKeyViolation:
            raise UserGone(f"user id {user_id} is no longer in the store") from None

    # --- whole-user views -----------------------------------------------------------------

    async def open_user(self, name: str, recent_absorbed: int = 0, now: float = 0.0) -> UserState:
        return await self.load_user(name, now, recent_absorbed)

    async def load_user(self, name: str, now: float, recent_absorbed: int = 0) -> UserState:
        user_id = await self.user_id(name, create=True, now=now)
        assert user_id is not None
        summary = await self.current_summary(user_id)
        absorbed = {t for s in await self.chain(summary) for t in s.absorbed}
        turns = await self.turns(user_id)
        history = [t for t in turns if t.id not in absorbed]
        recent = [t for t in turns if t.id in absorbed][-recent_absorbed:] if recent_absorbed else []
        return UserState(user_id, name, summary, history, recent, await self.latest_role_prompt(user_id),
                         await self.profile(user_id))

    async def dump_user(self, name: str) -> UserDump | None:
        user_id = await self.user_id(name)
        if user_id is None:
            return None
        user = (await self._rows("SELECT * FROM users WHERE id = %s", (user_id,)))[0]
        return UserDump(name, user["created"], user["current_summary_id"], await self.sessions(user_id),
                        await self.turns(user_id), await self.summaries(user_id), await self.role_prompts(user_id),
                        await self.profile(user_id))

    async def load_dump(self, dump: UserDump) -> None:
        """Copy a visitor in from another store (``robot memory migrate``), in one transaction;
        ids are this database's own, the links between records are kept."""
        async with self._tx() as c:
            cur = await c.execute("INSERT INTO users (name, created) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING "
                                  "RETURNING id", (dump.name, dump.created))
            row = await cur.fetchone()
            if row is None:
                raise ValueError(f"visitor {dump.name!r} is already in {self.server}; not copied")
            user_id = row["id"]
            sessions = {old: await _returning(c, "INSERT INTO sessions (user_id, started, ended) VALUES (%s, %s, %s)",
                                              (user_id, started, ended)) for old, started, ended in dump.sessions}
            turns = {t.id: await _returning(
                c, "INSERT INTO turns (user_id, session_id, role, text, ts, loop_turn_id, speaker)"
                   " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (user_id, sessions.get(t.session_id), t.role, t.text, t.ts, t.loop_turn_id, t.speaker))
                for t in dump.turns}
            summaries: dict[int, int] = {}
            for s in sorted(dump.summaries, key=lambda s: s.version):
                summaries[s.id] = await _returning(
                    c, "INSERT INTO summaries (user_id, version, text, created, strategy, predecessor_id)"
                       " VALUES (%s, %s, %s, %s, %s, %s)",
                    (user_id, s.version, s.text, s.created, s.strategy, summaries.get(s.predecessor_id)))
                for t in s.absorbed:
                    await c.execute("INSERT INTO summary_turns VALUES (%s, %s)", (summaries[s.id], turns[t]))
            for p in dump.role_prompts:
                await c.execute("INSERT INTO role_prompts (user_id, version, text, created, persona_prompt,"
                                " summary_id, reason) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                                (user_id, p.version, p.text, p.created, p.persona_prompt,
                                 summaries.get(p.summary_id), p.reason))
            await c.execute("UPDATE users SET current_summary_id = %s WHERE id = %s",
                            (summaries.get(dump.current_summary_id), user_id))
            if dump.profile:
                await c.execute("INSERT INTO profiles VALUES (%s, %s, %s)", (user_id, Jsonb(dump.profile), dump.created))

    async def forget_user(self, name: str) -> ForgetReport:
        user_id = await self.user_id(name)
        if user_id is None:
            return ForgetReport(name)
        async with self._tx() as c:
            await self._lock_user(c, user_id)

            async def count(table: str) -> int:
                cur = await c.execute(sql.SQL("SELECT COUNT(*) AS n FROM {} WHERE user_id = %s")
                                      .format(sql.Identifier(table)), (user_id,))
                return (await cur.fetchone())["n"]  # type: ignore[index]

            report = ForgetReport(name, await count("turns"), await count("summaries"),
                                  await count("role_prompts"), await count("sessions"))
            await c.execute("UPDATE users SET current_summary_id = NULL WHERE id = %s", (user_id,))
            await c.execute("DELETE FROM summary_turns WHERE summary_id IN "
                            "(SELECT id FROM summaries WHERE user_id = %s)", (user_id,))
            await c.execute("DELETE FROM role_prompts WHERE user_id = %s", (user_id,))
            await c.execute("DELETE FROM profiles WHERE user_id = %s", (user_id,))
            await c.execute("UPDATE summaries SET predecessor_id = NULL WHERE user_id = %s", (user_id,))
            for table in ("summaries", "turns", "sessions"):
                await c.execute(sql.SQL("DELETE FROM {} WHERE user_id = %s").format(sql.Identifier(table)), (user_id,))
            await c.execute("DELETE FROM users WHERE id = %s", (user_id,))
        await self._scrub()
        return dataclasses.replace(report, wal=await self._close_wal_segment())

    async def _close_wal_segment(self) -> str:
        """End the WAL segment holding the deleted words and checkpoint, so that the server
        removes it (or, with ``wal_recycle`` on, renames it for reuse: the words stay until
        overwritten). What is left, in words for the report."""
        try:
            async with self._conn() as conn:
                await conn.execute("SELECT pg_switch_wal()")
                await conn.execute("CHECKPOINT")
                recycle = await (await conn.execute("SELECT current_setting('wal_recycle') AS on")).fetchone()
        except errors.InsufficientPrivilege:
            return ("the server's write-ahead log still holds the words until the server reuses its segment: an "
                    "administrator runs SELECT pg_switch_wal(); CHECKPOINT; (docs/reliability.md)")
        if recycle is not None and recycle["on"] == "on":
            return ("write-ahead log segment closed, but wal_recycle is on: the renamed segment holds the words "
                    "until overwritten (docs/reliability.md)")
        return "write-ahead log segment closed and removed"

    async def _scrub(self) -> None:
        # Rewrite the tables: the deleted rows' bytes do not survive in their files.
        async with self._conn() as conn:
            await conn.execute(sql.SQL("VACUUM FULL {}").format(sql.SQL(", ").join(map(sql.Identifier, OWNED_TABLES))))


async def _next_version(c: AsyncConnection[dict[str, Any]], table: str, user_id: int) -> int:
    cur = await c.execute(sql.SQL("SELECT COALESCE(MAX(version), 0) + 1 AS v FROM {} WHERE user_id = %s")
                          .format(sql.Identifier(table)), (user_id,))
    return int((await cur.fetchone())["v"])  # type: ignore[index]


async def _insert_role_prompt(c: AsyncConnection[dict[str, Any]], user_id: int, persona_prompt: str,
                              summary_id: int | None, text: str, reason: str, created: float) -> RolePromptVersion:
    version = await _next_version(c, "role_prompts", user_id)
    row_id = await _returning(c, "INSERT INTO role_prompts (user_id, version, text, created, persona_prompt,"
                                 " summary_id, reason) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                              (user_id, version, text, created, persona_prompt, summary_id, reason))
    return RolePromptVersion(row_id, version, text, created, persona_prompt, summary_id, reason)  # type: ignore[arg-type]


async def _returning(c: AsyncConnection[dict[str, Any]], insert: str, params: Sequence[Any]) -> int:
    cur = await c.execute(insert + " RETURNING id", params)  # type: ignore[arg-type]
    return int((await cur.fetchone())["id"])  # type: ignore[index]


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
