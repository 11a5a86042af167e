"""Thinking before the turn is certainly over: the reply's LLM request starts at the
customer's pause, while the endpointer still waits out its hangover.

When the customer pauses, speech to text starts on what they said (``Hearing._paused``); as
soon as its words are known, the controller builds the prompt the turn would build and
``PreemptiveLLM.start`` sends it. The request's text deltas are only buffered: nothing is
spoken and nothing is stored. If the turn then ends and asks for exactly those messages,
``stream`` hands over the buffered deltas and the rest as they come, so the first sentence
is often ready when the turn ends. If the customer goes on (``cancel``), or the turn asks for
anything else (other words, a summary rewrote the prompt meanwhile, a "yes" to more), the
request is closed and the turn's own request goes out as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import AsyncIterator

from memory.core.base import Message
from robot.reply.stream import ReplyLLM

log = logging.getLogger(__name__)


class _Started:
    """One request started early: its deltas so far, and the task that reads the rest."""

    def __init__(self, llm: ReplyLLM, messages: list[Message]) -> None:
        self.messages = messages
        self.deltas: list[str] = []
        self.error: BaseException | None = None
        self.done = False
        self.started_at = time.monotonic()
        self._more = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read(llm))

    async def _read(self, llm: ReplyLLM) -> None:
        try:
            async with contextlib.aclosing(llm.stream(self.messages)) as deltas:
                async for delta in deltas:
                    self.deltas.append(delta)
                    self._more.set()
        except Exception as exc:  # noqa: BLE001 - handed to the turn that takes it, as the LLM's own
            self.error = exc
        finally:
            self.done = True
            self._more.set()

    async def replay(self) -> AsyncIterator[str]:
        """Every delta, the buffered ones first; leaving early closes the request."""
        sent = 0
        try:
            while True:
                while sent < len(self.deltas):
                    sent += 1
                    yield self.deltas[sent - 1]
                if self.done:
                    if self.error is not None:
                        raise self.error
                    return
                self._more.clear()
                if sent == len(self.deltas) and not self.done:
                    await self._more.wait()
        finally:
            self.cancel()

    def cancel(self) -> None:
        if not self._task.done():
            self._task.cancel()  # closes the HTTP stream: the server stops generating


class PreemptiveLLM:
    """A ``ReplyLLM`` whose next request may already be under way (``start``)."""

    def __init__(self, llm: ReplyLLM) -> None:
        self._llm = llm
        self._started: _Started | None = None
        self.taken = 0  # early requests a turn used
        self.dropped = 0  # early requests closed unused (the customer went on, other words)

    @property
    def pending(self) -> bool:
        return self._started is not None

    def start(self, messages: list[Message]) -> None:
        """Send the request for ``messages`` now, ahead of the turn (replacing an older one)."""
        self.cancel()
        self._started = _Started(self._llm, messages)

    def cancel(self) -> None:
        """The customer went on (or the turn needs no reply): close the early request."""
        started, self._started = self._started, None
        if started is not None:
            started.cancel()
            self.dropped += 1
            log.debug("early reply request closed unused after %.0f ms",
                      (time.monotonic() - started.started_at) * 1000)

    def stream(self, messages: list[Message]) -> AsyncIterator[str]:
        started, self._started = self._started, None
        if started is not None and started.messages == messages:
            self.taken += 1
            return started.replay()
        if started is not None:
            started.cancel()
            self.dropped += 1
        return self._llm.stream(messages)
