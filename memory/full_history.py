"""The simplest memory: every turn, forever, under the persona prompt.

It is the baseline the dual store is measured against, and the fallback when a
persona turns memory off. It keeps nothing on disk.
"""

from __future__ import annotations

from memory.core.base import Message, Remark


class FullHistoryMemory:
    def __init__(self, persona_prompt: str) -> None:
        self._persona_prompt = persona_prompt
        self.turns: list[Remark] = []

    @property
    def persona_prompt(self) -> str:
        return self._persona_prompt

    @property
    def role_prompt(self) -> str:
        return self._persona_prompt

    async def build_messages(self, user_text: str, knowledge: str = "") -> list[Message]:
        from memory.recall.prompt_budget import with_notes

        messages: list[Message] = [{"role": "system", "content": self._persona_prompt}]
        messages += [{"role": t.role, "content": t.text} for t in self.turns]
        messages.append({"role": "user", "content": with_notes(user_text, knowledge)})
        return messages

    async def prompt_prefix(self) -> list[Message]:
        """What the next reply's request begins with: the role prompt and the history."""
        return (await self.build_messages(""))[:-1]

    async def record(self, turn: Remark) -> None:
        self.turns.append(turn)

    async def forget_user(self, user: str | None = None) -> str:
        """Forget everything said (nothing of it is on disk)."""
        count, self.turns = len(self.turns), []
        return f"forgot {count} turns (kept in memory only)"

    async def set_persona_prompt(self, prompt: str) -> None:
        self._persona_prompt = prompt

    async def start(self) -> None:
        return None

    async def aclose(self, hurried: bool = False) -> None:
        return None
