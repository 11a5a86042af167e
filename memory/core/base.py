"""The seam between the dialogue loop and memory.

The loop only ever calls ``build_messages()`` before a reply and ``record()`` after each
utterance. Memory gets its LLM as an injected async callable, so it never imports robot/.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Literal, Protocol

# An OpenAI-style chat message: {"role": "system"|"user"|"assistant", "content": str}
Message = dict[str, str]

# The LLM memory may call (summaries): messages in, full reply text out.
LLMCallable = Callable[[list[Message]], Awaitable[str]]


@dataclass(frozen=True)
class Remark:
    """What one side said in a turn, as memory keeps it: the customer's words ("user") or
    the robot's ("assistant"). Not to be confused with ``speech.types.Utterance`` (audio)
    or the controller's turn (a customer's remark and the robot's reply, one ``turn_id``)."""

    role: Literal["user", "assistant"]
    text: str
    ts: float = field(default_factory=time.time)
    turn_id: str | None = None  # the loop's turn id (customer utterance + its reply share one)
    speaker: str | None = None  # a display name, when known (replayed corpora)


class DialogueMemory(Protocol):
    async def build_messages(self, user_text: str, knowledge: str = "") -> list[Message]:
        """The messages for the next reply: role prompt + history + the new utterance (with
        ``knowledge``: the shop's entries found for it, which share the retrieval room).
        Must return at once: never waits for a summary in progress."""
        ...

    async def prompt_prefix(self) -> list[Message]:
        """What the next reply's messages begin with, before the customer's words: the role
        prompt and the history (read ahead by the reply server). No side effects."""
        ...

    async def record(self, turn: Remark) -> None:
        """Store one utterance durably (it survives a crash once this returns)."""
        ...

    async def set_persona_prompt(self, prompt: str) -> None:
        """Switch the persona's role prompt; both memory stores are kept."""
        ...

    async def start(self) -> None:
        """Start background work (the summary timer)."""
        ...

    async def aclose(self, hurried: bool = False) -> None:
        """Stop background work; flush what must be flushed. ``hurried``: the process is
        stopping (SIGTERM, a second Ctrl-C): wait for no summary in progress."""
        ...
