"""Prompt assembly under the token budget: role prompt + current-prompt history + utterance.

If the history outgrew the budget (the summarizer is failing), the oldest turns are left
out of that prompt only: they stay stored and pending the next summary. The budget also
says when the pending history is big enough to summarize, and how long a summary may be.
"""

from __future__ import annotations

import logging

from memory.core.base import Message
from memory.core.records import StoredRemark, turn_content
from memory.core.tokens import MESSAGE_OVERHEAD, TokenCounter, count_message_tokens, count_tokens
from prompts import load_prompt

log = logging.getLogger(__name__)

REPLY_RESERVE_TOKENS = 100  # room kept in the budget for the new utterance
_told_heuristic = False


class PromptBudget:
    """``counter``: the reply model's own tokens (the embedded server's ``/tokenize``); None:
    characters / 4, OpenAI's rule of thumb for English (said once in the log)."""

    def __init__(self, token_budget: int, counter: TokenCounter | None = None) -> None:
        self.token_budget = token_budget
        self._counter = counter
        global _told_heuristic
        if counter is None and not _told_heuristic:  # once per process, not once per visitor
            _told_heuristic = True
            log.info("reply prompts sized as characters / 4: no tokenizer of the reply model at hand")
        # The summary may use a third of the budget; the rest is persona, history, utterance.
        self.summary_max_tokens = max(60, token_budget // 3)
        self.trimmed_prompts = 0  # prompts that had to leave old pending turns out (summarizer down)
        self._warned: tuple[str, int] | None = None

    async def tokens(self, messages: list[Message]) -> int:
        if self._counter is None:
            return count_message_tokens(messages)
        return sum([await self._counter(m["content"]) + MESSAGE_OVERHEAD for m in messages])

    async def messages(self, role_prompt: str, history: list[StoredRemark], user_text: str,
                       notes: str = "") -> list[Message]:
        """``notes`` (profile lines, retrieved exchanges) ride on the new utterance: after the
        role prompt and the history, which stay a prefix the reply server has cached."""
        messages, dropped = await self._fit(role_prompt, history, user_text, notes)
        if dropped:
            self.trimmed_prompts += 1
            key = (role_prompt, len(history))
            if key != self._warned:  # once per state of the memory, not per reply
                self._warned = key
                log.warning("prompt over the %d-token budget: %d oldest unsummarized turns left out of this "
                            "prompt (kept in the store; the next summary folds them)", self.token_budget, dropped)
        return messages

    async def prefix(self, role_prompt: str, history: list[StoredRemark]) -> list[Message]:
        """What the next reply's request begins with, before the customer's words: the role
        prompt and the history it keeps (read ahead by the reply server: robot/reply/prompt_warmer.py).
        Neither counted nor warned about: it is no prompt sent as a reply's. (Over the budget
        the reply's own words may leave one more turn out; the window then moves each turn,
        and little of it is the server's to reuse anyway.)"""
        messages, _ = await self._fit(role_prompt, history, "", "")
        return messages[:-1]

    async def _fit(self, role_prompt: str, history: list[StoredRemark], user_text: str,
                   notes: str) -> tuple[list[Message], int]:
        """The messages under the budget, and how many of the oldest turns it left out."""
        system: Message = {"role": "system", "content": role_prompt}
        turns = [{"role": t.role, "content": turn_content(t)} for t in history]
        new = {"role": "user", "content": with_notes(user_text, notes)}
        fixed = await self.tokens([system, new])
        costs = [await self.tokens([t]) for t in turns]  # a counter caches each turn's count
        dropped = 0
        while turns and fixed + sum(costs) > self.token_budget:
            turns.pop(0)
            costs.pop(0)
            dropped += 1
        return [system, *turns, new], dropped

    @staticmethod
    def history_tokens(history: list[StoredRemark]) -> int:
        return sum(count_tokens(turn_content(t)) + MESSAGE_OVERHEAD for t in history)

    def summary_trigger(self, role_prompt: str, update_after_tokens: int | None) -> int:
        """History size that starts a summary: the persona's ``update_after_tokens``, and in
        any case 60% of the room the budget leaves the history (a backstop that keeps the
        prompt under budget while the summary is being made)."""
        room = self.token_budget - count_tokens(role_prompt) - MESSAGE_OVERHEAD - REPLY_RESERVE_TOKENS
        backstop = max(50, int(0.6 * room))
        return min(update_after_tokens or backstop, backstop)


def with_notes(user_text: str, notes: str) -> str:
    """The utterance as the reply LLM gets it: with this reply's notes, when there are any."""
    if not notes.strip():
        return user_text
    return load_prompt("reply_notes").format(utterance=user_text, notes=notes.strip()).strip()
