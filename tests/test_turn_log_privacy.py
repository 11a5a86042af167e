"""``forget`` leaves no visitor's words in the files the product writes (issue 14, item 7):
the turn log holds ids, timings and lengths only, so the memory store is the one place the
words are, and ``robot memory forget`` deletes them there. Real ``robot chat`` and
``robot memory`` processes, a local OpenAI-protocol server, byte search in the files."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.openai_stub_server import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]
NAME = "Zebulon Quixote"


async def robot(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "robot", *args, cwd=REPO, env=env or dict(os.environ),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_the_turn_log_keeps_no_words(tmp_path):
    turn_log, db = tmp_path / "turns.jsonl", tmp_path / "memory.sqlite3"
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {db}\nlogging:\n  turn_log: {turn_log}\n")
    async with StubOpenAIServer(reply=f"Nice to meet you, {NAME}.") as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "ROBOT_LLM_BACKEND": "openai",
               "ROBOT_LLM_MODEL": "stub"}
        status, out, err = await robot("chat", "--settings", str(settings), "--visitor", "card-42", env=env,
                                       stdin=f"My name is {NAME}.\n/quit\n".encode())
    assert status == 0, err[-2000:]
    assert NAME in out  # the turn happened
    line = json.loads(turn_log.read_text().splitlines()[-1])
    assert line["turn_id"] == "t1" and line["user_chars"] == len(f"My name is {NAME}.")
    assert NAME.encode() not in turn_log.read_bytes() and NAME not in err
    # the words are in the store, and forget takes them from there
    status, exported, _ = await robot("memory", "export", "--settings", str(settings))
    assert NAME in exported
    status, said, err = await robot("memory", "forget", "--settings", str(settings), "--visitor", "card-42")
    assert status == 0, err
    status, exported, _ = await robot("memory", "export", "--settings", str(settings))
    assert NAME not in exported
