"""One cache of the knowledge's sentence vectors for a whole test session.

A test that opened a runtime with a cache of its own (``tmp_path / "cache"``) embedded the sample
shop again, about 4 s of the two cores per test (the seven files that did: 156 s, 59 s after).
The cache is keyed by the model and each text, so a shared one gives every test the same vectors
it would compute; it lives in the session's base temp folder, fresh for each run and never the
user's own cache. Tests of the cache itself keep one of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

FOLDER = "shared-embeddings"


def shared_embeddings(tmp_path: Path) -> Path:
    """The session's cache folder, from any test's ``tmp_path`` (a folder of the session's base)."""
    return tmp_path.parent / FOLDER


def session_embeddings(factory: pytest.TempPathFactory) -> Path:
    """The same folder, for a fixture of a wider scope."""
    return factory.getbasetemp() / FOLDER


def shared_cache_env(tmp_path: Path) -> dict[str, str]:
    """For a `robot` subprocess with a home of its own: the session's one cache folder for what
    it computes at start (``XDG_CACHE_HOME``), not the fresh home's empty one. A test of a new
    user's first start (tests/test_newcomer.py) keeps the empty one."""
    return {"XDG_CACHE_HOME": str(tmp_path.parent / "shared-xdg-cache")}
