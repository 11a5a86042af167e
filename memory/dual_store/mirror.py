"""The in-memory mirror of one user's stored memory: what a reply is built from, read
without any I/O. It changes only after the store has committed the same change."""

from __future__ import annotations

from memory.core.records import RolePromptVersion, StoredRemark, SummaryVersion, UserState
from memory.recall.profile import Profile
from memory.summary.summarizer import render_role_prompt


class UserMirror:
    def __init__(self, persona_prompt: str) -> None:
        self.persona = persona_prompt
        self.user_id: int | None = None
        self.session_id: int | None = None
        self.summary: SummaryVersion | None = None
        self.role_prompt: RolePromptVersion | None = None
        self.history: list[StoredRemark] = []  # the current-prompt history
        self.recent: list[StoredRemark] = []  # the newest absorbed turns (swin context)
        self.profile = Profile()  # the visitor profile, in each reply's notes

    def load(self, state: UserState) -> None:
        self.user_id, self.summary, self.role_prompt = state.user_id, state.summary, state.role_prompt
        self.history, self.recent = state.history, state.recent_absorbed
        self.profile = Profile.from_dict(state.profile)

    @property
    def unwritten(self) -> list[StoredRemark]:
        """Turns kept in RAM while the store was away (provisional negative ids)."""
        return [t for t in self.history if t.id < 0]

    def clear(self) -> None:
        self.user_id = self.session_id = None
        self.summary, self.role_prompt, self.history, self.recent = None, None, [], []
        self.profile = Profile()

    def absorb(self, summary: SummaryVersion, prompt: RolePromptVersion, folded: list[StoredRemark],
               keep_recent: int) -> None:
        """Swap in a committed summary. Turns recorded since the plan was made are not absorbed."""
        absorbed = set(summary.absorbed)
        self.history = [t for t in self.history if t.id not in absorbed]
        if keep_recent:
            self.recent = (self.recent + folded)[-keep_recent:]
        self.summary, self.role_prompt = summary, prompt

    def render(self, summary_text: str | None = None) -> str:
        """The role prompt for the current persona and ``summary_text`` (default: the current
        summary). The visitor profile is not in it: it changes with what the customer says,
        and rides on each reply's newest utterance (``prompt_budget.with_notes``), after the
        prefix the reply server has cached."""
        return render_role_prompt(self.persona, self.summary_text if summary_text is None else summary_text)

    @property
    def summary_text(self) -> str:
        return self.summary.text if self.summary else ""

    @property
    def summary_id(self) -> int | None:
        return self.summary.id if self.summary else None

    def require_user(self) -> int:
        if self.user_id is None:
            raise RuntimeError("memory is not open: await open() (or use create_memory) first")
        return self.user_id
