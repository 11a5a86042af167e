"""Faults in memory's timers and store (issue 14, items 3, 4 and 6)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from config.schema import PersonaMemory
from memory import admin
from memory.stores.sqlite_db import SqliteDb
from tests.memory.conftest import PERSONA, say

REPO = Path(__file__).resolve().parents[2]
SECRET = "Zanzibar-Quokka-7731"


@pytest.mark.parametrize("field", ["update_interval_s", "summary_timeout_s", "retry_backoff_s"])
def test_the_schema_refuses_timers_that_would_spin(field):
    with pytest.raises(ValidationError, match=field):
        PersonaMemory(**{field: 1e-8})


def test_a_tiny_timer_interval_does_not_spin():
    # A child process: the defect was an endless loop on the event loop that no timeout ends.
    child = textwrap.dedent("""
        import asyncio, time
        from memory import StoreSettings, SummaryPolicy, create_memory
        from memory.core.clock import SystemClock

        class Counting(SystemClock):
            sleeps = 0
            async def sleep(self, seconds):
                Counting.sleeps += 1
                await super().sleep(seconds)

        async def main(path):
            async def llm(messages):
                return "Nothing new."
            memory = await create_memory("You are a guide.", SummaryPolicy(update_interval_s=1e-8),
                                         StoreSettings(db_path=path), llm, clock=Counting())
            await memory.start()
            started = time.process_time()
            await asyncio.sleep(1.5)
            await memory.aclose()
            print(Counting.sleeps, round(time.process_time() - started, 2))

        import sys
        asyncio.run(main(sys.argv[1]))
    """)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", child, str(Path(tmp) / "m.sqlite3")], cwd=REPO,
                              capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    sleeps, cpu = done.stdout.split()
    assert int(sleeps) <= 3  # the interval is clamped to 1 s: one or two ticks in 1.5 s
    assert float(cpu) < 1.0


async def test_a_user_forgotten_by_the_cli_while_the_robot_runs_starts_afresh(make_memory, db, llm):
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    assert await memory.flush()
    await say(memory, "We like temples.")
    assert "deleted user 'default': 3 turns" in await admin.forget(db, "default")  # another process
    await say(memory, "I am back.")  # was: IntegrityError (FOREIGN KEY) on this and every later turn
    assert [t.text for t in memory.history] == ["I am back."]
    assert memory.summary is None and memory.role_prompt == PERSONA
    assert await memory.flush()
    assert "back" in memory.role_prompt and "Ken" not in memory.role_prompt
    await admin.forget(db, "default")
    await memory.set_persona_prompt("You are Hana.")  # a persona change after a forget works too
    await say(memory, "Hello again.")
    view = SqliteDb(db)
    texts = [t.text for t in view.turns(view.user_id("default"))]
    view.close()
    assert texts == ["Hello again."] and memory.role_prompt == "You are Hana."


def _files_holding(db: Path, text: str) -> list[str]:
    return [p.name for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize("how", ["robot", "cli"])
async def test_forget_leaves_no_copy_in_the_database_wal_or_shm_files(make_memory, db, how):
    memory = await make_memory()
    other = await make_memory(user="guest")  # a user who stays: the file is not simply emptied
    await say(other, "Just looking around.")
    await say(memory, f"My name is {SECRET}.", f"Hello {SECRET}.")
    assert await memory.flush()
    await say(memory, f"Please remember {SECRET} again.")
    assert _files_holding(db, SECRET)  # it is there before (the test can fail)
    if how == "robot":
        await memory.forget_user("default")  # MQTT forget: through the running memory
    else:
        await admin.forget(db, "default")  # robot memory forget, while the store is open
    assert _files_holding(db, SECRET) == []  # was: the -wal file kept every copy
    assert "Just looking around." in [t.text for t in other.history]
