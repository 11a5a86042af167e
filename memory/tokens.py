"""Token counting: one heuristic behind one function, so a real tokenizer can replace it.

The heuristic is ``ceil(characters / 4)``, OpenAI's rule of thumb for English text; it
needs no model files and errs on the high side for plain conversational English, which
is the safe side for a budget. Each chat message costs 4 more tokens of framing.
"""

from __future__ import annotations

from memory.base import Message

MESSAGE_OVERHEAD = 4  # role and separators, per chat message


def count_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def count_message_tokens(messages: list[Message]) -> int:
    return sum(count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)
