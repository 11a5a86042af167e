"""The console's view of the event stream: a bounded replay log for the live page.

``publish`` is on the dialogue's path, so it only appends to a ring and wakes the
waiting streams; JSON is made later, by each stream, outside the dialogue's turn.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import deque
from dataclasses import replace
from typing import AsyncIterator

from robot.core.events import (Event, ForgottenEvent, GestureEvent, HandoverEvent, SpeechEvent, TranscriptEvent,
                               TurnEvent)

LOG_SIZE = 2000  # events a page opened late can still replay
PING_S = 15.0  # a comment line this often keeps proxies from closing an idle stream
PLOT_TURNS = 50  # turns the latency plot shows


class EventHub:
    """An ``EventPublisher`` that keeps recent events, numbered, for ``stream()`` readers."""

    def __init__(self, size: int = LOG_SIZE) -> None:
        self._log: deque[tuple[int, Event]] = deque(maxlen=size)
        self._seq = itertools.count(1)
        self.last_seq = 0
        self.turns: deque[TurnEvent] = deque(maxlen=PLOT_TURNS)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._changed = asyncio.Event()
        self.closed = False

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the streams run on (publishers on other threads hand over to it)."""
        self._loop, self._thread = loop, threading.get_ident()

    def publish(self, event: Event) -> None:
        if isinstance(event, GestureEvent):
            return  # the page shows no gestures; they would only crowd the replay log
        if isinstance(event, ForgottenEvent):
            self._drop_words()
        self.last_seq = next(self._seq)
        self._log.append((self.last_seq, event))
        if isinstance(event, TurnEvent):
            self.turns.append(event)
        if self._loop is None or threading.get_ident() == self._thread:
            self._wake()
        else:
            self._loop.call_soon_threadsafe(self._wake)

    def _drop_words(self) -> None:
        """A visitor was forgotten: a page opened later must not replay what was said. Every
        event that carries words goes (whose they were is not known here); the latency plot
        keeps the turns' timings without their texts."""
        kept = [(seq, e) for seq, e in self._log
                if not isinstance(e, (TranscriptEvent, SpeechEvent, TurnEvent, HandoverEvent))]  # their words
        self._log = deque(kept, maxlen=self._log.maxlen)
        self.turns = deque((replace(e, user_text="", reply_text="") for e in self.turns), maxlen=self.turns.maxlen)

    def _wake(self) -> None:
        # Every waiting stream holds the current Event object: set it, start a new one.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def close(self) -> None:
        """End every stream (the robot is shutting down)."""
        self.closed = True
        self._wake()

    def since(self, seq: int) -> list[tuple[int, Event]]:
        news = []
        for item in reversed(list(self._log)):  # a copy: another thread may append meanwhile
            if item[0] <= seq:
                break
            news.append(item)
        return news[::-1]

    async def stream(self, after: int = 0) -> AsyncIterator[tuple[int, Event] | None]:
        """Events after ``after`` (replayed from the log), then live ones; None every
        ``PING_S`` without news. Ends when the hub closes."""
        last = after
        while not self.closed:
            changed = self._changed
            news = self.since(last)
            if news:
                for item in news:
                    yield item
                last = news[-1][0]
                continue
            try:
                await asyncio.wait_for(changed.wait(), PING_S)
            except asyncio.TimeoutError:
                yield None
