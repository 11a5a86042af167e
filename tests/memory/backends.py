"""Both memory stores for one suite: ``store_where`` (a fixture tests override with it) is
a fresh SQLite file or a fresh database on a real PostgreSQL server that this test
session starts (``tests/pg_server.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.pg_server import PgServer


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = PgServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "memory.sqlite3")
    return request.getfixturevalue("pg_server").create_database()
