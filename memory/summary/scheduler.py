"""When a summary runs: the timer, the turn/token/window triggers, one summary at a time,
and a retry after a failure.

The scheduler knows nothing of what a summary does. It asks ``begin(reason, flush)`` for a
job (``None``: nothing to fold) and runs it as a background task; the job's result says
how it went: ``True`` swapped, ``False`` failed (the raw turns stay; retried after
``retry_backoff_s``, and new turns do not retry it meanwhile), ``None`` nothing written
(the user was forgotten meanwhile).

A timer tick that comes while a summary runs is not dropped: it is coalesced into one more
run as soon as that summary ends (several ticks: still one run), so a session's tail is
folded. The timer cannot spin: its interval is at least ``MIN_INTERVAL_S`` whatever it is
given, and each wait is computed from the clock, never by adding a step that floats lose.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Awaitable, Callable

from memory.core.clock import Clock
from memory.core.settings import SummaryPolicy

log = logging.getLogger(__name__)

MIN_RETRY_S = 0.5  # a zero backoff must not turn a dead LLM into a busy loop
MIN_INTERVAL_S = 1.0  # a timer of 1e-8 s would spin at 100 % CPU (issue 14)

Job = Awaitable["bool | None"]


@dataclass(frozen=True)
class Backlog:
    """What waits in the current-prompt history, as the triggers see it."""

    turns: int  # pending utterances
    tokens: int  # their size
    token_limit: int  # the size that starts a summary
    window_due: bool  # the strategy's own trigger (a complete swin window)


class SummaryScheduler:
    def __init__(self, policy: SummaryPolicy, clock: Clock, begin: Callable[[str, bool], Job | None],
                 backlog: Callable[[], Backlog]) -> None:
        self.policy = policy
        self.clock = clock
        self._begin = begin
        self._backlog = backlog
        self._job: asyncio.Task[bool | None] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._retry: asyncio.Task[None] | None = None
        self._backoff_until = -math.inf
        self._closed = False
        self._tick_waiting = False  # a timer tick came while a summary ran: run once more after it
        self.last_failed = False  # how the last summary ended (flush reports it)
        self.failures = 0  # summaries in a row that failed or timed out

    @property
    def busy(self) -> bool:
        return self._job is not None and not self._job.done()

    @property
    def closed(self) -> bool:  # aclose was called: a summary in progress ends as soon as it can
        return self._closed

    def start(self) -> None:
        """Arm the timer and look at the backlog (a restart may bring a long history back)."""
        if self._timer is None:
            self._timer = asyncio.create_task(self._tick(), name="memory-timer")
        self.check()

    def check(self) -> None:
        """Start a summary if a trigger says so (after each recorded turn)."""
        if self._closed or self.busy or self.clock.now() < self._backoff_until:
            return  # after a failure, the retry (or the timer) tries again, not every new turn
        backlog, after_turns = self._backlog(), self.policy.update_after_turns
        if after_turns and backlog.turns >= after_turns:
            self.request("turns", flush=True)
        elif backlog.tokens >= backlog.token_limit:
            self.request("tokens", flush=True)
        elif backlog.window_due:
            self.request("window", flush=False)

    def request(self, reason: str, flush: bool) -> bool:
        """Start a background summary unless one is running or nothing is pending. A timer
        tick that finds one running is coalesced: one more run follows it."""
        if self._closed:
            return False
        if self.busy:
            if reason == "timer":
                self._tick_waiting = True
            return False
        job = self._begin(reason, flush)
        if job is None:
            return False
        self.last_failed = False
        self._job = asyncio.create_task(self._run(job), name=f"memory-summary-{reason}")
        return True

    async def flush(self) -> bool:
        """Summarize everything pending now and wait. True when nothing is left pending."""
        await self.wait_idle()
        while self._backlog().turns and not self._closed:
            if not self.request("flush", flush=True):
                break
            await self.wait_idle()
            if self.last_failed:
                return False
        return not self._backlog().turns

    async def wait_idle(self) -> None:
        """Wait until no summary is in progress (one may start another: wait for all)."""
        while self._job is not None and not self._job.done():
            await asyncio.wait({self._job})

    async def cancel(self) -> None:
        """Cancel a summary in progress (its turns stay raw)."""
        if self._job is not None:
            self._job.cancel()
            await asyncio.gather(self._job, return_exceptions=True)

    async def aclose(self, timeout_s: float) -> None:
        """Stop the timer and the retry; give a summary in progress ``timeout_s``, then cancel it."""
        self._closed = True
        for task in (self._timer, self._retry):
            if task is not None:
                task.cancel()
        job = self._job
        if job is not None and not job.done():
            done, _ = await asyncio.wait({job}, timeout=timeout_s)
            if not done:
                log.warning("memory closing: a summary in progress was cancelled; its turns stay raw")
                await self.cancel()

    async def _run(self, job: Job) -> bool | None:
        result: bool | None = None
        try:
            result = await job
        finally:
            self.last_failed = not result
            self._job = None
        if result:
            self.failures = 0
            if self._tick_waiting and not self._closed:
                self._tick_waiting = False
                self.request("timer (coalesced)", flush=True)  # the tick that came meanwhile
            self.check()  # a backlog (or the next swin window) goes on at once
            return result
        delay = max(MIN_RETRY_S, self.policy.retry_backoff_s)
        if result is False:
            self.failures += 1
            self._backoff_until = self.clock.now() + delay
        if not self._closed and (self._retry is None or self._retry.done()):
            log.info("next summary attempt in %.1fs", delay)
            self._retry = asyncio.create_task(self._retry_after(delay), name="memory-summary-retry")
        return result

    async def _retry_after(self, delay: float) -> None:
        await self.clock.sleep(delay)
        self._retry = None
        self.request("retry", flush=True)

    async def _tick(self) -> None:
        interval = max(MIN_INTERVAL_S, self.policy.update_interval_s)
        start = self.clock.now()
        fired = 0
        while True:
            # Fixed cadence from the start: the next multiple of the interval after now (a late
            # wake-up does not fire twice), at least a tenth of an interval away (never a spin).
            fired = max(fired + 1, math.floor((self.clock.now() - start) / interval) + 1)
            await self.clock.sleep(max(interval / 10, start + fired * interval - self.clock.now()))
            self.request("timer", flush=True)
