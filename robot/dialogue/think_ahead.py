"""Thinking at the customer's pause: once speech to text has the words said before it, the
turn's prompt is built and the reply's LLM request started (``robot/reply/preemptive.py``),
while the endpointer still waits out its silence. Nothing is spoken or stored until the turn
ends and takes that request; a customer who goes on makes it out of date.

A visitor's first words open their session here already, as their turn would, so the
memory is loaded and its role prompt read by the LLM while the endpointer waits.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Protocol

from memory.core.base import Message
from robot.reply.preemptive import PreemptiveLLM
from speech.types import Transcript

log = logging.getLogger(__name__)


class EarlySessions(Protocol):
    @property
    def open(self) -> bool: ...
    async def open_early(self) -> None: ...


class ThinkAhead:
    def __init__(self, preemptive: PreemptiveLLM, *, enabled: bool, busy: Callable[[], bool],
                 prompt: Callable[[str], Awaitable[list[Message] | None]],
                 sessions: Callable[[], EarlySessions | None] = lambda: None) -> None:
        self.preemptive, self.enabled = preemptive, enabled
        self._busy = busy  # a turn is being answered: what it started wins
        self._prompt = prompt  # the turn's prompt for these words (None: the robot speaks first itself)
        self._sessions = sessions  # the visitor sessions, if any
        self._task: asyncio.Task[None] | None = None

    def at_pause(self, transcript: asyncio.Future[Transcript]) -> None:
        """The customer paused and speech to text started on what they said."""
        if not self.enabled:
            return
        if self._task is not None:
            self._task.cancel()
        self.preemptive.cancel()
        self._task = asyncio.create_task(self._start(transcript))

    def resumed(self) -> None:
        """The customer went on after the pause: what was started on it is out of date."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.preemptive.cancel()

    async def _start(self, transcript: asyncio.Future[Transcript]) -> None:
        try:
            text = (await asyncio.shield(transcript)).text.strip()
        except Exception:  # noqa: BLE001 - the turn transcribes again and reports it
            return
        if not text or self._busy():
            return
        if (sessions := self._sessions()) is not None and not sessions.open:
            # Shielded: a customer who goes on cancels the early reply, not a half-opened session.
            try:
                await asyncio.shield(sessions.open_early())
            except Exception:  # noqa: BLE001 - the turn opens it again and reports what fails
                log.warning("opening the session at the customer's pause failed", exc_info=True)
                return
            if self._busy():
                return
        messages = await self._prompt(text)
        if messages is not None and not self._busy():  # the turn may have ended meanwhile and built its own
            self.preemptive.start(messages)
