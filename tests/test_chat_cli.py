"""``robot chat`` as a user runs it: a subprocess, typed lines in, replies out."""

import re
import subprocess
import sys
from pathlib import Path

from config.loader import DEFAULT_PERSONA, load_persona

REPO = Path(__file__).resolve().parents[1]
PROMPT = "you> "
PERSONA = load_persona(DEFAULT_PERSONA)
SAYS = f"{PERSONA.name}: "


def chat(tmp_path: Path, typed: str) -> subprocess.CompletedProcess[str]:
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {tmp_path / 'memory.sqlite3'}\n")
    return subprocess.run(
        [sys.executable, "-m", "robot", "chat", "--settings", str(settings)],
        input=typed, capture_output=True, text=True, timeout=300, cwd=REPO,
    )


def said(block: str) -> list[str]:
    """The robot's lines in a stretch of stdout; every non-empty line must be one."""
    lines = [line for line in block.splitlines() if line.strip()]
    assert all(line.startswith(SAYS) for line in lines), lines
    return [line.removeprefix(SAYS) for line in lines]


def test_chat_answers_typed_lines(tmp_path):
    proc = chat(tmp_path, "I would like to visit Kyoto in April.\n/quit\n")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr
    # greeting, prompt, reply, prompt (answered by /quit): nothing else
    greeting, reply, after_quit = proc.stdout.split(PROMPT)
    assert " ".join(said(greeting)) == PERSONA.greeting  # the persona's greeting, one sentence a line
    replies = said(reply)
    assert replies and all(re.search(r"\w{2,}", line) for line in replies), replies
    assert len(" ".join(replies)) > 10
    assert after_quit.strip() == ""  # /quit ends the chat without another word


def test_chat_ends_at_end_of_input_and_ignores_blank_lines(tmp_path):
    proc = chat(tmp_path, "   \n\n")  # no /quit: the input just ends (Ctrl-D)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    greeting, *rest = proc.stdout.split(PROMPT)
    assert " ".join(said(greeting)) == PERSONA.greeting
    assert len(rest) == 3  # a prompt for each blank line and one that met the end of input
    assert all(not block.strip() for block in rest), rest  # no reply to a blank line


def test_run_without_a_sound_card_is_one_clear_line():
    proc = subprocess.run([sys.executable, "-m", "robot", "run", "--input-device", "no-such-mic"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 3
    assert proc.stderr.startswith("audio device error:")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_devices_lists_or_says_there_are_none():
    proc = subprocess.run([sys.executable, "-m", "robot", "devices"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0
    lines = proc.stdout.strip().splitlines()
    if lines == ["no audio devices found (no sound card that PortAudio can see)"]:
        return
    # else one line per device ("<> index name (in N, out M, R Hz)") and the legend
    assert lines[-1] == "< default input, > default output"
    assert lines[:-1] and all(re.fullmatch(r"[< ][> ] +\d+ .+ \(in \d+, out \d+, \d+ Hz\)", line)
                              for line in lines[:-1]), lines
