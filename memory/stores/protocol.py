"""The store interface the dual-store memory needs: SQLite (``sqlite_store.py``, one kiosk,
the default) and PostgreSQL (``pg_store.py``, a fleet of kiosks sharing visitors) implement
it, and ``tests/memory/test_store_contract.py`` runs one suite against both. Every write is
durable when its coroutine returns.
"""

from __future__ import annotations

from typing import Protocol

from memory.core.base import Remark
from memory.core.records import (ForgetReport, RolePromptVersion, StoredRemark, SummaryVersion, UserDump, UserState,
                                 VisitorRecord)


class UserGone(LookupError):
    """The user this write is for was deleted meanwhile (``robot memory forget`` from another
    process): the memory starts that user afresh rather than failing every later turn."""


class SummaryConflict(RuntimeError):
    """``commit_summary`` was given a predecessor that is no longer the user's current summary:
    another robot (or ``robot memory rollback``) committed one meanwhile. Optimistic
    versioning: the newer summary is never overwritten; the memory reloads and folds again."""


class StoreUnavailable(ConnectionError):
    """The store cannot be reached now (a database server down or restarting). The memory
    keeps the turns in RAM and writes them when it comes back."""


class MemoryStore(Protocol):
    async def open_user(self, name: str, recent_absorbed: int = 0, now: float = 0.0) -> UserState:
        """Load (or create, stamped ``now``) a user's memory; the ``recent_absorbed`` newest
        absorbed turns come too (the swin strategy shows them as context)."""
        ...

    async def start_session(self, user_id: int, started: float) -> int: ...

    async def end_session(self, session_id: int, ended: float) -> None: ...

    async def add_turn(self, user_id: int, session_id: int | None, turn: Remark) -> StoredRemark:
        """Store one utterance; committed (crash-safe) on return. Every write for a user
        raises ``UserGone`` when that user no longer exists."""
        ...

    async def commit_summary(
        self, user_id: int, text: str, strategy: str, absorbed: list[int], predecessor_id: int | None,
        persona_prompt: str, role_prompt: str, created: float,
    ) -> tuple[SummaryVersion, RolePromptVersion]:
        """The swap, in one transaction: the new summary version, the turns it absorbed,
        the new role prompt, and the user's pointer to its current summary. Raises
        ``SummaryConflict`` when ``predecessor_id`` is no longer the current summary."""
        ...

    async def add_role_prompt(
        self, user_id: int, persona_prompt: str, summary_id: int | None, text: str, reason: str, created: float,
    ) -> RolePromptVersion: ...

    async def save_profile(self, user_id: int, data: dict[str, list[str]], updated: float) -> None:
        """Replace the user's visitor profile (slot -> values)."""
        ...

    async def forget_user(self, name: str) -> ForgetReport: ...

    async def has_user(self, name: str) -> bool: ...

    async def visitors(self) -> list[VisitorRecord]:
        """Every user with when they were first and last seen (retention, ``memory list``)."""
        ...

    async def close(self) -> None: ...

    async def turns(self, user_id: int) -> list[StoredRemark]:
        """Every turn of the user, oldest first (the archive that retrieval searches)."""
        ...


class AdminStore(MemoryStore, Protocol):
    """A store as the operator's tools see it (``memory/admin.py``): every record, and the
    whole of a user to copy between stores. Both stores implement it."""

    async def connect(self) -> None: ...

    async def user_id(self, name: str) -> int | None: ...

    async def user_names(self) -> list[str]: ...

    async def load_user(self, name: str, now: float, recent_absorbed: int = 0) -> UserState: ...

    async def summaries(self, user_id: int) -> list[SummaryVersion]: ...

    async def current_summary(self, user_id: int) -> SummaryVersion | None: ...

    async def chain(self, summary: SummaryVersion | None) -> list[SummaryVersion]: ...

    async def role_prompts(self, user_id: int) -> list[RolePromptVersion]: ...

    async def latest_role_prompt(self, user_id: int) -> RolePromptVersion | None: ...

    async def set_current_summary(self, user_id: int, summary_id: int | None, persona_prompt: str,
                                  role_prompt: str, created: float) -> RolePromptVersion: ...

    async def dump_user(self, name: str) -> UserDump | None: ...

    async def load_dump(self, dump: UserDump) -> None:
        """Copy a user in (ids are the store's own); ``ValueError`` if the name is taken."""
        ...
