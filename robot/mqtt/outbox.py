"""The bounded queue between ``publish()`` and the broker.

``put`` is what the dialogue loop calls, so it only appends to a deque and wakes the
sender: O(1), no await, safe from any thread. When full, the oldest event goes first
(the body cares most about what happens now), except an answer: an error or a command's
ack is what an operator waits on, so the oldest of the other events goes before any of
them, and only a queue full of answers drops the oldest answer. Every loss is counted;
the sender reports the count on the error topic (robot/mqtt/hooks.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque

from robot.core.events import ErrorEvent, Event, StateEvent


def is_answer(event: Event) -> bool:
    """An error, or a command's ack: what an operator or a script waits on."""
    return isinstance(event, ErrorEvent) or event.kind == "ack"


class Outbox:
    def __init__(self, maxlen: int) -> None:
        self._queue: deque[Event] = deque()
        self._maxlen = maxlen
        self._lock = threading.Lock()  # publish() may come from an audio or worker thread
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.dropped = 0
        self.latest_state: StateEvent | None = None  # the newest state handed to put()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the loop the sender runs on, so other threads can wake it."""
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def put(self, event: Event) -> None:
        with self._lock:
            if len(self._queue) >= self._maxlen:
                self._drop_one()
                self.dropped += 1
            self._queue.append(event)
            if isinstance(event, StateEvent):
                self.latest_state = event
        self.wake()

    def _drop_one(self) -> None:
        """The oldest event that is not an answer, else the oldest answer (the lock is held).
        One on its way to the broker may go too: done() leaves the queue as it is then."""
        for index, queued in enumerate(self._queue):
            if not is_answer(queued):
                del self._queue[index]
                return
        self._queue.popleft()

    def wake(self) -> None:
        if self._loop is None or threading.get_ident() == self._loop_thread:
            self._wake.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)

    def peek(self) -> Event | None:
        with self._lock:
            return self._queue[0] if self._queue else None

    def done(self, event: Event) -> None:
        """Remove ``event`` once the broker has it; it may already be gone (dropped meanwhile)."""
        with self._lock:
            if self._queue and self._queue[0] is event:
                self._queue.popleft()

    def holds(self, event: Event) -> bool:
        with self._lock:
            return any(queued is event for queued in self._queue)

    async def wait(self) -> None:
        """Return when something was put (or wake() was called) since the queue was last empty."""
        if self.peek() is None:
            self._wake.clear()
            await self._wake.wait()

    def __len__(self) -> int:
        return len(self._queue)
