"""Dialogue memory: the seam the loop uses, the dual store, summarization policies, persistence."""

from memory.base import DialogueMemory, LLMCallable, Message, Remark
from memory.clock import Clock, ManualClock, SystemClock
from memory.dual_store import DualStoreMemory, OnUpdate
from memory.factory import create_memory
from memory.full_history import FullHistoryMemory
from memory.settings import LlmLimits, SpeakerLabels, StoreSettings, SummaryPolicy

__all__ = [
    "Clock", "DialogueMemory", "DualStoreMemory", "FullHistoryMemory", "LLMCallable", "LlmLimits", "ManualClock",
    "Message", "OnUpdate", "Remark", "SpeakerLabels", "StoreSettings", "SummaryPolicy", "SystemClock",
    "create_memory",
]
