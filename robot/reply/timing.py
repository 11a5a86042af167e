"""How long a customer may wait in silence for a reply: the deadlines of ``robot.reply.stream.Reply``.

A kiosk customer must hear something within seconds whatever the LLM does (stalls, slow
retries, a server that accepts the request and never answers). ``timed()`` runs the LLM's
sentence stream in its own task and waits for it with deadlines: after ``filler_after_s``
without a first sentence it hands out the persona's filler ("Let me think."), and after
``give_up_after_s`` without one it stops the request and raises ``TimeoutError``, so that
the reply says its apology. The LLM client's retries run inside that task, so they happen
only inside the deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import AsyncIterator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplyDeadlines:
    """Seconds from the start of a reply (None: no limit). ``give_up_after_s`` also bounds
    the wait for each later sentence, counted from the one before."""

    filler_after_s: float | None = None
    give_up_after_s: float | None = None


_END = object()


async def _pump(source: AsyncIterator[str], queue: asyncio.Queue[object]) -> None:
    try:
        async with contextlib.aclosing(source) as items:  # type: ignore[type-var]
            async for item in items:
                await queue.put(item)
        await queue.put(_END)
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, who says the apology
        await queue.put(exc)


async def timed(source: AsyncIterator[str], deadlines: ReplyDeadlines,
                filler: str | None) -> AsyncIterator[tuple[str, bool]]:
    """``(sentence, is_filler)`` pairs from ``source`` within ``deadlines``. Leaving the
    iteration early (sentence cap, stop) cancels the source at once."""
    queue: asyncio.Queue[object] = asyncio.Queue()
    producer = asyncio.create_task(_pump(source, queue), name="reply-llm")
    give_up = deadlines.give_up_after_s
    started = time.monotonic()
    # monotonic deadlines (None: none): the filler's, once per reply; the give-up's, per sentence
    filler_at = None if not filler or deadlines.filler_after_s is None else started + deadlines.filler_after_s
    give_up_at = None if give_up is None else started + give_up
    try:
        while True:
            is_filler_wait = filler_at is not None and (give_up_at is None or filler_at < give_up_at)
            deadline = filler_at if is_filler_wait else give_up_at
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                if is_filler_wait:
                    filler_at = None  # once per reply
                    log.info("no sentence from the LLM after %gs: saying the filler", deadlines.filler_after_s)
                    yield filler, True  # type: ignore[misc]
                    continue
                raise TimeoutError(f"no sentence from the LLM within {give_up:g}s; request abandoned") from None
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            filler_at = None  # the LLM spoke first: no filler
            yield item, False  # type: ignore[misc]
            if give_up is not None:  # the next sentence gets its own give-up deadline
                give_up_at = time.monotonic() + give_up
    finally:
        producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)
