"""Build the memory a persona asks for, over the deployment's store."""

from __future__ import annotations

from memory.core.base import DialogueMemory, LLMCallable
from memory.core.clock import Clock
from memory.core.settings import LlmLimits, StoreSettings, SummaryPolicy
from memory.core.tokens import TokenCounter
from memory.dual_store import DualStoreMemory, OnStoreError, OnUpdate, SwapWhen
from memory.full_history import FullHistoryMemory
from memory.stores.location import location_of
from memory.stores.opening import open_store
from memory.stores.protocol import MemoryStore


async def create_memory(
    persona_prompt: str,
    policy: SummaryPolicy,
    store_settings: StoreSettings,
    llm: LLMCallable,
    clock: Clock | None = None,
    on_update: OnUpdate | None = None,
    store: MemoryStore | None = None,
    limits: LlmLimits | None = None,
    count_tokens: TokenCounter | None = None,
    user: str | None = None,
    on_store_error: OnStoreError | None = None,
    swap_when: SwapWhen | None = None,
) -> DialogueMemory:
    """An opened memory (its user's state loaded, a session begun); ``await start()`` runs
    its timer. ``strategy: full`` gives the plain full-history memory (nothing on disk).
    ``limits`` and ``count_tokens`` describe the summarizing model (its context, in its own
    tokens); without them: a 2048-token context and a cautious heuristic count. ``user``
    overrides ``store_settings.user``; a ``store`` given is shared, and left open;
    ``swap_when`` says when a folded summary may rewrite the role prompt (None: at once)."""
    if policy.strategy == "full":
        return FullHistoryMemory(persona_prompt)
    memory = DualStoreMemory(
        persona_prompt=persona_prompt,
        policy=policy,
        store=store or open_store(location_of(store_settings.store, store_settings.db_path)),
        owns_store=store is None,
        llm=llm,
        user=user or store_settings.user,
        token_budget=store_settings.token_budget,
        retrieval_tokens=store_settings.retrieval_tokens,
        retrieval_min_score=store_settings.retrieval_min_score,
        clock=clock,
        on_update=on_update,
        limits=limits,
        count_tokens=count_tokens,
        on_store_error=on_store_error,
        profile_llm=store_settings.profile_llm,
        swap_when=swap_when,
    )
    await memory.open(offline_ok=True)  # a store away now: the talk begins, the user loads later
    return memory
