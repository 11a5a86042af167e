"""Dialogue memory: the seam the loop uses, the dual store, summarization policies, persistence."""

from memory.core.base import DialogueMemory, LLMCallable, Message, Remark
from memory.core.clock import Clock, ManualClock, SystemClock
from memory.core.settings import LlmLimits, SpeakerLabels, StoreSettings, SummaryPolicy
from memory.dual_store import DualStoreMemory, OnUpdate
from memory.factory import create_memory
from memory.full_history import FullHistoryMemory

__all__ = [
    "Clock", "DialogueMemory", "DualStoreMemory", "FullHistoryMemory", "LLMCallable", "LlmLimits", "ManualClock",
    "Message", "OnUpdate", "Remark", "SpeakerLabels", "StoreSettings", "SummaryPolicy", "SystemClock",
    "create_memory",
]
