"""Generated input for the two doors of the robot (issue 28): configuration files (settings,
persona, scenario) and MQTT commands. Whatever comes in, the answer is the value or one
clear line per problem (`ConfigError`, `CommandRejected`), never another exception.

Hypothesis draws documents shaped like the schema (known keys at every level, with values
of every type: huge, tiny, infinite and not-a-number numbers, paths that are devices or far
too long, text with line breaks and NUL bytes), raw YAML text, and command payloads (JSON
objects with known and unknown fields, any JSON, any bytes).

The suite runs ``EXAMPLES`` (200) of each, derandomized so it is the same run each time
(about 20 s); the issue's 5,000 of each, drawn afresh (6 min 21 s on the 2-core VM):

    HYPOTHESIS_EXAMPLES=5000 .venv/bin/python -m pytest -q tests/test_property_inputs.py
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import string
import tempfile
import typing
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from config.loader import DEFAULT_PERSONA, ConfigError, load_persona, load_scenario, load_settings_file
from config.scenario_schema import Scenario
from config.schema import Persona, Settings
from robot.control.commands import COMMAND_NAMES, DEFAULT_PERSONA_DIR, CommandRejected, parse_command, persona_file

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "200"))
PROPERTY = settings(max_examples=EXAMPLES, derandomize=EXAMPLES < 1000, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FOLDER = Path(tempfile.mkdtemp(prefix="robot-property-"))
atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)

# --- values of every kind --------------------------------------------------------------------

NASTY = ["1e-8", "1e308", ".inf", "-.inf", ".nan", "auto", "en-us", "british", "/dev/zero", "/", "..", "~",
         "a" * 5000, "x\0y", "postgresql://kiosk:secret@db/memory", "sqlite:///", "embedded:tiny.en",
         "line one\nline two", "{{", "[gesture:bow]", str(DEFAULT_PERSONA), "0", "-1", "1e999", "yes", "no"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-10, max_value=10),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e-8, 1e308, -0.0, 2**63, -(2**63)]),
    st.text(max_size=20), st.text(alphabet=string.printable, max_size=40), st.sampled_from(NASTY))
ANY = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=4), max_leaves=12)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found, stack = [], [annotation]
    while stack:
        ann = stack.pop()
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            found.append(ann)
        else:
            stack += typing.get_args(ann)
    return found


def shaped_like(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings whose keys are mostly the model's own, each value of the right shape or not."""
    fields = model.model_fields
    values: dict[str, st.SearchStrategy[Any]] = {}
    for name, field in fields.items():
        nested = _models_in(field.annotation) if depth < 3 else []
        options = [ANY]
        for sub in nested:
            mapping = shaped_like(sub, depth + 1)
            options += [mapping, st.lists(mapping, max_size=3), st.dictionaries(st.text(max_size=6), mapping, max_size=2)]
        values[name] = st.one_of(options)
    known = st.sampled_from(sorted(fields)).flatmap(lambda key: st.tuples(st.just(key), values[key]))
    unknown = st.tuples(st.text(max_size=10), ANY)
    return st.lists(st.one_of(known, known, known, unknown), max_size=8).map(dict)


def as_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


RAW = st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
                st.sampled_from(["a: &x [*x]", "!!python/object/apply:os.system ['true']", "- - - -", "a: b: c",
                                 "x: 1\nx: 2\n", "[" * 3000 + "]" * 3000, "? [a]\n: b", "a: !!binary AAAA"]))


def documents(model: type[BaseModel], base: dict[str, Any] | None = None) -> st.SearchStrategy[str]:
    shaped = shaped_like(model).map(lambda d: as_yaml({**(base or {}), **d}))
    return st.one_of(shaped, shaped, shaped, RAW)


def loads_or_says_why(loader: Any, text: str, name: str) -> None:
    path = FOLDER / name
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        loader(path)
    except ConfigError as exc:
        assert exc.problems, "a rejection names its problems"
        for problem in exc.problems:
            assert problem.strip() and "\n" not in problem and "\r" not in problem, f"not one line: {problem!r}"
            assert "Traceback" not in problem


@PROPERTY
@given(documents(Settings))
def test_settings_files(text):
    loads_or_says_why(load_settings_file, text, "settings.yaml")


@PROPERTY
@given(documents(Persona, {"name": "A", "role_prompt": "You help."}))
def test_persona_files(text):
    loads_or_says_why(load_persona, text, "persona.yaml")


@PROPERTY
@given(documents(Scenario, {"name": "s", "persona": str(DEFAULT_PERSONA), "turns": [{"text": "hi"}]}))
def test_scenario_files(text):
    loads_or_says_why(load_scenario, text, "scenario.yaml")


# --- MQTT commands -----------------------------------------------------------------------------

FIELDS = ["command", "id", "text", "remember", "path", "user", "visitor"]
COMMANDS = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8),
                           ANY | st.sampled_from([*COMMAND_NAMES, "dance", "../../etc/passwd", "/etc/passwd",
                                                  "travel_agent", "a\0b", "x" * 300]), max_size=5)
PAYLOADS = st.one_of(
    COMMANDS.map(lambda d: json.dumps(d).encode()),
    COMMANDS.map(lambda d: {**d, "command": d.get("command", "say")}).map(lambda d: json.dumps(d).encode()),
    ANY.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300),
    st.sampled_from([b"", b"{", b"null", b"[" * 3000 + b"]" * 3000, b'{"command": "say", "text": "\\ud800"}',
                     b"\xff\xfe{}", b'{"command": "say", "text": "hi", "text": "twice"}', b"1e999999"]))


@PROPERTY
@given(PAYLOADS)
def test_mqtt_commands(payload):
    try:
        command = parse_command(payload, 4096)
        if command.command == "persona":
            persona_file(command.path, DEFAULT_PERSONA_DIR)  # where a persona command may load from
    except CommandRejected as exc:
        assert exc.reason.strip() and "\n" not in exc.reason and "\r" not in exc.reason, repr(exc.reason)
