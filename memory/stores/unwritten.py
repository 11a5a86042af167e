"""Turns the store could not take (its server down or restarting), kept in RAM in the
order they were said and written as soon as it is back: the conversation goes on through
an outage and no turn is lost.

While turns wait here, each has a provisional negative id in the memory's mirror (so the
reply prompt has them); the written turn replaces it. Later turns queue behind them, so
the store gets every turn in order. The queue is bounded: past ``limit`` turns (hours of
talk) the oldest are dropped, loudly, rather than letting RAM grow without end.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from typing import Awaitable, Callable

from memory.core.base import Remark
from memory.core.records import StoredRemark
from memory.stores.protocol import StoreUnavailable

log = logging.getLogger(__name__)

LIMIT = 1000
RETRY_S = (0.5, 1.0, 2.0, 5.0)  # waits between tries while the store stays away (the last repeats)

Write = Callable[[Remark], Awaitable[StoredRemark]]
Written = Callable[[StoredRemark, StoredRemark], None]  # (provisional, as stored)


class UnwrittenTurns:
    def __init__(self, write: Write, written: Written, on_outage: Callable[[str], None] | None = None,
                 limit: int = LIMIT, retry_s: tuple[float, ...] = RETRY_S) -> None:
        self._write, self._written, self._on_outage = write, written, on_outage
        self._limit, self._retry_s = limit, retry_s
        self._queue: deque[tuple[Remark, StoredRemark]] = deque()
        self._ids = itertools.count(-1, -1)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0
        self._noticed = False  # this outage was reported

    def __len__(self) -> int:
        return len(self._queue)

    def notice(self, reason: str) -> None:
        """The store is away: say so once per outage (the log, and the operator's callback)."""
        if self._noticed:
            return
        self._noticed = True
        message = f"memory store unavailable ({reason}); turns are kept in RAM and written when it is back"
        log.warning(message)
        if self._on_outage is not None:
            self._on_outage(message)

    def reachable(self) -> None:
        """The store answered: the next outage is a new one, to be reported again."""
        if not self._queue:
            self._noticed = False

    def hold(self, turn: Remark, session_id: int | None, reason: str) -> StoredRemark:
        """Keep ``turn`` until the store takes it; its provisional record for the mirror."""
        self.notice(reason)
        if len(self._queue) >= self._limit:
            self._queue.popleft()
            self.dropped += 1
            log.error("memory store away for %d turns: the oldest unwritten turn is dropped (%d so far)",
                      self._limit, self.dropped)
        provisional = StoredRemark(next(self._ids), turn.role, turn.text, turn.ts, turn.turn_id, turn.speaker,
                                   session_id)
        self._queue.append((turn, provisional))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._drain(), name="memory-unwritten")
        return provisional

    async def wait(self) -> None:
        """Until every held turn is written (or the drain was cancelled)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def take(self) -> list[Remark]:
        """The turns still waiting, in order, taken out (to keep them in a journal instead)."""
        turns = [turn for turn, _ in self._queue]
        self._queue.clear()
        return turns

    async def aclose(self) -> int:
        """Stop trying; the number of turns never written (logged as an error)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        lost = len(self._queue)
        if lost:
            log.error("memory closed while the store was away: %d turns were never written", lost)
        return lost

    async def _drain(self) -> None:
        tries = 0
        while self._queue:
            turn, provisional = self._queue[0]
            try:
                stored = await self._write(turn)
            except Exception as exc:  # noqa: BLE001 - away (StoreUnavailable) or another fault: try again
                if not isinstance(exc, StoreUnavailable):
                    log.exception("writing a kept turn failed; trying again")
                await asyncio.sleep(self._retry_s[min(tries, len(self._retry_s) - 1)])
                tries += 1
                continue
            self._queue.popleft()
            self._written(provisional, stored)
            tries = 0
        self._noticed = False
        log.warning("memory store is back: the turns kept in RAM are written")
