"""What the store holds, as plain typed records (no SQL here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping


@dataclass(frozen=True)
class StoredRemark:
    """One remark as stored. ``id`` is the store's durable id; ``loop_turn_id`` is the
    dialogue loop's exchange id (a customer utterance and its reply share one)."""

    id: int
    role: Literal["user", "assistant"]
    text: str
    ts: float
    loop_turn_id: str | None = None
    speaker: str | None = None
    session_id: int | None = None


def turn_content(turn: StoredRemark) -> str:
    """A turn as a chat message's content: a known speaker name goes in front (replayed corpora)."""
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


@dataclass(frozen=True)
class SummaryVersion:
    """One version of the summarized history. ``absorbed`` lists the turn ids folded in by
    this version (its predecessors hold the earlier ones)."""

    id: int
    version: int
    text: str
    created: float
    strategy: str
    predecessor_id: int | None
    absorbed: tuple[int, ...] = ()


@dataclass(frozen=True)
class RolePromptVersion:
    """One version of the role prompt, as the reply LLM sees it."""

    id: int
    version: int
    text: str
    created: float
    persona_prompt: str
    summary_id: int | None
    reason: Literal["start", "summary", "persona", "rollback"]


@dataclass
class UserState:
    """A user's memory as loaded at start: enough to resume exactly where it stopped."""

    user_id: int
    name: str
    summary: SummaryVersion | None
    history: list[StoredRemark]  # turns no summary of the current chain has absorbed
    recent_absorbed: list[StoredRemark] = field(default_factory=list)  # newest absorbed turns (swin context)
    role_prompt: RolePromptVersion | None = None
    profile: dict[str, list[str]] = field(default_factory=dict)  # the visitor profile (memory/recall/profile.py)


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget`` deleted."""

    user: str
    turns: int = 0
    summaries: int = 0
    role_prompts: int = 0
    sessions: int = 0
    wal: str = ""  # PostgreSQL: whether its write-ahead log may still hold the words (pg_store.py)

    def __str__(self) -> str:
        if not any((self.turns, self.summaries, self.role_prompts, self.sessions)):
            return f"no memory stored for user {self.user!r}; nothing deleted"
        return (f"deleted user {self.user!r}: {self.turns} turns, {self.summaries} summary versions, "
                f"{self.role_prompts} role-prompt versions, {self.sessions} sessions") + (f"; {self.wal}" if self.wal else "")


@dataclass(frozen=True)
class VisitorRecord:
    """One visitor (a user of the store) as ``robot memory list`` shows it."""

    name: str
    first_seen: float
    last_seen: float  # the last turn or session end; the creation time when there is none
    turns: int
    summary_version: int  # 0: never summarized


@dataclass(frozen=True)
class UserDump:
    """Everything a store holds of one user, with that store's ids (``robot memory migrate``
    copies it into another store, which gives the records ids of its own)."""

    name: str
    created: float
    current_summary_id: int | None
    sessions: list[tuple[int, float, float | None]]  # (id, started, ended)
    turns: list[StoredRemark]
    summaries: list[SummaryVersion]
    role_prompts: list[RolePromptVersion]
    profile: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> tuple[int, int, int, int]:
        """(sessions, turns, summaries, role prompts): what a copy must match."""
        return len(self.sessions), len(self.turns), len(self.summaries), len(self.role_prompts)


# --- rows (SQLite's sqlite3.Row and PostgreSQL's dict rows alike) into records -----------


def turn_of(r: Mapping[str, Any]) -> StoredRemark:
    return StoredRemark(r["id"], r["role"], r["text"], r["ts"], r["loop_turn_id"], r["speaker"], r["session_id"])


def summary_of(r: Mapping[str, Any], absorbed: tuple[int, ...]) -> SummaryVersion:
    return SummaryVersion(r["id"], r["version"], r["text"], r["created"], r["strategy"], r["predecessor_id"], absorbed)


def role_prompt_of(r: Mapping[str, Any]) -> RolePromptVersion:
    return RolePromptVersion(r["id"], r["version"], r["text"], r["created"], r["persona_prompt"],
                             r["summary_id"], r["reason"])
