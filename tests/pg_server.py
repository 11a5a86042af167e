"""A real PostgreSQL server for tests: initdb into a temporary directory, a free port on
127.0.0.1, its Unix socket in that directory; stopped and deleted at the end.

From Debian's ``postgresql`` package (``scripts/setup.sh --test`` installs it). PostgreSQL
refuses to run as root: as root, the server runs as the ``postgres`` user the package
creates, in a directory under /tmp it owns (pytest's own temp dirs are root-only).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

READY_TIMEOUT_S = 30


def _bin_dir() -> Path | None:
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if versions:
        return Path(versions[-1])
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """``.url(db)`` for a database on it; ``.create_database()`` for a fresh one;
    ``.stop()`` / ``.start()`` to take it away and bring it back (its data stays)."""

    def __init__(self, *settings: str) -> None:
        """``settings``: server settings as ``name=value`` (``wal_recycle=off``), over the defaults."""
        self.settings = settings
        bin_dir = _bin_dir()
        if bin_dir is None:
            pytest.fail("PostgreSQL is not installed (needed by the fleet-store tests): run scripts/setup.sh --test")
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="robot-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        self._names = itertools.count(1)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=READY_TIMEOUT_S + 30)
        if done.returncode != 0:
            pytest.fail(f"{tool} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {setting}" for setting in self.settings)
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "server.log"),
                  "-w", "-t", str(READY_TIMEOUT_S), "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def _pids(self) -> list[int]:
        """The postmaster and every process it started (backends, writer, checkpointer, ...)."""
        main = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(main)], capture_output=True, text=True).stdout
        return [main, *map(int, children.split())]

    def freeze(self) -> None:
        """The whole server stops answering, connections open (SIGSTOP): a hung host."""
        for pid in self._pids():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self._pids():
            os.kill(pid, signal.SIGCONT)

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh, empty database on this server; its URL."""
        name = f"memory_{os.getpid()}_{next(self._names)}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def psql(self, database: str, query: str) -> str:
        return self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
                         "-At", "-c", query).stdout.strip()

    def close(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
