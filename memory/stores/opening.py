"""The store for a location: SQLite or PostgreSQL, each imported only when used (psycopg
and its pool cost a kiosk on SQLite nothing)."""

from __future__ import annotations

from memory.stores.location import StoreLocation
from memory.stores.protocol import MemoryStore


def open_store(location: StoreLocation) -> MemoryStore:
    """The async store for a location; a PostgreSQL one still needs ``await store.connect()``."""
    if location.kind == "sqlite":
        from memory.stores.sqlite_store import SqliteStore

        assert location.path is not None
        return SqliteStore(location.path)
    from memory.stores.pg_store import PostgresStore

    assert location.url is not None
    return PostgresStore(location.url)
