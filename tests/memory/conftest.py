"""Shared helpers: an LLM double that summarizes by rule, and a memory on a temp file.

The double is for logic a real model cannot exercise on demand (slowness on cue, failure,
timeouts); the real-model path is tested in test_real_llm.py.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from memory import ManualClock, StoreSettings, SummaryPolicy, create_memory
from memory.core.base import Message, Remark
from memory.dual_store import DualStoreMemory
from memory.summary.facts import split_marker

PERSONA = "You are Sakura, a travel consultant at a kiosk."


class RuleLLM:
    """Summarizes by rule: the previous memory's sentences plus one per new user line
    (``User:``, the neutral label, or ``Customer:``, the travel persona's).

    ``gate`` (an Event) holds every call until set; ``fail`` makes calls raise; ``calls``
    keeps the prompts it was given."""

    def __init__(self) -> None:
        self.calls: list[list[Message]] = []
        self.gate: asyncio.Event | None = None
        self.fail = 0  # how many next calls raise
        self.hang = False

    async def __call__(self, messages: list[Message]) -> str:
        self.calls.append(messages)
        if self.gate is not None:
            await self.gate.wait()
        if self.hang:
            await asyncio.Event().wait()
        if self.fail:
            self.fail -= 1
            raise ConnectionError("LLM unreachable")
        prompt = messages[-1]["content"]
        previous = _between(prompt, ("Previous memory:", "Rolling memory:", "Notes so far:"),
                            ("New conversation:", "Earlier exchanges", "Dialogue:"))
        new = _between(prompt, ("New conversation:", "New exchanges:", "Dialogue:"),
                       ("Write the updated memory", "Notes about the"))
        said = [line.split(":", 1)[1].strip() for line in new.splitlines() if line.startswith(("User:", "Customer:"))]
        previous = split_marker(previous)[0]
        old = [] if previous.startswith("(nothing") else [s for s in re.split(r"(?<=\.)\s+", previous) if s]
        return " ".join(old + [f"The customer said {s.rstrip('.')}." for s in said])


def _between(text: str, starts: tuple[str, ...], ends: tuple[str, ...]) -> str:
    start = max((text.find(s) + len(s) for s in starts if s in text), default=0)
    end = min((text.find(e, start) for e in ends if text.find(e, start) >= 0), default=len(text))
    return text[start:end].strip()


@pytest.fixture
def llm() -> RuleLLM:
    return RuleLLM()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_000_000.0)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


@pytest.fixture
def store_where(db: Path) -> str:
    """Where make_memory's store is: the SQLite file by default; the store-contract and admin
    tests override it with both backends (``tests/memory/backends.py``)."""
    return str(db)


@pytest.fixture
async def make_memory(store_where, llm, clock):
    """``await make_memory(**summary_policy_fields)`` -> an opened, started DualStoreMemory
    (``memory.updates`` lists the on_update calls); closed after the test."""
    opened: list[DualStoreMemory] = []

    async def make(budget: int = 1500, user: str = "default", llm_=None, limits=None, count_tokens=None,
                   retrieval_tokens: int = 300, profile_llm: bool = False, swap_when=None,
                   **fields) -> DualStoreMemory:
        fields.setdefault("update_interval_s", 300)
        updates: list[tuple[int, str, str]] = []
        memory = await create_memory(
            PERSONA, SummaryPolicy(**fields), StoreSettings(store=store_where, user=user, token_budget=budget,
                                                         retrieval_tokens=retrieval_tokens, profile_llm=profile_llm),
            llm_ or llm, clock=clock, on_update=lambda *a: updates.append(a), limits=limits,
            count_tokens=count_tokens, swap_when=swap_when)
        assert isinstance(memory, DualStoreMemory)
        memory.updates = updates  # type: ignore[attr-defined]
        await memory.start()
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        await memory.aclose()


async def say(memory: DualStoreMemory, *lines: str) -> None:
    """Record alternating customer / consultant lines."""
    for i, line in enumerate(lines):
        await memory.record(Remark("user" if i % 2 == 0 else "assistant", line))
