"""What one reply is given: the role prompt, the current-prompt history and the customer's
words, with this reply's notes beside them, under the token budget.

The notes are the shop's entries found for the utterance (``knowledge.py``, given by the
caller), the archived exchanges that match it (``archive.py``: what the summaries absorbed,
found again by their words), both within ``retrieval_tokens``, and the visitor profile's lines
when the customer asks about what was said ("remind me ..."). They ride on
the newest utterance, not in the role prompt: a system message that changed every turn cost
about a second of first token per reply on two cores (the server's prompt cache could not
reuse it).
"""

from __future__ import annotations

import re
from typing import AbstractSet, Iterable, Sequence

from memory.core.base import Message
from memory.core.records import StoredRemark
from memory.core.settings import SpeakerLabels
from memory.core.tokens import TokenCounter
from memory.core.words import words_pattern
from memory.recall.archive import ArchiveIndex
from memory.recall.prompt_budget import PromptBudget
from prompts import load_word_list

RECALL = words_pattern(load_word_list("recall_words")) or re.compile(r"(?!)")  # "remind me", "so far" ...
RECAP = words_pattern(load_word_list("recap_words")) or re.compile(r"(?!)")  # "remind me", "the plan" ...


class ReplyPrompt:
    def __init__(self, labels: SpeakerLabels, *, token_budget: int, retrieval_tokens: int, min_score: float,
                 count_tokens: TokenCounter | None = None) -> None:
        self.budget = PromptBudget(token_budget, count_tokens)  # the same model answers: its tokens
        self.archive = ArchiveIndex(labels, min_score, count_tokens)
        self.retrieval_tokens = retrieval_tokens  # 0: no retrieval, nothing indexed

    async def index(self, archived: Sequence[StoredRemark]) -> None:
        """Index what the summaries absorbed (every stored turn not in the current history)."""
        if self.retrieval_tokens:
            await self.archive.replace(archived)

    async def absorbed(self, turns: Iterable[StoredRemark]) -> None:
        """A summary absorbed these turns: searchable from the next reply on."""
        if self.retrieval_tokens:
            await self.archive.add(turns)

    async def notes(self, user_text: str, shown: AbstractSet[int], profile_text: str,
                    retrieval_tokens: int | None = None, knowledge: str = "") -> str:
        """This reply's notes: the shop's ``knowledge`` lines, the archived exchanges that match
        the utterance (those not ``shown`` in the prompt already) in the room the knowledge
        left, then the profile's lines when the customer asks about what was said;
        ``retrieval_tokens`` overrides the setting (a bench compares)."""
        room = self.retrieval_tokens if retrieval_tokens is None else retrieval_tokens
        # this order: the embedded model recapped best with the profile last (prompts/reply_notes.txt)
        parts = [knowledge]
        if knowledge:
            room = max(0, room - await self.archive.tokens(knowledge))
        if room:
            parts.append(self.archive.render(await self.archive.search(user_text, room, shown)))
        if RECALL.search(user_text):
            parts.append(profile_text)
        return "\n\n".join(p for p in parts if p)

    async def messages(self, role_prompt: str, history: list[StoredRemark], user_text: str,
                       notes: str) -> list[Message]:
        return await self.budget.messages(role_prompt, history, user_text, notes)

    async def prefix(self, role_prompt: str, history: list[StoredRemark]) -> list[Message]:
        """The messages every next reply begins with (``PromptBudget.prefix``)."""
        return await self.budget.prefix(role_prompt, history)


def asks_for_recap(user_text: str) -> bool:
    """"Can you remind me what we planned so far?": the profile is said back."""
    return RECAP.search(user_text) is not None
