"""Visitor sessions: when a visitor's conversation opens and closes.

A session opens on the first customer turn after the robot was idle, or on a
``session/start`` command (which may carry a visitor id); it closes after
``session.idle_timeout_s`` without a turn (``session.after_goodbye_s`` once the visitor said
goodbye and was answered), on ``session/end``, when another visitor's session starts, or when
the robot stops. Each visitor's memory is ``memory.visitors``'s.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from memory.core.clock import Clock
from memory.visitors import VisitorMemory, is_anonymous
from robot.core.events import EventPublisher, ForgottenEvent, SessionEvent

log = logging.getLogger(__name__)

CHECK_S = 1.0  # the idle timeout is checked at most this often


class Sessions:
    def __init__(self, memory: VisitorMemory, events: EventPublisher, clock: Clock, idle_timeout_s: float,
                 busy: Callable[[], bool] = lambda: False, after_goodbye_s: float | None = None) -> None:
        self.memory, self.events, self.clock = memory, events, clock
        self.idle_timeout_s = idle_timeout_s
        self.after_goodbye_s = idle_timeout_s if after_goodbye_s is None else min(after_goodbye_s, idle_timeout_s)
        self._said_goodbye = False  # the visitor said goodbye: the session ends sooner, unless they go on
        self._busy = busy  # a turn in progress is never idle
        self.visitor_id: str | None = None  # the id given, None for an anonymous visitor
        self.turns = 0
        self._last_activity = clock.now()
        self._watcher: asyncio.Task[None] | None = None
        self._switch = asyncio.Lock()

    @property
    def open(self) -> bool:
        return self.memory.visitor is not None

    @property
    def visitor(self) -> str:
        return self.visitor_id or "anonymous"

    async def start(self, visitor_id: str | None = None) -> str:
        """A new visitor (the current one's session ends first); their memory's name."""
        async with self._switch:
            await self._end("new visitor")
            return await self._start(visitor_id)

    async def end(self, reason: str = "command") -> bool:
        """End the current session; False when none was open."""
        async with self._switch:
            return await self._end(reason)

    async def turn(self) -> None:
        """A customer's turn begins: it opens a session when none is open."""
        async with self._switch:
            if not self.open:
                await self._start(None)
            else:
                await self._notice_forgets()  # a forget from the command line counts at once
        self.turns += 1
        self._said_goodbye = False  # they went on after all: the whole idle timeout again
        self.touch()

    async def notice_forgets(self) -> list[str]:
        """Visitors that ``robot memory forget`` (another process) deleted: each is published
        as ``forgotten`` (by the operator), so the console drops their words and the body
        its own records, as after the ``forget`` command. The console asks at each status read."""
        async with self._switch:
            return await self._notice_forgets()

    async def _notice_forgets(self) -> list[str]:
        gone = await self.memory.forgotten_elsewhere()
        for name in gone:
            self.events.publish(ForgottenEvent(visitor="anonymous" if is_anonymous(name) else name, by="operator"))
            log.info("visitor %s was forgotten by another process", name)
        return gone

    def goodbye(self) -> None:
        """The visitor said goodbye and was answered: the session ends after ``after_goodbye_s``
        without a turn (idle time counts from the end of the reply), not the whole idle timeout,
        so the next visitor does not walk into it, and the visit's summary starts sooner."""
        if not self.open or self._said_goodbye:
            return
        self._said_goodbye = True
        self.touch()
        if self._watcher is not None and not self._watcher.done():
            # it sleeps out the longer timeout: watch again on the shorter one
            self._watcher.cancel()
            self.start_watching()

    @property
    def timeout_s(self) -> float:
        """Silence that ends the session now."""
        return self.after_goodbye_s if self._said_goodbye else self.idle_timeout_s

    async def open_early(self) -> None:
        """The customer's first words are known before their turn ends (the robot thinks
        ahead at their pause): the session their turn would open opens now, so its memory
        loads while the endpointer still waits. No turn is counted."""
        async with self._switch:
            if not self.open:
                await self._start(None)

    def touch(self) -> None:
        """Something happened in the session: the idle clock starts again."""
        self._last_activity = self.clock.now()

    async def _start(self, visitor_id: str | None) -> str:
        name = await self.memory.begin(visitor_id)
        self.visitor_id, self.turns = visitor_id, 0
        self.touch()
        self.events.publish(SessionEvent(state="started", visitor=self.visitor))
        log.info("session started: visitor %s", self.visitor)
        return name

    async def _end(self, reason: str) -> bool:
        if not self.open:
            return False
        visitor, turns = self.visitor, self.turns
        await self.memory.end()
        self.visitor_id, self.turns, self._said_goodbye = None, 0, False
        self.events.publish(SessionEvent(state="ended", visitor=visitor, turns=turns, reason=reason))
        log.info("session ended (%s): visitor %s, %d turns", reason, visitor, turns)
        return True

    # --- the idle timeout ----------------------------------------------------------------

    def start_watching(self) -> None:
        self._watcher = asyncio.create_task(self._watch(), name="session-idle-timeout")

    async def _watch(self) -> None:
        # Every path sleeps at least CHECK_S: a tiny timeout (1e-8) spun the loop without ever
        # awaiting, and `robot chat` froze at 63 % of a core (issue 28).
        while True:
            left = self._last_activity + self.timeout_s - self.clock.now()
            if left > 0 or not self.open:
                await self.clock.sleep(max(left if self.open else self.timeout_s, CHECK_S))
                continue
            if self._busy():
                self.touch()  # a reply still running is not silence
                await self.clock.sleep(max(self.timeout_s, CHECK_S))
                continue
            # shielded: a goodbye that restarts the watcher must not cut an ending session short
            await asyncio.shield(self.end("goodbye" if self._said_goodbye else "idle"))

    async def aclose(self) -> None:
        """Stop watching; end the open session (its forced summary runs in memory's close)."""
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.gather(self._watcher, return_exceptions=True)
        await self.end("exit")
