"""``robot chat`` as a user runs it: a subprocess, typed lines in, replies out."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_chat_answers_typed_lines(tmp_path):
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {tmp_path / 'memory.sqlite3'}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "robot.cli", "chat", "--settings", str(settings)],
        input="I would like to visit Kyoto in April.\n/quit\n",
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    assert lines[0].startswith("Sakura: Hello and welcome")  # the greeting
    replies = [l for l in proc.stdout.split("you> ")[1].splitlines() if l.startswith("Sakura: ")]
    assert replies and len(replies[0]) > len("Sakura: ") + 3
    assert "Traceback" not in proc.stderr


def test_run_without_a_sound_card_is_one_clear_line():
    proc = subprocess.run([sys.executable, "-m", "robot.cli", "run", "--input-device", "no-such-mic"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 3
    assert proc.stderr.startswith("audio device error:")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_devices_lists_or_says_there_are_none():
    proc = subprocess.run([sys.executable, "-m", "robot.cli", "devices"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0
    assert proc.stdout.strip()
