"""Dialogue memory: the seam the loop uses, the dual store, summarization policies, persistence."""

from memory.base import DialogueMemory, LLMCallable, Message, Turn
from memory.clock import Clock, ManualClock, SystemClock
from memory.dual_store import DualStoreMemory, OnUpdate
from memory.factory import create_memory
from memory.full_history import FullHistoryMemory

__all__ = [
    "Clock", "DialogueMemory", "DualStoreMemory", "FullHistoryMemory", "LLMCallable", "ManualClock",
    "Message", "OnUpdate", "SystemClock", "Turn", "create_memory",
]
