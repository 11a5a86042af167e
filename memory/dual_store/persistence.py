"""One user's memory in the store, mirrored in RAM: every change is committed to the store
first, then mirrored (``mirror.py``).

- a user deleted under the running memory (``robot memory forget`` from another process) is
  started afresh at the next write, instead of every later turn failing;
- a store that goes away (a database server down) does not stop the conversation: turns
  wait in RAM in order (``memory/stores/unwritten.py``) and are written when it is back;
- a newer summary another robot committed is loaded with the history it leaves.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Sequence

from memory.core.base import Remark
from memory.core.clock import Clock
from memory.core.records import StoredRemark
from memory.dual_store.mirror import UserMirror
from memory.recall.profile import ProfileSlot
from memory.stores.protocol import MemoryStore, StoreUnavailable, UserGone
from memory.stores.unwritten import UnwrittenTurns

log = logging.getLogger(__name__)
UNWRITTEN_WAIT_S = 2.0  # at close, how long turns kept in RAM may wait for the store to take them

# Called (synchronously; keep it quick) after each role-prompt rewrite:
# (role-prompt version, role prompt text, summary text or "" when there is none yet).
OnUpdate = Callable[[int, str, str], None]
# Called (synchronously) when the store goes away: one line for the operator.
OnStoreError = Callable[[str], None]

GONE_CHECK_S = 0.5  # the most a reply waits to learn whether its user was forgotten meanwhile


class Persistence:
    """The user's rows in ``store`` and their mirror ``state``. ``lock`` is held by every
    role-prompt writer (a summary's swap, a persona, a forget); ``generation`` grows when the
    memory starts afresh, so a summary begun before may not write back."""

    def __init__(self, *, user: str, store: MemoryStore, state: UserMirror, clock: Clock, recent_turns: int,
                 slots: Sequence[ProfileSlot], on_loaded: Callable[[list[StoredRemark]], Awaitable[None]] | None,
                 on_drained: Callable[[], None], on_update: OnUpdate | None = None,
                 on_store_error: OnStoreError | None = None) -> None:
        self.user, self.store, self.state, self.clock = user, store, state, clock
        self._recent_turns = recent_turns  # absorbed turns kept as context (swin)
        self._slots = slots
        self._on_loaded = on_loaded  # (the archived turns): index them for retrieval; None: no retrieval
        self._on_drained = on_drained  # the turns said while the store was away are all written
        self._on_update = on_update
        self.unwritten = UnwrittenTurns(self._write, self._written, on_store_error)
        self.lock = asyncio.Lock()
        self.generation = 0
        self.profile_unsaved = False
        self._profile_task: asyncio.Task[None] | None = None

    # --- loading ------------------------------------------------------------------------

    async def open(self, *, offline_ok: bool = False) -> None:
        """Load the user's memory (create it on first use) and open a session. With
        ``offline_ok``, a store that is away is no error: the memory starts from the bare
        persona, keeps the turns in RAM, and loads the user when the store is back."""
        try:
            await self._open()
        except StoreUnavailable as exc:
            self.state.clear()  # half loaded is not loaded: the next write loads it again
            if not offline_ok:
                raise
            self.unwritten.notice(str(exc))

    async def _open(self) -> None:
        state = self.state
        state.load(await self.store.open_user(self.user, self._recent_turns, self.clock.now()))
        user_id = state.require_user()
        state.session_id = await self.store.start_session(user_id, self.clock.now())
        await self._index()
        current = state.render(None)
        if state.role_prompt is None or state.role_prompt.text != current:
            # First start, another persona, or a rollback done while stopped: a new version.
            state.role_prompt = await self.store.add_role_prompt(
                user_id, state.persona, state.summary_id, current, "start", self.clock.now())
        self.unwritten.reachable()
        log.info("memory of %r: summary v%s, %d turns in the current-prompt history",
                 self.user, state.summary.version if state.summary else 0, len(state.history))

    async def _index(self) -> None:
        """Hand what the summaries absorbed (every stored turn not in the current history) to
        retrieval (none is read when retrieval is off)."""
        if self._on_loaded is None or self.state.user_id is None:
            return
        pending = {t.id for t in self.state.history}
        await self._on_loaded([t for t in await self.store.turns(self.state.user_id) if t.id not in pending])

    async def reopen(self) -> None:
        """Load the user again from the store (after a forget, or opened while it was away)."""
        self.generation += 1  # a summary in progress must not write back into the new memory
        waiting = self.state.unwritten  # kept in RAM: still to be written
        self.state.clear()
        try:
            await self.open()
        finally:  # also when the store is still away: they stay in the prompt
            self.state.history += waiting
            said = [t.text for t in waiting if t.role == "user"]
            if self._slots and any([self.state.profile.update(self._slots, text) for text in said]):
                self.profile_unsaved = True  # (no LLM pass here: these were asked about when said)

    async def reload(self) -> None:
        """Another robot committed a newer summary: take it (and the history it leaves)."""
        state = self.state
        waiting = state.unwritten
        state.load(await self.store.open_user(self.user, self._recent_turns, self.clock.now()))
        state.history += waiting
        await self._index()

    async def start_afresh(self) -> None:
        """The user was deleted from the store under this running memory: begin it anew."""
        log.warning("memory of %r was deleted from the store while in use (robot memory forget?); "
                    "starting it afresh", self.user)
        async with self.lock:
            await self.reopen()
        self.notify()

    async def restart_if_gone(self) -> bool:
        """A forget made by another process is honoured before the next reply is built, not
        at the next write: True when the user had to start afresh."""
        if self.state.user_id is None or len(self.unwritten):
            return False
        try:  # a store that is away must not hold the reply
            if await asyncio.wait_for(self.store.has_user(self.user), GONE_CHECK_S):
                return False
        except (StoreUnavailable, asyncio.TimeoutError):
            return False
        await self.start_afresh()
        return True

    # --- writing ------------------------------------------------------------------------

    async def record(self, turn: Remark) -> bool:
        """Into the store and the history; True when it is durable, False when it waits in
        RAM (in the prompt at once) for a store that is away."""
        state = self.state
        if len(self.unwritten):  # behind the turns already waiting: the store gets them in order
            state.history.append(self.unwritten.hold(turn, state.session_id, "still away"))
            return False
        try:
            stored = await self._write(turn)
        except StoreUnavailable as exc:
            state.history.append(self.unwritten.hold(turn, state.session_id, str(exc)))
            return False
        state.history.append(stored)
        return True

    async def _write(self, turn: Remark) -> StoredRemark:
        if self.state.user_id is None:  # opened while the store was away: load the user first
            await self.reopen()
        try:
            return await self.store.add_turn(self.state.require_user(), self.state.session_id, turn)
        except UserGone:
            await self.start_afresh()
            return await self.store.add_turn(self.state.require_user(), self.state.session_id, turn)

    def _written(self, provisional: StoredRemark, stored: StoredRemark) -> None:
        history = self.state.history
        at = next((i for i, t in enumerate(history) if t is provisional), None)
        if at is not None:
            history[at] = stored
        if not len(self.unwritten):
            self._on_drained()  # the last one: summaries may run again
            self._profile_task = asyncio.get_running_loop().create_task(self.save_profile())  # said while away

    async def save_profile(self) -> None:
        if not self.profile_unsaved or self.state.user_id is None:
            return
        try:
            await self.store.save_profile(self.state.user_id, self.state.profile.to_dict(), self.clock.now())
            self.profile_unsaved = False
        except (StoreUnavailable, UserGone) as exc:  # kept in RAM; saved with the next turn
            log.warning("visitor profile not stored yet (%s)", exc)

    async def set_persona(self, prompt: str) -> None:
        """A new persona: a new role-prompt version over the same summary and history."""
        state = self.state
        async with self.lock:
            state.persona = prompt
            try:
                state.role_prompt = await self.store.add_role_prompt(
                    state.require_user(), prompt, state.summary_id, state.render(None), "persona", self.clock.now())
            except UserGone:
                await self.reopen()  # its first role prompt is the new persona's
        self.notify()

    async def forget(self) -> str:
        """Delete all of the user's data and start it afresh (the caller stopped its summary)."""
        async with self.lock:
            report = await self.store.forget_user(self.user)
            await self.reopen()
        self.notify()
        return str(report)

    async def close(self, owns_store: bool) -> None:
        """Wait a little for the turns kept in RAM (``UNWRITTEN_WAIT_S``); those a store still
        refuses (a full disk) go into its journal for the next start, where it has one (SQLite),
        so a robot stopped by its service manager neither waits for the disk nor loses them. Then
        end the session, and close the store if it is this memory's own."""
        keep = getattr(self.store, "journal", None)
        try:  # a server away (PostgreSQL) holds the close until it is back; a file has its journal
            await asyncio.wait_for(self.unwritten.wait(), UNWRITTEN_WAIT_S if keep is not None else None)
        except asyncio.TimeoutError:
            if keep is not None and len(self.unwritten):
                turns = self.unwritten.take()
                kept = await asyncio.to_thread(keep, self.user, turns)
                log.warning("%d turns the store could not take were kept in its journal: written at the next "
                            "start", kept)
        finally:
            await self.unwritten.aclose()
        if self.state.session_id is not None:
            try:
                await self.store.end_session(self.state.session_id, self.clock.now())
            except StoreUnavailable as exc:
                log.warning("the session's end was not stored (%s)", exc)
        if owns_store:
            await self.store.close()

    def notify(self) -> None:
        """Tell the listener about the role prompt now in force."""
        if self._on_update is None or self.state.role_prompt is None:
            return
        try:
            self._on_update(self.state.role_prompt.version, self.state.role_prompt.text, self.state.summary_text)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the memory
            log.exception("memory on_update callback failed")
