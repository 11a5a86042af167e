"""One real simulation with the console on for each console test file that needs one:
``robot simulate tests/console/scenario.yaml --console 127.0.0.1:PORT`` in a subprocess
(embedded LLM, real VAD/Whisper/espeak-ng, real time), with a console token set.

Per file, not per session: test_http.py ends the visitor's session in its simulation, and under
pytest-xdist the files reach a worker in no fixed order, so a simulation shared with
test_browser.py left it a simulation already past the turns it follows."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TOKEN = "console-test-token-4711"
START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningSimulation:
    url: str
    out: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def request(self, path: str, *, token: str | None = TOKEN, data: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, bytes]:
        """(status, body) of one request; ``token`` goes in an Authorization header."""
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url.rstrip("/") + path, data=data, headers=all_headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                # the event stream never ends: its first line is enough
                body = response.readline() if path.startswith("/api/events") else response.read()
                return response.status, body
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def status(self) -> dict:
        code, body = self.request("/api/status")
        assert code == 200, body
        return json.loads(body)

    def turns(self) -> list[dict]:
        path = self.out / "turns.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def console_sim(tmp_path_factory) -> RunningSimulation:
    base = tmp_path_factory.mktemp("console_sim")
    out = base / "out"  # the simulation's own folder: it refuses one holding other files
    port = free_port()
    log = base / "robot.log"
    env = {**os.environ, "ROBOT_CONSOLE_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "robot", "simulate", str(HERE / "scenario.yaml"),
                                 "--out", str(out), "--console", f"127.0.0.1:{port}"],
                                cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
    sim = RunningSimulation(f"http://127.0.0.1:{port}/", out, proc, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the simulation exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the console did not open within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
    yield sim
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)
    return result
