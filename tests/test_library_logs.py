"""A turn's log as a user sees it (``robot chat --log-level INFO``, a subprocess; chat logs
to the file it names at start): the one INFO line per turn is the product's own; the
libraries under it (the openai client's httpx2, faster-whisper) say nothing at INFO."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.embedding_cache import shared_cache_env

REPO = Path(__file__).resolve().parents[1]
OURS = {"robot", "memory", "speech", "config", "models", "prompts"}
LINE = re.compile(r"^\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ([\w.]+): ", re.MULTILINE)


def test_a_turn_logs_its_own_line_and_no_library_info(tmp_path):
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {tmp_path / 'memory.sqlite3'}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "robot", "chat", "--settings", str(settings), "--log-level", "INFO"],
        input="I would like to visit Kyoto in April.\nHow far is Nara?\n/quit\n",
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**os.environ, "HOME": str(tmp_path), **shared_cache_env(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert not LINE.findall(proc.stderr)  # nothing logged where the user types
    log = chat_log(proc.stderr)
    logged = LINE.findall(log)
    assert logged, log  # INFO lines are written: the check below is not vacuous
    libraries = [(level, name) for level, name in logged if name.split(".")[0] not in OURS]
    assert libraries == [], log
    assert [name for _, name in logged].count("robot.turn") == 2  # one line per turn


def chat_log(stderr: str) -> str:
    """The text of the log file ``robot chat`` named at start ("Log: PATH")."""
    path = next(line for line in stderr.splitlines() if "Log: " in line).split("Log: ", 1)[1].strip()
    return Path(path).read_text()
