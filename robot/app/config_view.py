"""What ``robot config show`` prints and what ``robot config check`` validates.

``show`` prints the merged settings as YAML, each value followed by the layer it came from
(the built-in default, config/default.yaml, a --settings file, an environment variable, a
flag). Secrets (the LLM's API key, the broker's password, the console's token) are never
printed: only whether they are set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from robot.core.redact import hide_url_password
from config.loader import ConfigError, LayeredSettings, load_persona, load_scenario, load_settings_file, read_mapping

SECRETS = frozenset({"llm.api_key", "mqtt.password", "console.token"})
COMMENT_COLUMN = 44


def render_layered(layered: LayeredSettings) -> str:
    files = " <- ".join(str(p) for p in layered.files[1:]) or "none"
    lines = ["# built-in defaults <- config/default.yaml <- --settings files <- environment <- flags",
             f"# --settings files: {files}"]
    lines += _lines(layered.settings.model_dump(mode="json"), layered, "", 0)
    return "\n".join(lines)


def _lines(data: dict[str, Any], layered: LayeredSettings, prefix: str, depth: int) -> list[str]:
    out: list[str] = []
    indent = "  " * depth
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and dotted not in SECRETS:
            out.append(f"{indent}{key}:")
            out += _lines(value, layered, dotted + ".", depth + 1)
            continue
        if dotted in SECRETS:
            value = "(set, hidden)" if value else None
        elif isinstance(value, str):
            value = hide_url_password(value)  # a memory.store or base_url with a password in it
        text = f"{indent}{key}: {_scalar(value)}"
        out.append(f"{text:<{COMMENT_COLUMN}} # {layered.source(dotted)}")
    return out


def _scalar(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()


def check_file(path: Path) -> str:
    """Validate a settings, persona or scenario file (told apart by their keys); what it is.
    Read with the loader's own limits (size, depth, a regular file): a 60 MB file, a deeply
    nested one or /dev/zero is refused at once. A scenario's persona and settings files are
    checked with it."""
    keys = set(read_mapping(path))
    if "turns" in keys:
        scenario = load_scenario(path)
        load_persona(scenario.persona)  # the robot would load it first thing
        if scenario.settings is not None:
            load_settings_file(scenario.settings)
        return f"scenario {scenario.name!r}, {len(scenario.turns)} turns"
    if "role_prompt" in keys or "name" in keys:
        persona = load_persona(path)  # its knowledge files too: a problem names that file and line
        knowledge = f", {len(persona.knowledge.entries)} knowledge entries" if persona.knowledge else ""
        return f"persona {persona.name}, language {persona.language}{knowledge}"
    settings = load_settings_file(path)
    _store_problem(path, settings.memory.store)
    return "settings"


def _store_problem(path: Path, store: str | None) -> None:
    """What `chat` would refuse of ``memory.store`` (another scheme, a password in the URL),
    refused here too: a check that passes must mean the robot starts."""
    from memory.stores.location import StoreLocationError, parse_location

    if store:
        try:
            parse_location(store)
        except StoreLocationError as exc:
            raise ConfigError(path, [f"key 'memory.store': {exc}"]) from None

