"""The dual store: one visitor's memory as a current-prompt history under a role prompt that a
recursive summary rewrites in the background (the seam, its RAM mirror, its writes to the
store, and the summaries it commits and swaps in)."""

from memory.dual_store.memory import DualStoreMemory, OnStoreError, OnUpdate, SwapWhen

__all__ = ["DualStoreMemory", "OnStoreError", "OnUpdate", "SwapWhen"]
