"""The store interface the dual-store memory needs; SQLite implements it (sqlite_store.py).

Kept small and async so that a shared PostgreSQL store can come later without touching
the memory logic. Every write is durable when its coroutine returns.
"""

from __future__ import annotations

from typing import Protocol

from memory.base import Remark
from memory.records import ForgetReport, RolePromptVersion, StoredRemark, SummaryVersion, UserState, VisitorRecord


class UserGone(LookupError):
    """The user this write is for was deleted meanwhile (``robot memory forget`` from another
    process): the memory starts that user afresh rather than failing every later turn."""


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
        the new role prompt, and the user's pointer to its current summary."""
        ...

    async def add_role_prompt(
        self, user_id: int, persona_prompt: str, summary_id: int | None, text: str, reason: str, created: float,
    ) -> RolePromptVersion: ...

    async def forget_user(self, name: str) -> ForgetReport: ...

    async def has_user(self, name: str) -> bool: ...

    async def visitors(self) -> list[VisitorRecord]:
        """Every user with when they were first and last seen (retention, ``memory list``)."""
        ...

    async def close(self) -> None: ...
