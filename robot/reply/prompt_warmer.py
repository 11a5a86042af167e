"""Keeping the reply prompt warm: its start is read by the LLM server before a customer waits.

The embedded llama.cpp server keeps the state of the prompts it has read (``llm.prompt_cache_mib``)
and reads again only what follows the longest start it already knows. A reply's request is
the role prompt, the history, and the customer's words with this turn's notes (profile lines,
the shop's entries); the server's last state is the previous request, whose last customer
message carried notes the history does not keep, and the words it generated, not those the
robot said. So each reply read the previous exchange again, and the whole prompt when the role
prompt was rewritten (a visitor's session opens with their summary, a summary folds, the last
visitor leaves). On one thread of a two-core machine the server reads about 150 tokens a
second: a reply waited 0.4-0.6 s for its first token to read the last exchange, 1.3-2.0 s after
a rewrite, against 25 ms for a prompt it had read.

So whenever the robot is idle and the prompt's start has changed (``MemoryEvent``,
``SessionEvent``, a turn or a greeting said), ``PromptWarmer`` sends it (``prefix``: the role
prompt and the history, the memory's ``prompt_prefix``) under a stand-in utterance, for one
token. At the customer's pause only their words and the turn's notes are left to read.

A reply's request, early or not, waits for a read in progress (``settle``): the read is the
reply's own work, since it fills the cache with the prompt the reply starts with, and only
the one stand-in token is extra. Waiting also keeps the replies the same from run to run:
the server's numbers differ in the last bits when a prompt is read in other pieces, which
changes what a small model says, so the reply must never race the read. A read that takes
longer than ``SETTLE_S`` is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator, Awaitable, Callable, Protocol

from memory.core.base import Message
from robot.core.events import Event, MemoryEvent, SessionEvent

log = logging.getLogger(__name__)

SETTLE_S = 3.0  # a reply waits at most this long for a read in progress (a few hundred tokens: ~2 s)
STAND_IN = "Hello."  # the utterance under which the prompt is read: only what precedes it is reused
Prefix = Callable[[], Awaitable[list[Message]]]


class WarmableLLM(Protocol):
    def stream(self, messages: list[Message], *, max_tokens: int | None = None) -> AsyncIterator[str]: ...


class PromptWarmer:
    """An event publisher (``robot.core.events.EventBus``) that warms the reply prompt when it changed."""

    def __init__(self, llm: WarmableLLM, prefix: Prefix, idle: Callable[[], bool]) -> None:
        """``prefix``: the memory's role prompt and history, now (``prompt_prefix``: without
        side effects, it opens no visitor's memory); ``idle``: no reply is being made or said."""
        self._llm, self._prefix, self._idle = llm, prefix, idle
        self._read: list[Message] | None = None  # the last prefix read: not read again
        self._task: asyncio.Task[None] | None = None
        # Closed as the robot stops. The memory closes after it and its last summary rewrites the
        # role prompt: read then, the prompt went to a server being closed, and the request's
        # retries logged a connection error at the end of every simulation.
        self._closed = False
        self.warmed = 0  # prompts read ahead to their first token

    def publish(self, event: Event) -> None:
        if isinstance(event, (MemoryEvent, SessionEvent)):
            self.request()

    def request(self) -> None:
        """The prompt changed: read it ahead now if the robot is idle, else when it is
        again (``idle_again`` reads whatever changed meanwhile)."""
        if self._closed or not self._idle():
            return
        self.cancel()
        with contextlib.suppress(RuntimeError):  # no running loop (a synchronous caller): nothing to warm
            self._task = asyncio.get_running_loop().create_task(self._warm())

    def idle_again(self) -> None:
        """A turn or a greeting ended: the history grew (and a role prompt may have changed
        meanwhile); what is new is read ahead now."""
        self.request()

    def cancel(self) -> None:
        """The read in progress closes (the server stops reading it)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = None

    async def settle(self, timeout_s: float = SETTLE_S) -> None:
        """A reply needs the LLM: a read in progress finishes first (within ``timeout_s``,
        else it is closed); none starts until ``idle_again``."""
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            log.info("reading the reply prompt ahead took over %.0f s: closed", timeout_s)
            self.cancel()

    async def wait(self) -> None:
        """Until the prompt being read (if any) is read (tests)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def aclose(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _warm(self) -> None:
        try:
            await asyncio.sleep(0)  # whoever asked goes on first (a greeting starting, a session opening)
            if not self._idle():  # the robot began to speak meanwhile (a greeting): read after it
                return
            prefix = await self._prefix()
            if prefix == self._read:
                return  # nothing new since the last read (a turn that was not answered)
            messages: list[Message] = [*prefix, {"role": "user", "content": STAND_IN}]
            # One token, and the request ends on its own: the server has released its slot, with
            # the prompt's state, before the next request comes (one closed at its first token
            # may still hold it then: the next waits for it, or with two slots goes to the other).
            async with contextlib.aclosing(self._llm.stream(messages, max_tokens=1)) as deltas:
                async for _ in deltas:
                    pass
            self.warmed += 1
            self._read = prefix
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a cold prompt only costs the next reply time
            log.debug("warming the reply prompt failed: %s", exc)
