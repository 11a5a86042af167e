"""Where a deployment keeps memory: ``sqlite:///path`` (one kiosk, the default) or
``postgresql://user@host:port/db`` (a fleet sharing its visitors); ``memory/stores/opening.py``
opens the store for it.

A PostgreSQL password never goes in a URL (settings files get copied, logged and shown by
``robot config``): it comes from libpq's own places, ``PGPASSWORD``, ``~/.pgpass`` or a
service file (``postgresql:///?service=kiosk``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit
POSTGRES_SCHEMES = ("postgresql", "postgres")


class StoreLocationError(ValueError):
    """A ``memory.store`` value that names no store this robot can use."""


@dataclass(frozen=True)
class StoreLocation:
    kind: Literal["sqlite", "postgresql"]
    path: Path | None = None  # sqlite
    url: str | None = None  # postgresql, as given (no password in it)

    def __str__(self) -> str:
        return f"sqlite:///{self.path}" if self.kind == "sqlite" else str(self.url)

    @property
    def server(self) -> str:
        """host:port of a PostgreSQL store, as libpq will resolve it (for messages)."""
        parts = urlsplit(self.url or "")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        host = unquote(parts.hostname or "") or query.get("host") or os.environ.get("PGHOST") or "local socket"
        port = parts.port or query.get("port") or os.environ.get("PGPORT") or 5432
        return f"{host}:{port}"


def parse_location(value: str | Path) -> StoreLocation:
    """``sqlite:///relative/or/absolute.sqlite3``, a bare path (SQLite), or a PostgreSQL URL."""
    text = str(value).strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        return StoreLocation("sqlite", path=Path(text))
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise StoreLocationError(f"expected sqlite:///PATH (three slashes), got {text!r}")
        return StoreLocation("sqlite", path=Path(rest[1:]))  # sqlite:////abs/path is absolute
    if scheme in POSTGRES_SCHEMES:
        parts = urlsplit(text)
        if parts.password is not None or "password" in {key.lower() for key in parse_qs(parts.query)}:
            raise StoreLocationError("a password in the memory.store URL is refused: put it in PGPASSWORD, "
                                     "~/.pgpass or a libpq service file")
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError as exc:
            raise StoreLocationError(f"bad port in the memory.store URL: {exc}") from None  # the URL may hold secrets
        return StoreLocation("postgresql", url=text)
    raise StoreLocationError(f"unknown store scheme {scheme + '://'!r}: expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB")


def location_of(store: str | None, db_path: Path | str) -> StoreLocation:
    """The settings' store: ``memory.store`` when set, else the SQLite file at ``memory.db_path``."""
    return parse_location(store) if store else StoreLocation("sqlite", path=Path(db_path))
