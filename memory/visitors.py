"""One memory per visitor, over one store: how a kiosk keeps strangers apart.

A visitor is a user of the store. A known visitor has the id a card reader, a
face-recognition module or an operator gave (``session/start``, ``robot chat --visitor``);
an anonymous one gets a fresh name (``anonymous-...``) for one session. The robot talks to
one visitor at a time: ``begin`` opens that visitor's memory (a returning visitor gets
their summary back in the role prompt), ``end`` detaches it at once (the next visitor's
prompt holds nothing of it) and closes it in the background: the history not yet
summarized is folded into the visitor's summary (a forced summary: nothing said is lost),
then the records that are not to be kept are deleted. Retention is enforced here too:
anonymous visitors are kept ``anonymous_days`` (0: not past their session), known ones
``known_days`` after their last visit.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from memory.core.base import DialogueMemory, Message, Remark
from memory.core.clock import Clock
from memory.recall.profile import ProfileNews
from memory.stores.protocol import MemoryStore, StoreUnavailable

log = logging.getLogger(__name__)

ANONYMOUS = "anonymous-"
DAY_S = 86400.0
CLOSE_TIMEOUT_S = 60.0  # the longest the robot's exit waits for a forced summary
RECENT_VISITORS = 20  # past visitors whose words an operator's page may still show
GONE_CHECK_S = 0.5  # the most one check of a past visitor waits for the store

# Opens (and loads) the memory of the visitor with this store name, under this persona prompt.
OpenVisitor = Callable[[str, str], Awaitable[DialogueMemory]]


@dataclass(frozen=True)
class Retention:
    known_days: float = 90.0
    anonymous_days: float = 0.0

    def keeps_after_session(self, name: str) -> bool:
        return (self.anonymous_days if is_anonymous(name) else self.known_days) > 0

    def expired(self, name: str, last_seen: float, now: float) -> bool:
        days = self.anonymous_days if is_anonymous(name) else self.known_days
        return now - last_seen >= days * DAY_S


def is_anonymous(name: str) -> bool:
    return name.startswith(ANONYMOUS)


class VisitorMemory:
    """``DialogueMemory`` for a stream of visitors. With no visitor the role prompt is the
    bare persona's; a turn with no visitor begins an anonymous one."""

    def __init__(self, open_visitor: OpenVisitor, persona_prompt: str, clock: Clock,
                 store: MemoryStore | None = None, retention: Retention | None = None) -> None:
        self._open_visitor = open_visitor
        self._persona = persona_prompt
        self.clock = clock
        self._store = store  # None: a memory with nothing on disk (strategy "full")
        self.retention = retention or Retention()
        self.current: DialogueMemory | None = None
        self.visitor: str | None = None  # the store name of the visitor now talking
        self._closing: dict[str, asyncio.Task[None]] = {}
        self._opening: str | None = None  # a visitor being opened: not yet `visitor`, not to be swept
        self._switch = asyncio.Lock()
        self._hurry = asyncio.Event()  # the exit no longer waits for forced summaries
        # visitors of this run kept in the store: a forget from another process is noticed for them
        self._recent: deque[str] = deque(maxlen=RECENT_VISITORS)

    # --- visitors ------------------------------------------------------------------------

    async def begin(self, visitor_id: str | None = None) -> str:
        """Open a visitor's memory (ending the current visitor's session first); the name."""
        async with self._switch:
            await self._end_locked()
            name = visitor_id or self._anonymous_name()
            if name in self._closing:  # the same visitor again, before their last close ended
                await asyncio.shield(self._closing[name])
            self._opening = name  # the last visitor's close sweeps meanwhile: an anonymous new one is "expired"
            try:
                memory = await self._open_visitor(name, self._persona)
                await memory.start()
            finally:
                self._opening = None
            self.current, self.visitor = memory, name
            return name

    async def end(self) -> str | None:
        """Detach the current visitor now; their memory is closed in the background."""
        async with self._switch:
            return await self._end_locked()

    async def _end_locked(self) -> str | None:
        memory, name = self.current, self.visitor
        self.current = self.visitor = None
        if memory is None or name is None:
            return None
        task = asyncio.create_task(self._close(memory, name), name=f"close-visitor-{name}")
        self._closing[name] = task
        task.add_done_callback(lambda _t: self._closing.pop(name, None))
        if self.retention.keeps_after_session(name) and name not in self._recent:
            self._recent.append(name)
        return name

    async def _close(self, memory: DialogueMemory, name: str) -> None:
        keep = self.retention.keeps_after_session(name)
        try:
            try:
                if keep and hasattr(memory, "flush"):
                    await memory.flush()  # the forced summary
            finally:
                # also when the exit cancels the summary: its timer and job stop (at once when hurried)
                await memory.aclose(hurried=self._hurry.is_set())
            if not keep and self._store is not None:
                log.info("visitor %s: %s", name, await self._store.forget_user(name))
            await self.sweep()  # retention runs out while the robot runs, too
        except Exception:  # noqa: BLE001 - the next visitor must not pay for it; raw turns stay stored
            log.exception("closing the memory of visitor %s failed", name)

    def _anonymous_name(self) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.clock.now()))
        return f"{ANONYMOUS}{stamp}-{uuid.uuid4().hex[:6]}"

    async def sweep(self) -> list[str]:
        """Delete the visitors whose retention has run out; their names."""
        if self._store is None:
            return []
        now, gone = self.clock.now(), []
        for v in await self._store.visitors():
            busy = v.name in (self.visitor, self._opening) or v.name in self._closing
            if not busy and self.retention.expired(v.name, v.last_seen, now):
                await self._store.forget_user(v.name)
                gone.append(v.name)
        if gone:
            log.info("retention: deleted the records of %d visitors", len(gone))
        return gone

    async def forget_user(self, user: str) -> str:
        """Delete every record of ``user``; the current visitor's memory starts afresh."""
        if user == self.visitor and self.current is not None and hasattr(self.current, "forget_user"):
            return str(await self.current.forget_user(user))
        if user in self._closing:
            await asyncio.shield(self._closing[user])  # its forced summary must not write back after
        if self._store is None:
            return f"no memory stored for user {user!r}; nothing deleted"
        return str(await self._store.forget_user(user))

    async def refresh(self) -> bool:
        """Before a turn: the current visitor may have been forgotten from another process;
        True when they were (their memory started afresh)."""
        if self.current is not None and hasattr(self.current, "restart_if_gone"):
            return bool(await self.current.restart_if_gone())
        return False

    async def forgotten_elsewhere(self) -> list[str]:
        """Visitors of this run that another process (``robot memory forget``) deleted since
        the last call: the current one (whose memory starts afresh) and recent past ones. A
        store that is away counts as nothing forgotten."""
        gone = [self.visitor] if self.visitor is not None and await self.refresh() else []
        if self._store is None:
            return gone
        # one still closing counts too: its forced summary then finds the user gone and writes nothing
        for name in [n for n in self._recent if n != self.visitor]:
            try:
                if not await asyncio.wait_for(self._store.has_user(name), GONE_CHECK_S):
                    gone.append(name)
                    self._recent.remove(name)
            except (StoreUnavailable, asyncio.TimeoutError):
                break
        return gone

    # --- DialogueMemory ------------------------------------------------------------------

    async def _now_talking(self) -> DialogueMemory:
        if self.current is None:
            await self.begin(None)
        assert self.current is not None
        return self.current

    async def build_messages(self, user_text: str, knowledge: str = "") -> list[Message]:
        memory = await self._now_talking()
        return await (memory.build_messages(user_text, knowledge=knowledge) if knowledge  # type: ignore[call-arg]
                      else memory.build_messages(user_text))

    async def prompt_prefix(self) -> list[Message]:
        """What the next reply's request begins with (the visitor's memory's role prompt and
        history); with no visitor talking, the bare persona's: none is opened for it."""
        if self.current is None:
            return [{"role": "system", "content": self._persona}]
        return await self.current.prompt_prefix()

    def recap(self, user_text: str) -> str:
        """The visitor's profile to say back, when they ask for a recap (``DualStoreMemory.recap``)."""
        recap = getattr(self.current, "recap", None)
        return recap(user_text) if recap is not None else ""

    def news(self, user_text: str) -> ProfileNews:
        """What these words give the visitor's profile (``DualStoreMemory.news``)."""
        news = getattr(self.current, "news", None)
        return news(user_text) if news is not None else ProfileNews()

    def asked(self, slot: str) -> None:
        """The robot asked ``slot``'s question (``DualStoreMemory.asked``)."""
        asked = getattr(self.current, "asked", None)
        if asked is not None:
            asked(slot)

    def preview(self, user_text: str) -> dict[str, list[str]]:
        """The visitor's profile as these words would leave it (``DualStoreMemory.preview``)."""
        preview = getattr(self.current, "preview", None)
        return preview(user_text) if preview is not None else {}

    @property
    def consultation(self) -> dict[str, list[str]]:
        """The current visitor's plan and open questions (``DualStoreMemory.consultation``)."""
        return dict(getattr(self.current, "consultation", None) or {"plan": [], "open": []})

    async def save_consultation(self, plan: list[str] | None = None, open_questions: list[str] | None = None) -> None:
        save = getattr(await self._now_talking(), "save_consultation", None)
        if save is not None:
            await save(plan, open_questions)

    async def record(self, turn: Remark) -> None:
        if self.current is None and turn.role == "assistant":
            return  # said to nobody in particular (a greeting before anyone came): no one's memory
        await (await self._now_talking()).record(turn)

    async def set_persona_prompt(self, prompt: str) -> None:
        """The current visitor keeps their memory under the new persona; the next starts clean."""
        self._persona = prompt
        if self.current is not None:
            await self.current.set_persona_prompt(prompt)

    async def start(self) -> None:
        await self.sweep()  # what a crash or a stop left past its retention

    async def aclose(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """End the session and wait for every close, its forced summary included, for
        ``timeout_s`` at most: a summary still running then is cancelled, and its turns stay
        raw in the store (folded at that visitor's next session), so a dead LLM server never
        holds the robot's exit."""
        await self.end()
        await self._closes_done(timeout_s)
        if self._store is not None:
            await self._store.close()

    def hurry(self) -> None:
        """Stop waiting for the forced summaries (an operator's second Ctrl-C): those still
        running are cancelled as at ``aclose``'s timeout, and their turns stay raw."""
        self._hurry.set()

    # --- what the console, the simulator and tests read ------------------------------------

    @property
    def role_prompt(self) -> str:
        return getattr(self.current, "role_prompt", self._persona) if self.current else self._persona

    @property
    def persona_prompt(self) -> str:
        """The persona's instructions, the same for every visitor."""
        return self._persona

    @property
    def profile(self) -> dict[str, list[str]]:
        """The current visitor's profile (slot -> values; {} between visitors). The reply read it to
        rank knowledge by the visitor's places, and found nothing here before: the visitor's
        memory only had it."""
        return dict(getattr(self.current, "profile", None) or {})

    @property
    def role_prompt_version(self) -> int:
        return getattr(self.current, "role_prompt_version", 0) if self.current else 0

    async def flush(self) -> bool:
        return await self.current.flush() if self.current is not None and hasattr(self.current, "flush") else True

    async def wait_idle(self) -> None:
        if self.current is not None and hasattr(self.current, "wait_idle"):
            await self.current.wait_idle()
        await self._closes_done()

    async def _closes_done(self, timeout_s: float | None = None) -> None:
        """Until every visitor's close has ended; past ``timeout_s`` the rest are cancelled."""
        closing = list(self._closing.values())
        if not closing:
            return
        closed = asyncio.ensure_future(asyncio.wait(closing))
        hurried = asyncio.ensure_future(self._hurry.wait())
        await asyncio.wait([closed, hurried], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        hurried.cancel()
        if not all(t.done() for t in closing):
            # Out of time: each close still running stops its summary at once, not after the
            # memory's own close timeout (5 s more, at every exit with an open visit).
            self._hurry.set()
        for task in (t for t in closing if not t.done()):
            why = "the exit was hurried" if self._hurry.is_set() else f"it did not finish in {timeout_s:.0f} s"
            log.warning("the forced summary of %s was stopped (%s): its turns stay unsummarized",
                        task.get_name().removeprefix("close-visitor-"), why)
            task.cancel()
        await asyncio.gather(*closing, return_exceptions=True)

    def __getattr__(self, name: str) -> Any:
        # The rest (summary, history, stats...) is the current visitor's.
        current = self.__dict__.get("current")
        if current is None:
            raise AttributeError(f"no visitor is talking: {name!r} is not available")
        return getattr(current, name)
