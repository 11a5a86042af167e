"""Secrets never reach a log line, the turn log or a repr (issue 14, item 8). The end-to-end
test runs the real ``robot chat`` process against a local OpenAI-protocol server that
echoes the API key in its error body, as real servers do."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

from config.loader import load_settings
from robot.core import redact
from tests.embedding_cache import shared_cache_env
from tests.openai_stub_server import ECHO_KEY, StubOpenAIServer
from tests.test_library_logs import chat_log

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-test-0123456789abcdefSECRET"
PASSWORD = "hunter2-mqtt-password"


async def test_an_echoed_api_key_is_never_logged(tmp_path):
    turn_log = tmp_path / "turns.jsonl"
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"llm:\n  retries: 1\n  backoff_s: 0.01\nmemory:\n  db_path: {tmp_path}/m.sqlite3\n"
                        f"logging:\n  turn_log: {turn_log}\n")
    async with StubOpenAIServer(script=[ECHO_KEY] * 4) as server:
        env = {**os.environ, "HOME": str(tmp_path), **shared_cache_env(tmp_path), "OPENAI_API_KEY": KEY,
               "OPENAI_BASE_URL": server.base_url,
               "ROBOT_LLM_BACKEND": "openai", "ROBOT_LLM_MODEL": "stub", "MQTT_PASSWORD": PASSWORD}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "robot", "chat", "--settings", str(settings), cwd=REPO, env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(b"Hello there\n/quit\n"), 120)
    stdout, stderr = out.decode(), err.decode()
    assert proc.returncode == 0, stderr[-2000:]
    stderr += chat_log(stderr)  # what the user sees, and what chat logged to its file
    assert len(server.requests) == 2  # the key went out and came back, twice
    assert "Incorrect API key provided" in stderr  # the server's error is logged ...
    assert redact.MASK in stderr
    for text in (stderr, stdout, turn_log.read_text()):
        assert KEY not in text and KEY[3:15] not in text  # ... but never the key, not even in part
        assert PASSWORD not in text
    assert "AuthenticationError" in stderr  # the failure still names its type


def test_secrets_are_not_in_the_settings_repr(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MQTT_PASSWORD", PASSWORD)
    settings = load_settings()
    assert settings.llm.api_key == KEY and settings.mqtt.password == PASSWORD
    for text in (repr(settings), str(settings), repr(settings.llm), repr(settings.mqtt)):
        assert KEY not in text and PASSWORD not in text


def test_tracebacks_and_arguments_are_masked(caplog):
    redact.install("s3cret-value-42")
    caplog.set_level(logging.INFO)
    log = logging.getLogger("tests.redaction")
    try:
        raise RuntimeError("server said: bad key s3cret-value-42")
    except RuntimeError:
        log.exception("call failed with %s", "Authorization: Bearer abcdefgh12345678")
    record = caplog.records[-1]
    assert "s3cret-value-42" not in caplog.text and "abcdefgh12345678" not in caplog.text
    assert "server said: bad key ***" in caplog.text and record.getMessage().endswith("Bearer ***")
    assert redact.redact("an unregistered sk-proj-ABCDEFGHIJKL key") == "an unregistered *** key"


def test_the_console_token_is_redacted_once_logging_is_set_up(monkeypatch):
    from robot.app.cli_commands import _setup_logging

    monkeypatch.setenv("ROBOT_CONSOLE_TOKEN", "console-tok-8d71c2")
    _setup_logging(load_settings())
    record = logging.getLogRecordFactory()("robot", logging.INFO, __file__, 1, "bad token console-tok-8d71c2", (), None)
    assert "console-tok-8d71c2" not in record.getMessage()


def test_config_show_hides_the_password_of_a_store_url(tmp_path):
    """The robot refuses a password in `memory.store`; `robot config show` must not print it
    either (issue 28, item 6), from a flag, the environment or a settings file."""
    import subprocess

    url = "postgresql://kiosk:pw-Zq81-secret@db.example:5432/memory"
    settings = tmp_path / "site.yaml"
    settings.write_text(f"memory:\n  store: {url}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ROBOT_"))}
    env |= {"HOME": str(tmp_path), **shared_cache_env(tmp_path)}
    for argv, extra in ((["--db", url], {}), ([], {"ROBOT_MEMORY_STORE": url}), (["--settings", str(settings)], {})):
        run = subprocess.run([sys.executable, "-m", "robot.app.cli", "config", "show", *argv], cwd=REPO, env=env | extra,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "pw-Zq81-secret" not in run.stdout + run.stderr
        assert "store: postgresql://kiosk:***@db.example:5432/memory" in run.stdout
        assert "# memory store: postgresql://kiosk:***@db.example:5432/memory" in run.stdout
