"""An API key that the LLM server repeats inside its streamed reply is never spoken nor
published (issue 28, item 6): the real `robot chat` process with MQTT on a real mosquitto
and the operator console on, against a local OpenAI-protocol server whose reply carries
the key, whole and altered as an LLM alters it (issue 50, item 6: its dashes dropped or
spaced, its case changed). What the terminal prints (the spoken text), every MQTT message, the console's
/api/status and /api/events, and the memory file hold the mask, never the key."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from memory.stores.sqlite_db import SqliteDb
from robot.core.redact import MASK
from tests.embedding_cache import shared_cache_env
from tests.mqtt.conftest import free_port
from tests.openai_stub_server import StubOpenAIServer

PERSONA = Path(__file__).resolve().parents[1] / "console" / "persona.yaml"  # no knowledge: the LLM answers
REPO = Path(__file__).resolve().parents[2]
KEY = "sk-live-7fA9c2E1b8D4k0QzSECRET"


async def _http_get(port: int, path: str, read_s: float = 1.0) -> str:
    """What the console sends for ``path`` within ``read_s`` (the event stream never ends)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    received = b""
    try:
        async with asyncio.timeout(read_s):
            while chunk := await reader.read(65536):
                received += chunk
    except TimeoutError:
        pass
    writer.close()
    return received.decode(errors="replace")


async def _read_until(stream: asyncio.StreamReader, needle: str, timeout_s: float = 60) -> str:
    seen = ""
    async with asyncio.timeout(timeout_s):
        while needle not in seen:
            line = await stream.readline()
            if not line:
                break
            seen += line.decode()
    return seen


async def test_a_key_repeated_by_the_llm_is_never_said_nor_published(tmp_path, mosquitto, listener):
    console_port = free_port()
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"mqtt:\n  port: {mosquitto.port}\nmemory:\n  db_path: {tmp_path}/m.sqlite3\n")
    altered = KEY.replace("-", " ").upper()
    reply = f"The key you gave me is {KEY}, or {altered}, or {KEY.replace('-', '')} and it works."
    async with StubOpenAIServer(reply=reply) as server:
        env = {**os.environ, "HOME": str(tmp_path), **shared_cache_env(tmp_path), "OPENAI_API_KEY": KEY,
               "OPENAI_BASE_URL": server.base_url,
               "ROBOT_LLM_BACKEND": "openai", "ROBOT_LLM_MODEL": "stub", "PYTHONUNBUFFERED": "1"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "robot", "chat", "--settings", str(settings), "--mqtt", "--visitor", "card-1",
                "--persona", str(PERSONA),
            "--console", f"127.0.0.1:{console_port}", cwd=REPO, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"Is my key right?\n")
            await proc.stdin.drain()
            said = await _read_until(proc.stdout, "and it works")
            status = await _http_get(console_port, "/api/status")
            events = await _http_get(console_port, "/api/events?after=0")
            proc.stdin.write(b"/quit\n")
            await proc.stdin.drain()
            rest, err = await asyncio.wait_for(proc.communicate(), 60)
        finally:
            if proc.returncode is None:
                proc.kill()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert server.requests and KEY in reply  # (the later requests: the session's summary at exit)
    assert f"The key you gave me is {MASK}, or {MASK}, or {MASK} and it works." in said  # what the visitor heard
    assert "and it works" in events and '"kind": "speech"' in events and '"kind": "turn"' in events
    assert '"turns"' in status
    assert await listener.wait_for(lambda: any("and it works" in json.dumps(m.data) for m in listener.of("turn")))
    published = json.dumps([m.data for m in listener.messages])
    assert MASK in published
    stored = [t.text for t in SqliteDb(tmp_path / "m.sqlite3").turns(1)]
    assert any(MASK in text for text in stored)  # remembered as said
    for where, text in {"terminal": said + rest.decode(), "mqtt": published, "/api/status": status,
                        "/api/events": events, "memory": " ".join(stored)}.items():
        assert KEY not in text and KEY[8:20] not in text, f"the key is in {where}"
        letters = "".join(char for char in text.lower() if char.isalnum())
        assert KEY[8:20].lower() not in letters, f"the key, altered, is in {where}"
