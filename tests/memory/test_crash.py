"""kill -9 at an arbitrary moment: every turn whose record() returned is on disk, either
in the current-prompt history or absorbed by a summary of the current chain."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from memory.stores.sqlite_db import SqliteDb

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import asyncio, sys
    from memory import StoreSettings, SummaryPolicy, create_memory
    from memory.core.base import Remark

    async def llm(messages):
        await asyncio.sleep(0.002)  # summaries run while turns keep coming
        return "The customer talked. " + str(len(messages[-1]["content"])) + " characters."

    async def main():
        memory = await create_memory("You are a consultant.", SummaryPolicy(update_after_turns=3),
                                     StoreSettings(db_path=sys.argv[1]), llm)
        await memory.start()
        i = 0
        while True:
            await memory.record(Remark("user" if i % 2 == 0 else "assistant", f"utterance {i}"))
            print(f"recorded utterance {i}", flush=True)  # only after record() returned
            i += 1

    asyncio.run(main())
""")


def test_kill_9_loses_no_recorded_turn(tmp_path):
    db = tmp_path / "memory.sqlite3"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    acknowledged: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(acknowledged) < 120 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            acknowledged.append(line.strip().removeprefix("recorded "))
        os.kill(child.pid, signal.SIGKILL)  # mid-stream: a record or a summary swap may be in flight
    finally:
        child.wait(timeout=10)
    assert len(acknowledged) >= 120, "the child did not get going"

    view = SqliteDb(db)
    assert view.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    state = view.load_user("default", now=0)
    turns = view.turns(state.user_id)
    chain = view.chain(state.summary)
    view.close()
    stored = {t.text for t in turns}
    assert set(acknowledged) <= stored
    covered = {t.id for t in state.history} | {i for s in chain for i in s.absorbed}
    assert covered == {t.id for t in turns}
    assert chain, "summaries were being made while it was killed"
