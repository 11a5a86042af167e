"""A newcomer's first hour, as they would run it: the console script in a subprocess, real
files in a temporary directory, a home directory of its own."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub_server import ERROR_500, StubOpenAIServer
from tests.pg_server import free_port

REPO = Path(__file__).resolve().parents[1]
ROBOT = str(Path(sys.executable).parent / "robot")  # the console script pip installed


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment: their own home, none of this machine's robot settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROBOT_", "OPENAI_", "MQTT_", "XDG_")) and k != "PGPASSWORD"}
    return {**env, "HOME": str(home), **extra}


def robot(home: Path, *args: str, cwd: Path | None = None, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([ROBOT, *args], input=stdin, capture_output=True, text=True, timeout=300,
                          cwd=cwd or home, env=user_env(home, **env))


def shown(output: str, key: str) -> str:
    """The `robot config show` line of ``key`` (its last part, under its section)."""
    section, name = key.rsplit(".", 1)
    lines = output.splitlines()
    start = lines.index(f"{section}:")
    return next(line for line in lines[start + 1:] if line.strip().startswith(f"{name}:"))


def test_a_partial_settings_file_keeps_every_other_default(tmp_path):
    partial = tmp_path / "site.yaml"
    partial.write_text("mqtt:\n  port: 1999\n")
    out = robot(tmp_path, "config", "show", "--settings", str(partial))
    assert out.returncode == 0, out.stderr
    assert "port: 1999" in shown(out.stdout, "mqtt.port") and str(partial) in shown(out.stdout, "mqtt.port")
    for key, value in (("llm.frequency_penalty", "0.6"), ("llm.seed", "7"), ("llm.context_tokens", "4096")):
        line = shown(out.stdout, key)  # was: the schema's bare defaults (no penalties, no seed, 2048)
        assert f": {value}" in line and "config/default.yaml" in line, line


def test_layers_files_then_environment_then_flags(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("mqtt:\n  port: 1001\n  host: broker-a\n")
    second.write_text("mqtt:\n  port: 1002\n")
    out = robot(tmp_path, "config", "show", "--settings", str(first), "--settings", str(second),
                "--db", str(tmp_path / "flag.sqlite3"), "--mqtt",
                ROBOT_MEMORY_STORE="sqlite:///from-env.sqlite3", OPENAI_API_KEY="sk-very-secret")
    assert out.returncode == 0, out.stderr
    assert "1002" in shown(out.stdout, "mqtt.port") and str(second) in shown(out.stdout, "mqtt.port")
    assert "broker-a" in shown(out.stdout, "mqtt.host") and str(first) in shown(out.stdout, "mqtt.host")
    assert "flag --db" in shown(out.stdout, "memory.store") and "null" in shown(out.stdout, "memory.store")
    assert "flag --mqtt" in shown(out.stdout, "mqtt.enabled")
    assert "(set, hidden)" in shown(out.stdout, "llm.api_key") and "OPENAI_API_KEY" in shown(out.stdout, "llm.api_key")
    assert "sk-very-secret" not in out.stdout + out.stderr


@pytest.mark.parametrize("command", [["run"], ["chat"], ["simulate"], ["config", "show"], ["memory", "list"],
                                     ["memory", "show"]])
def test_every_command_takes_the_same_settings_persona_and_db_flags(tmp_path, command):
    out = robot(tmp_path, *command, "--help")
    assert out.returncode == 0, out.stderr
    for flag in ("--settings", "--persona", "--db"):
        assert flag in out.stdout, f"robot {' '.join(command)} has no {flag}"


def test_the_default_memory_is_in_the_users_data_directory(tmp_path):
    elsewhere = tmp_path / "some" / "project"
    elsewhere.mkdir(parents=True)
    out = robot(tmp_path, "config", "show", cwd=elsewhere)
    expected = tmp_path / ".local/share/kiosk-robot/memory.sqlite3"
    assert str(expected) in shown(out.stdout, "memory.db_path") and f"# memory store: {expected}" in out.stdout
    chat = robot(tmp_path, "chat", cwd=elsewhere, stdin="/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert f"Memory: {expected}" in chat.stderr and "/quit" in chat.stderr  # where it is, how to leave
    assert expected.is_file() and not list(elsewhere.iterdir())  # nothing written where the command ran


def test_simulate_refuses_a_folder_of_the_users_own_files(tmp_path):
    folder = tmp_path / "recordings"
    folder.mkdir()
    (folder / "my_interview.wav").write_bytes(b"RIFF....WAVE")
    out = robot(tmp_path, "simulate", str(REPO / "config/scenarios/travel_consultation.yaml"), "--out", str(folder))
    assert out.returncode == 2 and "did not write" in out.stderr and "my_interview.wav" in out.stderr, out.stderr
    assert (folder / "my_interview.wav").read_bytes() == b"RIFF....WAVE"  # nothing deleted


def test_a_simulation_deletes_only_what_it_wrote_before(tmp_path):
    from config.loader import ConfigError
    from robot.app.out_dir import MANIFEST, claim_out_dir, record_out_dir

    out = tmp_path / "out"
    claim_out_dir(out)
    (out / "001_reply.wav").write_bytes(b"old run")
    record_out_dir(out)
    assert MANIFEST in os.listdir(out)
    claim_out_dir(out)  # the next run: its own old file goes
    assert os.listdir(out) == []
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError):
        claim_out_dir(out)
    (out / MANIFEST).write_text('{"files": ["../outside.txt", "notes.txt"]}')  # a hand-edited manifest
    (tmp_path / "outside.txt").write_text("keep")
    claim_out_dir(out)
    assert (tmp_path / "outside.txt").exists()


async def test_chat_logs_go_to_the_log_file_not_into_the_prompt(tmp_path):
    async with StubOpenAIServer(reply="Kyoto is lovely.") as server:
        server.script = [ERROR_500]  # the first attempt fails: a warning is logged, the retry answers
        proc = await asyncio.create_subprocess_exec(
            ROBOT, "chat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
            env=user_env(tmp_path, ROBOT_LLM_BACKEND="openai", OPENAI_BASE_URL=server.base_url, ROBOT_LLM_MODEL="stub"))
        out, err = await asyncio.wait_for(proc.communicate(b"Tell me about Kyoto.\n/quit\n"), 120)
    out, err = out.decode(), err.decode()
    assert proc.returncode == 0, err
    assert "Kyoto is lovely." in out
    assert "WARNING" not in out + err and "retrying" not in out + err  # nothing in what the user reads and types
    log = next(line for line in err.splitlines() if "Log: " in line).split("Log: ", 1)[1].strip()
    assert "LLM attempt 1 of" in Path(log).read_text()


def test_an_unreachable_llm_server_is_one_line_before_the_greeting(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    out = robot(tmp_path, "chat", stdin="Hello\n", ROBOT_LLM_BACKEND="openai", OPENAI_BASE_URL=url)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "openai backend" in lines[0], out.stderr
    assert "Sakura" not in out.stdout  # no greeting


def test_a_persona_language_the_speech_model_cannot_hear_is_refused(tmp_path):
    persona = tmp_path / "hana.yaml"
    persona.write_text("name: Hana\nlanguage: ja\nrole_prompt: You are Hana.\ngreeting: Konnichiwa.\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: ja\npersona: {persona}\nturns:\n  - text: Konnichiwa\n")
    out = robot(tmp_path, "simulate", str(scenario), "--out", str(tmp_path / "out"))
    assert out.returncode == 2 and "English only" in out.stderr and "'ja'" in out.stderr, out.stderr
    check = robot(tmp_path, "config", "check", str(persona))
    assert check.returncode == 0 and "language ja" in check.stdout  # espeak-ng speaks ja: the file itself is fine


def test_a_language_without_a_voice_is_a_clear_error(tmp_path):
    persona = tmp_path / "p.yaml"
    persona.write_text("name: X\nlanguage: qq\nrole_prompt: You are X.\n")
    out = robot(tmp_path, "config", "check", str(persona))
    assert out.returncode == 2 and "key 'language'" in out.stderr and "voice" in out.stderr, out.stderr


def test_config_check_knows_every_sample_file(tmp_path):
    files = [REPO / "config/default.yaml", REPO / "config/personas/travel_agent.yaml",
             REPO / "config/scenarios/travel_consultation.yaml", REPO / "docker/settings.yaml"]
    out = robot(tmp_path, "config", "check", *map(str, files))
    assert out.returncode == 0, out.stderr
    assert [line.split(": ok (", 1)[1].split()[0].rstrip(",)") for line in out.stdout.splitlines()] == [
        "settings", "persona", "scenario", "settings"]
