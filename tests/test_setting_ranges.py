"""Every number a settings, persona or scenario file may hold has a range, checked at load
(issue 28, item 1): a setting that froze the robot (`session.idle_timeout_s: 1e-8`), ran
with an endless timer (`update_interval_s: .inf` or `1e308`) or made every reply the
apology (`llm.timeout_s: 1e-8`) is refused by `robot config check` with one line and exit
status 2. And the idle-timeout watcher never spins, whatever its timeout."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import annotated_types
import pytest
from pydantic import BaseModel

from config.scenario_schema import Scenario
from config.schema import Persona, Settings

REPO = Path(__file__).resolve().parents[1]


def _numbers(model: type[BaseModel], prefix: str = "") -> typing.Iterator[tuple[str, list[object]]]:
    """(dotted key, constraints) of every int or float a file may give, nested models included."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        stack: list[object] = [field.annotation]
        constraints = list(field.metadata)
        while stack:
            ann = stack.pop()
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                yield from _numbers(ann, key + ".")
            elif ann in (int, float):
                yield key, constraints
            elif typing.get_origin(ann) is typing.Annotated:
                inner, *meta = typing.get_args(ann)
                if inner in (int, float):
                    yield key, constraints + [m for extra in meta for m in getattr(extra, "metadata", [extra])]
                else:
                    stack.append(inner)
            else:
                stack += [a for a in typing.get_args(ann) if a is not type(None) and a is not str]


@pytest.mark.parametrize("model", [Settings, Persona, Scenario], ids=lambda m: m.__name__)
def test_every_number_has_a_lower_and_an_upper_bound(model):
    found = list(_numbers(model))
    assert len(found) > 10
    open_ended = [key for key, constraints in found
                  if not any(isinstance(c, (annotated_types.Ge, annotated_types.Gt)) for c in constraints)
                  or not any(isinstance(c, (annotated_types.Le, annotated_types.Lt)) for c in constraints)]
    assert not open_ended, f"numbers without a range: {open_ended}"


def config_check(tmp_path: Path, name: str, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / name
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "robot.app.cli", "config", "check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


# The probes, and their kin: each was accepted before.
PROBES = [
    ("settings.yaml", "session:\n  idle_timeout_s: 1e-8\n", "line 2: key 'session.idle_timeout_s'"),
    ("settings.yaml", "llm:\n  timeout_s: 1e-8\n", "line 2: key 'llm.timeout_s'"),
    ("persona.yaml", "name: A\nrole_prompt: hi\nmemory:\n  update_interval_s: .inf\n",
     "line 4: key 'memory.update_interval_s': Input should be a finite number"),
    ("persona.yaml", "name: A\nrole_prompt: hi\nmemory:\n  update_interval_s: 1e308\n",
     "line 4: key 'memory.update_interval_s': Input should be less than or equal to 86400"),
    ("settings.yaml", "memory:\n  retention_days: .nan\n", "key 'memory.retention_days'"),
    ("settings.yaml", "mqtt:\n  queue_size: 1000000000000\n", "key 'mqtt.queue_size'"),
    ("settings.yaml", "llm:\n  timeout_s: 5\n  first_token_timeout_s: 20\n", "first_token_timeout_s must not exceed"),
]


@pytest.mark.parametrize("name,text,error", PROBES, ids=[p[1].split("\n")[-2].strip() for p in PROBES])
def test_a_number_out_of_range_is_one_line_and_status_2(tmp_path, name, text, error):
    run = config_check(tmp_path, name, text)
    assert run.returncode == 2, run.stdout + run.stderr
    assert error in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr


def test_the_idle_watcher_never_spins(tmp_path):
    """Sessions built directly (the schema would refuse the timeout): a tiny timeout and a
    turn that never ends. Before, the watcher looped without awaiting and the event loop
    froze; now it checks once a second and the loop stays free."""
    script = textwrap.dedent("""
        import asyncio, time
        from memory.core.clock import SystemClock
        from robot.core.events import RecordingPublisher
        from robot.dialogue.sessions import Sessions

        class Memory:  # a visitor is talking
            visitor = "card-1"
            async def end(self): pass

        async def main():
            sessions = Sessions(Memory(), RecordingPublisher(), SystemClock(), idle_timeout_s=1e-8,
                                busy=lambda: True)
            sessions.start_watching()
            cpu, ticks, start = time.process_time(), 0, time.monotonic()
            while time.monotonic() - start < 1.5:
                await asyncio.sleep(0.01)
                ticks += 1
            print(ticks, time.process_time() - cpu)
            sessions._watcher.cancel()

        asyncio.run(main())
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr[-2000:]
    ticks, cpu_s = run.stdout.split()
    assert int(ticks) > 50  # the loop ran other tasks all along
    assert float(cpu_s) < 0.5  # and did not burn a core (it spun at 100 % before)
