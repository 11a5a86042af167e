"""Keeping the reply prompt warm: its start is read by the LLM server before a customer waits.

The embedded llama.cpp server keeps the state of the prompts it has read (``llm.prompt_cache_mib``)
and reads again only what follows the longest start it already knows. Each turn's request
begins with the previous one's, so a reply normally reads only the newest words. But when the
role prompt is rewritten (a visitor's session opens with their summary, a summary folds, the
last visitor leaves) the whole prompt is new: on the sample scenario fed at 1x the first reply
after each change waited 1.3-2.0 s for its first token, the others 0.3-0.4 s.

So when the role prompt changes (``MemoryEvent``) or a session starts or ends
(``SessionEvent``) and the robot is idle, ``PromptWarmer`` sends the role prompt (the system
message every request begins with) under a stand-in utterance, for one token. Only the role
prompt: the history after it is short when the role prompt was just rewritten, and is read by
each turn's request anyway.

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
from typing import AsyncIterator, Callable, Protocol

from memory.core.base import Message
from robot.core.events import Event, MemoryEvent, SessionEvent

log = logging.getLogger(__name__)

SETTLE_S = 3.0  # a reply waits at most this long for a read in progress (a few hundred tokens: ~2 s)
STAND_IN = "Hello."  # the utterance under which the prompt is read: only what precedes it is reused


class WarmableLLM(Protocol):
    def stream(self, messages: list[Message], *, max_tokens: int | None = None) -> AsyncIterator[str]: ...


class PromptWarmer:
    """An event publisher (``robot.core.events.EventBus``) that warms the reply prompt when it changed."""

    def __init__(self, llm: WarmableLLM, role_prompt: Callable[[], str], idle: Callable[[], bool]) -> None:
        """``role_prompt``: the memory's, now (read without side effects: building a prompt
        would open a visitor's memory when none is open); ``idle``: no reply is being made or said."""
        self._llm, self._role_prompt, self._idle = llm, role_prompt, idle
        self._task: asyncio.Task[None] | None = None
        self._pending = False  # changed while the robot was busy: warmed when it is idle again
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
        again (``idle_again``)."""
        if self._closed:
            return
        if not self._idle():
            self._pending = True
            return
        self._pending = False
        self.cancel()
        with contextlib.suppress(RuntimeError):  # no running loop (a synchronous caller): nothing to warm
            self._task = asyncio.get_running_loop().create_task(self._warm())

    def idle_again(self) -> None:
        """A turn or a greeting ended: a change that came meanwhile is read ahead now."""
        if self._pending:
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
            if not self._idle():  # the robot began to speak meanwhile (a greeting): after it
                self._pending = True
                return
            messages: list[Message] = [{"role": "system", "content": self._role_prompt()},
                                       {"role": "user", "content": STAND_IN}]
            # One token, and the request ends on its own: the server has released its slot, with
            # the prompt's state, before the next request comes (one closed at its first token
            # may still hold it then, and that request goes to the other, empty slot).
            async with contextlib.aclosing(self._llm.stream(messages, max_tokens=1)) as deltas:
                async for _ in deltas:
                    pass
            self.warmed += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a cold prompt only costs the next reply time
            log.debug("warming the reply prompt failed: %s", exc)
