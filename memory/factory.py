"""Build the memory a persona asks for, over the deployment's store."""

from __future__ import annotations

from config.schema import MemoryStoreSettings, PersonaMemory
from memory.base import DialogueMemory, LLMCallable
from memory.clock import Clock
from memory.dual_store import DualStoreMemory, OnUpdate
from memory.full_history import FullHistoryMemory
from memory.sqlite_store import SqliteStore
from memory.store import MemoryStore


async def create_memory(
    persona_prompt: str,
    persona_memory: PersonaMemory,
    store_settings: MemoryStoreSettings,
    llm: LLMCallable,
    clock: Clock | None = None,
    on_update: OnUpdate | None = None,
    store: MemoryStore | None = None,
) -> DialogueMemory:
    """An opened memory (its user's state loaded, a session begun); ``await start()`` runs
    its timer. ``strategy: full`` gives the plain full-history memory (nothing on disk)."""
    if persona_memory.strategy == "full":
        return FullHistoryMemory(persona_prompt)
    memory = DualStoreMemory(
        persona_prompt=persona_prompt,
        settings=persona_memory,
        store=store or SqliteStore(store_settings.db_path),
        llm=llm,
        user=store_settings.user,
        token_budget=store_settings.token_budget,
        clock=clock,
        on_update=on_update,
    )
    await memory.open()
    return memory
