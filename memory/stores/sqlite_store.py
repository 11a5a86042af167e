"""The async ``MemoryStore`` over the SQLite memory file (``memory/stores/sqlite_db.py``): all I/O
on one worker thread of its own, so the event loop never waits on disk and the connection
is only ever used from that thread."""

from __future__ import annotations

import asyncio
import errno
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable, TypeVar

from memory.core.base import Remark
from memory.core.records import (ForgetReport, RolePromptVersion, StoredRemark, SummaryVersion, UserDump, UserState,
                                 VisitorRecord)
from memory.stores import journal
from memory.stores.protocol import StoreUnavailable
from memory.stores.sqlite_db import SqliteDb

T = TypeVar("T")
log = logging.getLogger(__name__)


def _no_room(exc: BaseException) -> bool:
    """SQLite's "database or disk is full", "disk I/O error" of a full disk, a file too large."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
    text = str(exc).lower()
    return "full" in text or "disk i/o error" in text or "too large" in text or "too big" in text


class SqliteStore:
    """The async ``MemoryStore`` over ``SqliteDb``, on a single worker thread of its own."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-sqlite")
        self._db: SqliteDb | None = None
        self._closed = False

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(fn, *args))

    def _open_db(self) -> SqliteDb:
        if self._db is None:
            db = SqliteDb(self.path)  # opened on the worker thread, used only there
            self._replay_journal(db)
            self._db = db
        return self._db

    async def _call(self, method: str, *args: Any) -> Any:
        try:
            return await self._run(lambda: getattr(self._open_db(), method)(*args))
        except (sqlite3.OperationalError, OSError) as exc:
            if _no_room(exc):
                # a full disk or a file-size limit: the turn waits (memory/stores/unwritten.py)
                raise StoreUnavailable(f"the disk of {self.path} is full ({exc})") from None
            raise

    def journal(self, user: str, turns: list[Remark]) -> int:
        """Keep turns the file could not take in the reserved journal (``journal.py``) for the next start."""
        return journal.write(journal.journal_path(self.path), user, turns)

    def _replay_journal(self, db: SqliteDb) -> None:
        """The turns a full disk held back last time, written now, in order, then the journal zeroed."""
        path = journal.journal_path(self.path)
        kept = journal.read(path)
        if kept:
            for user, turn in kept:
                user_id = db.user_id(user) or db.load_user(user, turn.ts).user_id
                db.add_turn(user_id, None, turn)
            journal.clear(path)
            log.warning("%d turns a full disk held back last time were written to %s", len(kept), self.path)
        journal.reserve(path)

    async def open_user(self, name: str, recent_absorbed: int = 0, now: float = 0.0) -> UserState:
        return await self._call("load_user", name, now, recent_absorbed)

    async def visitors(self) -> list[VisitorRecord]:
        return await self._call("visitors")

    async def has_user(self, name: str) -> bool:
        return await self._call("user_id", name) is not None

    async def start_session(self, user_id: int, started: float) -> int:
        return await self._call("start_session", user_id, started)

    async def end_session(self, session_id: int, ended: float) -> None:
        await self._call("end_session", session_id, ended)

    async def add_turn(self, user_id: int, session_id: int | None, turn: Remark) -> StoredRemark:
        return await self._call("add_turn", user_id, session_id, turn)

    async def commit_summary(self, user_id: int, text: str, strategy: str, absorbed: list[int],
                             predecessor_id: int | None, persona_prompt: str, role_prompt: str,
                             created: float) -> tuple[SummaryVersion, RolePromptVersion]:
        return await self._call("commit_summary", user_id, text, strategy, absorbed, predecessor_id,
                                persona_prompt, role_prompt, created)

    async def add_role_prompt(self, user_id: int, persona_prompt: str, summary_id: int | None, text: str,
                              reason: str, created: float) -> RolePromptVersion:
        return await self._call("add_role_prompt", user_id, persona_prompt, summary_id, text, reason, created)

    async def forget_user(self, name: str) -> ForgetReport:
        return await self._call("forget_user", name)

    async def save_profile(self, user_id: int, data: dict[str, list[str]], updated: float) -> None:
        await self._call("save_profile", user_id, data, updated)

    # --- what operators' tools read and change (memory/admin.py), as on PostgreSQL ----------

    async def connect(self) -> None:
        """Open the file now (the same call as PostgreSQL's): one that is not a SQLite
        database (``--db`` at the wrong file) is one ``StoreUnavailable`` naming it, before
        anything starts, instead of a traceback at the first turn."""
        try:
            await self._run(self._open_db)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise StoreUnavailable(f"{self.path} is locked by another process ({exc}); "
                                       "is another robot or tool using it?") from None
            raise StoreUnavailable(f"{self.path} cannot be opened: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailable(f"{self.path} is not a memory file the robot can use: {exc}") from None

    async def user_id(self, name: str) -> int | None:
        return await self._call("user_id", name)

    async def user_names(self) -> list[str]:
        return await self._call("user_names")

    async def load_user(self, name: str, now: float, recent_absorbed: int = 0) -> UserState:
        return await self._call("load_user", name, now, recent_absorbed)

    async def turns(self, user_id: int) -> list[StoredRemark]:
        return await self._call("turns", user_id)

    async def sessions(self, user_id: int) -> list[tuple[int, float, float | None]]:
        return await self._call("sessions", user_id)

    async def summaries(self, user_id: int) -> list[SummaryVersion]:
        return await self._call("summaries", user_id)

    async def current_summary(self, user_id: int) -> SummaryVersion | None:
        return await self._call("current_summary", user_id)

    async def chain(self, summary: SummaryVersion | None) -> list[SummaryVersion]:
        return await self._call("chain", summary)

    async def role_prompts(self, user_id: int) -> list[RolePromptVersion]:
        return await self._call("role_prompts", user_id)

    async def latest_role_prompt(self, user_id: int) -> RolePromptVersion | None:
        return await self._call("latest_role_prompt", user_id)

    async def set_current_summary(self, user_id: int, summary_id: int | None, persona_prompt: str,
                                  role_prompt: str, created: float) -> RolePromptVersion:
        return await self._call("set_current_summary", user_id, summary_id, persona_prompt, role_prompt, created)

    async def dump_user(self, name: str) -> UserDump | None:
        return await self._call("dump_user", name)

    async def load_dump(self, dump: UserDump) -> None:
        await self._call("load_dump", dump)

    async def close(self) -> None:
        if self._closed:  # its owner and the runtime may both close it
            return
        self._closed = True

        def close() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        await self._run(close)
        self._executor.shutdown(wait=True)
