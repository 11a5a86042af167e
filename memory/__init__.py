"""Dialogue memory: the seam the loop uses, the dual store, summarization policies, persistence."""

from memory.base import DialogueMemory, LLMCallable, Message, Turn

__all__ = ["DialogueMemory", "LLMCallable", "Message", "Turn"]
