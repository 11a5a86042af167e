"""A store whose calls on a turn's path end within a deadline (issue 28, item 3).

A PostgreSQL server that goes away mid-conversation held a turn in silence: 3.5 s when it
was stopped (the pool waits 3 s for a connection), 13.5 s when it was frozen (SIGSTOP: a
query never answers, and cancelling it waited 10 s for psycopg's cancel request). The
memory already talks on from RAM once it knows the store is away (memory/stores/unwritten.py);
what it needs is to learn it quickly. ``BoundedStore`` wraps the store so that the calls a
turn waits on raise ``StoreUnavailable`` after ``deadline_s`` (the runtime gives half of
``llm.filler_after_s``: a store never holds a reply past the filler's deadline).

A late call is not cancelled (that is what waited 10 s): it goes on in the background and
its result is dropped; a write of a turn that is tried again (the memory's retry of a
turn kept in RAM) joins the write still in flight instead of inserting the turn twice.
After a failure, calls fail at once for ``deadline_s``: the memory already knows.
Background work (summaries, forgetting, the retention sweep) is not bounded here.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, TypeVar

from memory.core.base import Remark
from memory.core.records import StoredRemark
from memory.stores.protocol import MemoryStore, StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

# What a turn (or a visitor's arrival, or a persona switch) waits on: reads, and the writes
# of its own records. Everything else passes through unbounded.
BOUNDED = frozenset({"open_user", "load_user", "start_session", "add_role_prompt", "save_profile", "has_user",
                     "user_id", "turns", "profile"})


class BoundedStore:
    """``MemoryStore`` over another, its turn-path calls bounded by ``deadline_s``."""

    def __init__(self, store: MemoryStore, deadline_s: float) -> None:
        self._store = store
        self._where = f"memory store at {getattr(store, 'server', store)}"  # host:port, never a password
        self.deadline_s = deadline_s
        self._failed_at: float | None = None  # loop time of the last failure
        self._writes: dict[int, tuple[Remark, int, int | None, asyncio.Task[StoredRemark]]] = {}

    def __str__(self) -> str:
        return str(self._store)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in BOUNDED:
            return attr

        async def bounded(*args: Any, **kwargs: Any) -> Any:
            return await self._within(name, lambda: attr(*args, **kwargs))

        return bounded

    async def add_turn(self, user_id: int, session_id: int | None, turn: Remark) -> StoredRemark:
        known = self._writes.get(id(turn))
        if known is not None and (known[0] is not turn or known[1:3] != (user_id, session_id)
                                  or (known[3].done() and known[3].exception() is not None)):
            known = None  # another turn (an id reused), another visitor, or a write that failed: anew
        if known is None:
            self._check_away("add_turn")
            task = asyncio.ensure_future(self._store.add_turn(user_id, session_id, turn))
            task.add_done_callback(_retrieve)
            self._writes[id(turn)] = (turn, user_id, session_id, task)
        else:
            task = known[3]  # written already, or still being written: the same insert
        try:
            stored = await self._wait("add_turn", task)
        except StoreUnavailable:
            if task.done():  # it failed: the next try inserts anew
                self._writes.pop(id(turn), None)
            raise
        self._writes.pop(id(turn), None)
        return stored

    async def _within(self, name: str, call: Callable[[], Awaitable[T]]) -> T:
        self._check_away(name)
        task = asyncio.ensure_future(call())
        task.add_done_callback(_retrieve)
        return await self._wait(name, task)

    async def _wait(self, name: str, task: asyncio.Future[T]) -> T:
        # asyncio.wait, not wait_for: a caller that gives up (or is cancelled) never waits
        # for the call's own cancellation.
        done, _ = await asyncio.wait({task}, timeout=self.deadline_s)
        if not done:
            self._failed_at = asyncio.get_running_loop().time()
            log.warning("memory store: %s did not answer within %.2g s; it finishes in the background", name,
                        self.deadline_s)
            raise StoreUnavailable(f"{self._where}: no answer within {self.deadline_s:.2g} s")
        try:
            result = task.result()
        except StoreUnavailable:
            self._failed_at = asyncio.get_running_loop().time()
            raise
        self._failed_at = None
        return result

    def _check_away(self, name: str) -> None:
        if self._failed_at is None:
            return
        since = asyncio.get_running_loop().time() - self._failed_at
        if since < self.deadline_s:
            raise StoreUnavailable(f"{self._where}: away (it failed {since:.1f} s ago); {name} not tried")


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A call nobody waits for any more must not log 'exception never retrieved'."""
    if not task.cancelled():
        task.exception()
