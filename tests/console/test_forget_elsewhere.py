"""A forget made by another process (issue 50, item 8): `robot memory forget` run from the
command line while the robot runs with its console on. The console's /api/status and its
event replay must not serve the forgotten visitor's words afterwards, for the visitor now
talking and for one whose session already ended; the robot publishes `forgotten` (by the
operator) so that a body deletes its own records too. Real controller, knowledge, SQLite
file and console server; the CLI in a subprocess."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import urllib.request
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from robot.core.events import ForgottenEvent
from tests.embedding_cache import shared_embeddings

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    request = urllib.request.Request(url)
    with urllib.request.urlopen(request, timeout=30) as response:
        if "/api/events" in url:  # the stream never ends: the replay is what came in a moment
            response.fp.raw._sock.settimeout(1.5)  # type: ignore[union-attr]
            seen = b""
            try:
                while chunk := response.read1(65536):
                    seen += chunk
            except (TimeoutError, socket.timeout):
                pass
            return seen.decode()
        return response.read().decode()


def _forget(db: Path, visitor: str) -> str:
    run = subprocess.run([sys.executable, "-m", "robot", "memory", "forget", "--db", str(db), "--visitor", visitor],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


async def test_a_forget_from_the_command_line_empties_the_console(tmp_path):
    from robot.app.runtime import open_runtime

    settings = load_settings()
    db = tmp_path / "memory.sqlite3"
    settings.memory.store, settings.memory.db_path = None, db
    settings.knowledge.cache_dir = shared_embeddings(tmp_path)
    settings.console.enabled, settings.console.port = True, _free_port()
    url = f"http://127.0.0.1:{settings.console.port}"
    async with open_runtime(settings, load_persona(DEFAULT_PERSONA), DEFAULT_PERSONA, audio_out="text",
                            listen=False) as rt:
        c = rt.controller
        with redirect_stdout(StringIO()):
            await c.sessions.start("card-past")
            await c.handle_text("What are your opening hours? I am Priyanka Marigold.")
            await c.sessions.start("card-now")  # the past visitor's session ends, kept in the file
            await c.handle_text("How much is the Kyoto Temples Day Tour? My name is Oswin Tamberlake.")
        before = await asyncio.to_thread(_get, url + "/api/status")
        assert "Priyanka Marigold" in before and "Oswin Tamberlake" in before  # the page shows both turns

        for visitor in ("card-now", "card-past"):
            assert "deleted" in await asyncio.to_thread(_forget, db, visitor)
        status = await asyncio.to_thread(_get, url + "/api/status")
        replay = await asyncio.to_thread(_get, url + "/api/events?after=0")
        forgotten = sorted(e.visitor for e in rt.recorder.of(ForgottenEvent))
    for where, text in (("/api/status", status), ("/api/events", replay)):
        assert "Priyanka" not in text and "Oswin" not in text, f"a forgotten visitor's words in {where}"
    assert json.loads(status)["memory"]["user"] == "card-now"  # the visitor talks on, afresh
    assert forgotten == ["card-now", "card-past"]  # published once each: the body forgets too
    import sqlite3

    with sqlite3.connect(db) as file:  # the forced summaries at the sessions' ends wrote nothing back
        dump = "\n".join(file.iterdump())
    assert "Priyanka" not in dump and "Oswin" not in dump
