"""Time for memory: an injectable clock, so a simulation can let ten minutes pass at once.

Schedules (the summary timer, retry backoff) read and wait on the clock. A summary's own
timeout is *not* on the clock: it bounds a real LLM call, so it uses the event loop's time.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (stored with turns and summaries)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...


class SystemClock:
    """Wall time and real sleeping."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """Time moves only when ``advance()`` is awaited; sleepers wake in deadline order.

    ``advance`` steps to each due deadline in turn and lets the woken tasks run a little
    (a few loop iterations) before the next one, so a timer that re-arms itself fires once
    per interval, as it would in real time.
    """

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else float(start)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()  # ties wake in the order they went to sleep

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future  # a cancelled sleeper's future is skipped when its deadline comes

    async def advance(self, seconds: float) -> None:
        target = self._now + max(0.0, seconds)
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if not future.done():
                future.set_result(None)
                await _let_tasks_run()
        self._now = target
        await _let_tasks_run()


async def _let_tasks_run(rounds: int = 20) -> None:
    # Woken tasks need a few loop turns to reach their next await (and re-arm a timer).
    for _ in range(rounds):
        await asyncio.sleep(0)
