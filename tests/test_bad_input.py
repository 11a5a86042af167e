"""Hostile or mistaken input (issue 14, items 9 and 10): one clear error naming the file,
key and line, exit status 2, no traceback, and nothing starts."""

from __future__ import annotations

import subprocess
import sys
import shutil
from pathlib import Path

import pytest

from config.checks import MAX_FILE_BYTES
from config.loader import DEFAULT_PERSONA as PERSONA
from robot.app.cli import EXIT_CONFIG, main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ROBOT_LLM_MODEL", "ROBOT_LLM_BACKEND",
                 "MQTT_USERNAME", "MQTT_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


def refused(argv: list[str], capsys) -> str:
    """Runs the CLI; it must refuse with status 2 and a short message, no traceback."""
    assert main(argv) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("configuration error:")
    assert len(err.strip().splitlines()) <= 3, err
    return err


def persona_with(tmp_path: Path, line: str) -> Path:
    text = PERSONA.read_text().replace("voice: en-us", line)
    assert text != PERSONA.read_text()
    return persona_copy(tmp_path, text)


def persona_copy(tmp_path: Path, text: str) -> Path:
    """The sample persona's text in ``tmp_path``, with its knowledge files beside it (relative paths)."""
    if not (tmp_path / "knowledge").exists():
        shutil.copytree(PERSONA.parent / "knowledge", tmp_path / "knowledge")
    path = tmp_path / "persona.yaml"
    path.write_text(text)
    return path


def test_unknown_persona_voice_is_refused_with_close_ones(tmp_path, capsys):
    path = persona_with(tmp_path, "voice: en-usa")
    line = path.read_text().splitlines().index("voice: en-usa") + 1
    err = refused(["chat", "--persona", str(path)], capsys)
    assert "key 'voice'" in err and f"line {line}:" in err
    assert "en-us" in err.split("close ones:")[1]  # the voice meant is offered


def test_british_is_no_voice(tmp_path, capsys):
    err = refused(["chat", "--persona", str(persona_with(tmp_path, "voice: british"))], capsys)
    assert "no voice 'british'" in err


def test_known_voice_forms_are_accepted(tmp_path):
    from config.loader import load_persona

    for voice in ("en-us", "gmw/en-US", "English_(America)", "English (America)", "en-gb"):
        assert load_persona(persona_with(tmp_path, f"voice: {voice!r}")).voice == voice


def test_a_gesture_rule_naming_an_unknown_gesture_is_refused(tmp_path, capsys):
    text = PERSONA.read_text().replace("- gesture: point_right", "- gesture: wave")
    path = persona_copy(tmp_path, text)
    err = refused(["chat", "--persona", str(path)], capsys)
    line = text.splitlines().index("gesture_rules:") + 1
    assert f"line {line}: key 'gesture_rules'" in err
    assert "rule 3 names unknown gesture 'wave'" in err and "point_right" in err  # the known ones


def test_a_gesture_rule_without_its_words_is_refused_at_its_line(tmp_path, capsys):
    path = tmp_path / "persona.yaml"
    path.write_text("name: A\nrole_prompt: hi\ngestures: {nod: a nod}\ngesture_rules:\n  - gesture: nod\n")
    err = refused(["chat", "--persona", str(path)], capsys)
    assert "line 5: key 'gesture_rules.0'" in err and "needs words" in err


def test_scenario_customer_voice_is_checked(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: x\npersona: {PERSONA}\ncustomer_voice: british\nturns:\n  - text: hello\n")
    err = refused(["simulate", str(scenario), "--out", str(tmp_path / "out")], capsys)
    assert "key 'customer_voice'" in err and "line 3" in err
    assert not (tmp_path / "out").exists()  # refused before anything started


def test_scenario_wav_that_is_not_a_wav(tmp_path, capsys):
    (tmp_path / "fake.wav").write_text("this is text, not audio\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: x\npersona: {PERSONA}\nturns:\n  - text: hi\n  - wav: fake.wav\n")
    err = refused(["simulate", str(scenario), "--out", str(tmp_path / "out")], capsys)
    assert "key 'turns.1.wav'" in err and "line 5" in err and "not a sound file" in err


def test_scenario_wav_that_is_missing(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: x\npersona: {PERSONA}\nturns:\n  - wav: gone.wav\n")
    assert "does not exist" in refused(["simulate", str(scenario)], capsys)


def settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


def test_db_path_that_is_a_directory(tmp_path, capsys):
    err = refused(["chat", "--settings", str(settings(tmp_path, f"memory:\n  db_path: {tmp_path}\n"))], capsys)
    assert "key 'memory.db_path'" in err and "is a directory" in err and "line 2" in err


def test_db_path_under_a_file(tmp_path, capsys):
    (tmp_path / "plain").write_text("x")
    text = f"memory:\n  db_path: {tmp_path}/plain/sub/memory.sqlite3\n"
    err = refused(["chat", "--settings", str(settings(tmp_path, text))], capsys)
    assert "which is a file" in err


def test_memory_cli_refuses_a_directory_db_path(tmp_path, capsys):
    err = refused(["memory", "show", "--settings", str(settings(tmp_path, f"memory:\n  db_path: {tmp_path}\n"))],
                  capsys)
    assert "is a directory" in err


def test_turn_log_that_is_a_directory(tmp_path, capsys):
    err = refused(["chat", "--settings", str(settings(tmp_path, f"logging:\n  turn_log: {tmp_path}\n"))], capsys)
    assert "key 'logging.turn_log'" in err and "is a directory" in err


def test_missing_ca_file_fails_at_start(tmp_path, capsys):
    text = f"mqtt:\n  enabled: true\n  tls: true\n  ca_file: {tmp_path}/missing-ca.pem\n"
    err = refused(["chat", "--settings", str(settings(tmp_path, text))], capsys)
    assert "key 'mqtt.ca_file'" in err and "does not exist" in err and "line 4" in err


def test_duplicate_keys_are_rejected(tmp_path, capsys):
    text = "llm:\n  temperature: 0.3\n  max_tokens: 50\n  temperature: 1.5\n"
    err = refused(["chat", "--settings", str(settings(tmp_path, text))], capsys)
    assert "duplicate key 'temperature' (first given on line 2)" in err and "line 4" in err


def test_oversized_settings_file_is_refused_without_reading_it(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    with path.open("w") as f:
        f.write("llm:\n  model: x\n")
        f.write("# padding\n" * (MAX_FILE_BYTES // 10 + 1))
    err = refused(["chat", "--settings", str(path)], capsys)
    assert "file too large" in err


def test_deeply_nested_yaml_is_one_line_in_a_real_process(tmp_path):
    path = settings(tmp_path, "llm: " + "[" * 20_000 + "]" * 20_000 + "\n")
    run = subprocess.run([sys.executable, "-m", "robot", "chat", "--settings", str(path)],
                         cwd=REPO, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == EXIT_CONFIG, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert "nested too deeply" in run.stderr


# --- issue 28, items 4 and 5: the real CLI in a subprocess, one line and no traceback ------


def robot(*argv: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    import os

    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ROBOT_"))}
    return subprocess.run([sys.executable, "-m", "robot.app.cli", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={**environment, **(env or {})})


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 30) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def one_line(run: subprocess.CompletedProcess[str], status: int = EXIT_CONFIG) -> str:
    assert run.returncode == status, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    if lines[0] == "configuration error:":  # robot's header above the file's problems
        lines = lines[1:]
    assert len(lines) == 1, run.stderr
    return lines[0]


@pytest.mark.parametrize("argv", [["chat"], ["memory", "list"], ["memory", "forget", "--visitor", "ana"]],
                         ids=" ".join)
def test_a_db_that_is_not_sqlite_is_one_line(tmp_path, argv):
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"These are my notes, not a database.\n" * 200)
    err = one_line(robot(*argv, "--db", str(junk), env={"HOME": str(tmp_path)}))
    assert err.startswith("memory store error:") and str(junk) in err and "not a database" in err
    assert junk.read_bytes() == b"These are my notes, not a database.\n" * 200  # nothing written into it


def test_an_llm_url_that_answers_a_web_page_is_one_line(tmp_path):
    """An ordinary web server on the port: /v1/models answers an HTML page with 200."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            body = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        err = one_line(robot("chat", "--db", str(tmp_path / "m.sqlite3"),
                             env={"HOME": str(tmp_path), "OPENAI_BASE_URL": url, "ROBOT_LLM_BACKEND": "openai",
                                  "ROBOT_LLM_MODEL": "stub"}))
    finally:
        server.shutdown()
    assert err.startswith("LLM error:") and "does not answer as an OpenAI-compatible API" in err and url in err


def test_config_check_on_deeply_nested_yaml_is_one_line(tmp_path):
    path = settings(tmp_path, "llm: " + "[" * 20_000 + "]" * 20_000 + "\n")
    assert "nested too deeply" in one_line(robot("config", "check", str(path)))


def test_config_check_refuses_a_60_mb_file_without_reading_it(tmp_path):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.write(b"llm:\n  model: x\n")
        # Valid YAML took 30-44 s to parse; these bytes are no UTF-8, so a reader that got to them
        # would say so: the size alone must refuse the file.
        f.write(b"#\xff\xfe\xfd\xfc\xfb padding\n" * 4_000_000)
    err = one_line(robot("config", "check", str(path)))
    assert "file too large: 60000016 bytes" in err


def test_config_check_on_dev_zero_returns_at_once():
    err = one_line(robot("config", "check", "/dev/zero", timeout=30))
    assert "/dev/zero: not a regular file" in err


def test_config_check_of_a_scenario_whose_persona_is_missing(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: x\npersona: no_such_persona.yaml\nturns:\n  - text: hello\n")
    err = one_line(robot("config", "check", str(scenario)))
    assert "line 2: key 'persona'" in err and "no_such_persona.yaml does not exist" in err


def test_config_check_of_a_scenario_checks_its_persona_too(tmp_path):
    persona = tmp_path / "p.yaml"
    persona.write_text("name: A\nrole_prompt: hi\nmax_sentences: 0\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: x\npersona: {persona.name}\nturns:\n  - text: hello\n")
    err = one_line(robot("config", "check", str(scenario)))
    assert str(persona) in err and "key 'max_sentences'" in err


def test_paths_no_system_call_takes_are_one_line(tmp_path):
    """A path far too long for the system, or with a NUL byte in it (found by
    tests/test_property_inputs.py): one line naming the key, not an OSError's traceback."""
    err = one_line(robot("memory", "list", "--db", str(tmp_path / ("a" * 5000))))
    assert "flag --db: key 'memory.db_path'" in err and "File name too long" in err
    path = settings(tmp_path, 'logging:\n  turn_log: "x\\0y"\n')
    err = one_line(robot("config", "check", str(path)))
    assert "line 2: key 'logging.turn_log'" in err and "NUL character" in err


def test_an_llm_url_on_a_plain_web_server_is_refused_at_start(tmp_path):
    """Issue 50, item 13: a plain web server (404 for GET /v1/models, 501 for the POST a reply
    needs) is not an LLM: one line at start, not an apology for every turn."""
    import subprocess

    www = tmp_path / "www"
    www.mkdir()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=www, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/v1"
        err = one_line(robot("chat", "--db", str(tmp_path / "m.sqlite3"),
                             env={"HOME": str(tmp_path), "OPENAI_BASE_URL": url, "ROBOT_LLM_BACKEND": "openai",
                                  "ROBOT_LLM_MODEL": "stub"}))
    finally:
        server.kill()
        server.wait()
    assert err.startswith("LLM error:") and "is not an OpenAI-compatible API" in err, err
    assert "GET /models answered 404 and POST /chat/completions 501" in err


@pytest.mark.parametrize("store", ["postgresql://kiosk:hunter2@db/memory", "postgresql://kiosk@db/memory?password=hunter2",
                                   "mysql://kiosk:hunter2@db/memory"], ids=["user-password", "query-password", "mysql"])
def test_config_check_refuses_a_store_that_chat_would_refuse(tmp_path, store):
    """Issue 50, item 13: `config check` says what `chat` would, and never the password."""
    settings = tmp_path / "settings.yaml"
    settings.write_text(f'memory:\n  store: "{store}"\n')
    err = one_line(robot("config", "check", str(settings)))
    assert "key 'memory.store'" in err and "hunter2" not in err, err
    assert ("password in the memory.store URL is refused" in err) != store.startswith("mysql")


def test_config_show_and_chat_hide_a_password_in_the_query(tmp_path):
    """Issue 50, item 7: a secret query value (sslpassword) is shown as ***."""
    store = "postgresql://kiosk@127.0.0.1:1/memory?sslpassword=hunter2&connect_timeout=1"
    shown = robot("config", "show", env={"HOME": str(tmp_path), "ROBOT_MEMORY_STORE": store})
    assert shown.returncode == 0, shown.stderr
    assert "sslpassword=***&connect_timeout=1" in shown.stdout and "hunter2" not in shown.stdout + shown.stderr
    chat = robot("chat", env={"HOME": str(tmp_path), "ROBOT_MEMORY_STORE": store})
    assert "hunter2" not in chat.stdout + chat.stderr, chat.stderr


@pytest.mark.parametrize("where", ["absolute", "dotdot", "symlink"])
def test_a_knowledge_file_outside_the_persona_folder_is_refused_unread(tmp_path, where):
    """Issue 50, item 9: a persona's knowledge lies in its folder; /etc/passwd is neither read
    nor quoted, however it is named."""
    shop = tmp_path / "shop"
    shop.mkdir()
    secret = tmp_path / "secret.csv"
    secret.write_text("name,notes\nroot-line-4711,private\n")
    given = {"absolute": str(secret), "dotdot": "../secret.csv", "symlink": "inside.csv"}[where]
    if where == "symlink":
        (shop / "inside.csv").symlink_to(secret)
    persona = shop / "persona.yaml"
    persona.write_text(f"name: Shop\nrole_prompt: You help visitors.\nknowledge:\n  files:\n    - {given}\n")
    for argv in (["config", "check", str(persona)], ["chat", "--persona", str(persona), "--db", str(tmp_path / "m.db")]):
        err = one_line(robot(*argv, env={"HOME": str(tmp_path)}))
        assert "key 'knowledge.files[0].path'" in err and "outside the persona's folder" in err, err
        assert "root-line-4711" not in err


@pytest.mark.parametrize("flag", ["--settings", "scenario", "--persona", "--out"])
def test_a_symlink_loop_is_one_line_exit_2(tmp_path, flag):
    """Issue 50, item 12: a symlink loop given for a file is a configuration error, no traceback."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    loop = str(tmp_path / "a.yaml")
    scenario = str(REPO / "config" / "scenarios" / "museum_visit.yaml")
    argv = {"--settings": ["chat", "--settings", loop], "scenario": ["simulate", loop],
            "--persona": ["chat", "--persona", loop], "--out": ["simulate", scenario, "--out", loop]}[flag]
    err = one_line(robot(*argv, env={"HOME": str(tmp_path)}))
    assert loop in err and "cannot" in err, err
