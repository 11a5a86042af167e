"""A full disk loses no turn: the SQLite memory on a real 600 KiB tmpfs, a real runtime (the sample
persona, an OpenAI-compatible stub as the LLM). Turns said while the disk is full are answered,
wait in RAM, and are written once there is room; if the robot stops first, they go into the
journal reserved beside the file and are written at the next start."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager, redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from memory.stores.sqlite_store import SqliteStore
from tests.embedding_cache import shared_embeddings
from tests.openai_stub_server import StubOpenAIServer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)")
REPLY = "Kyoto is lovely in spring."


@contextmanager
def small_disk(tmp_path: Path, size: str = "600k"):
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> Path:
    filler = mount / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k", "count=100000"], capture_output=True)
    return filler


async def _turns(rt, lines):
    with redirect_stdout(StringIO()):
        return [await rt.controller.handle_text(line) for line in lines]


async def _stored(db: Path) -> list[str]:
    store = SqliteStore(db)
    await store.connect()
    try:
        user = await store.user_id("card-9")
        return [t.text for t in await store.turns(user) if t.role == "user"] if user else []
    finally:
        await store.close()


def _settings(db: Path, server, tmp_path: Path):
    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, db
    settings.knowledge.cache_dir = shared_embeddings(tmp_path)
    settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
    return settings


async def test_turns_said_on_a_full_disk_are_answered_and_written_when_there_is_room(tmp_path):
    from robot.app.runtime import open_runtime

    with small_disk(tmp_path) as mount:
        db = mount / "memory.sqlite3"
        async with StubOpenAIServer(reply=REPLY) as server:
            async with open_runtime(_settings(db, server, tmp_path), load_persona(DEFAULT_PERSONA), DEFAULT_PERSONA,
                                    audio_out="text", listen=False) as rt:
                await rt.controller.sessions.start("card-9")
                await _turns(rt, [f"Before {i}: tell me about Kyoto." for i in range(3)])
                filler = fill(mount)
                full = await _turns(rt, [f"While full {i}: what about Nara? " + "x" * 300 for i in range(6)])
                apology = rt.controller.persona.apology
                assert all(r.reply_text and apology not in r.reply_text and not r.errors for r in full)  # answered
                filler.unlink()  # room again: the waiting turns are written
                await rt.memory.wait_stored()
                await _turns(rt, [f"After {i}: and Uji?" for i in range(3)])
        said = await _stored(db)
    assert [s.split(":")[0] for s in said] == [f"Before {i}" for i in range(3)] + [f"While full {i}" for i in range(6)] \
        + [f"After {i}" for i in range(3)]


async def test_turns_still_held_at_exit_are_kept_in_the_journal_and_written_at_the_next_start(tmp_path):
    from robot.app.runtime import open_runtime

    with small_disk(tmp_path) as mount:
        db = mount / "memory.sqlite3"
        async with StubOpenAIServer(reply=REPLY) as server:
            async with open_runtime(_settings(db, server, tmp_path), load_persona(DEFAULT_PERSONA), DEFAULT_PERSONA,
                                    audio_out="text", listen=False) as rt:
                await rt.controller.sessions.start("card-9")
                await _turns(rt, ["Before: tell me about Kyoto."])
                filler = fill(mount)
                await _turns(rt, [f"While full {i}: what about Nara?" for i in range(4)])
            # the robot stopped with the disk still full: nothing more could be written
            assert (mount / "memory.sqlite3.unwritten").exists()
            filler.unlink()
            said = await _stored(db)  # the next start (the store opening the file) writes the journal
    assert [s.split(":")[0] for s in said] == ["Before"] + [f"While full {i}" for i in range(4)]
