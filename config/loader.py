"""Load YAML, validate it, and on failure say which file, which key and which line.

A ``ConfigError`` carries one readable message per problem; the CLI prints them and
exits non-zero before anything starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from config.schema import Persona, Scenario, Settings

CONFIG_DIR = Path(__file__).resolve().parent
DEFAULT_SETTINGS = CONFIG_DIR / "default.yaml"
DEFAULT_PERSONA = CONFIG_DIR / "personas" / "travel_agent.yaml"

M = TypeVar("M", bound=BaseModel)


class ConfigError(Exception):
    """A config file is missing, unreadable, not YAML, or does not fit the schema."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__("\n".join(f"{path}: {p}" for p in problems))


def _node_at(root: yaml.Node | None, loc: tuple[Any, ...]) -> yaml.Node | None:
    """The YAML node a pydantic error location points at: the key itself for a mapping
    entry (its line is where a reader looks), the item for a list entry, or the deepest
    parent that exists (for a missing key)."""
    node, marker = root, root
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if match is None:
                return marker
            marker, node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            marker = node = node.value[part]
        else:
            return marker
    return marker


def _read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    if not path.is_file():
        raise ConfigError(path, ["file not found"])
    try:
        text = path.read_text(encoding="utf-8")
        return yaml.safe_load(text), yaml.compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(path, [f"{where}broken YAML: {exc.problem or exc}"]) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(path, [f"cannot read: {exc}"]) from None


def validate_file(path: Path | str, model: type[M]) -> M:
    path = Path(path)
    data, root = _read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, ["line 1: the file must hold a mapping of keys"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            key = ".".join(str(p) for p in loc) or "(top level)"
            node = _node_at(root, loc)
            line = f"line {node.start_mark.line + 1}: " if node is not None else ""
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            problems.append(f"{line}key '{key}': {msg}")
        raise ConfigError(path, problems) from None


def load_settings(path: Path | str | None = None) -> Settings:
    """Settings from a YAML file (the packaged defaults if None), then the environment."""
    settings = validate_file(path or DEFAULT_SETTINGS, Settings)
    env = os.environ
    if env.get("OPENAI_BASE_URL"):
        settings.llm.base_url = env["OPENAI_BASE_URL"]
    if env.get("OPENAI_API_KEY"):
        settings.llm.api_key = env["OPENAI_API_KEY"]
    if env.get("ROBOT_LLM_MODEL"):
        settings.llm.model = env["ROBOT_LLM_MODEL"]
    if env.get("ROBOT_LLM_BACKEND") in ("embedded", "openai"):
        settings.llm.backend = env["ROBOT_LLM_BACKEND"]  # type: ignore[assignment]
    if env.get("MQTT_USERNAME"):
        settings.mqtt.username = env["MQTT_USERNAME"]
    if env.get("MQTT_PASSWORD"):
        settings.mqtt.password = env["MQTT_PASSWORD"]
    return settings


def load_persona(path: Path | str) -> Persona:
    return validate_file(path, Persona)


def load_scenario(path: Path | str) -> Scenario:
    """A scenario, with its relative paths resolved against the scenario file's folder."""
    path = Path(path)
    scenario = validate_file(path, Scenario)
    base = path.resolve().parent

    def resolve(p: Path | None) -> Path | None:
        return p if p is None or p.is_absolute() else (base / p).resolve()

    scenario.persona = resolve(scenario.persona)  # type: ignore[assignment]
    scenario.settings = resolve(scenario.settings)
    scenario.noise_wav = resolve(scenario.noise_wav)
    for turn in scenario.turns:
        turn.wav = resolve(turn.wav)
    return scenario
