"""The JSON Schemas of the configuration files and the reference page docs/configuration.md,
both generated from the pydantic models (config/schema.py, config/scenario_schema.py): the
`description=` of each field is the one text an editor shows and the page lists.

    python -m config.reference           # write config/schemas/*.schema.json and docs/configuration.md
    python -m config.reference --check   # exit 1, naming them, if any of them is stale

A YAML file whose first line is ``# yaml-language-server: $schema=<path to its schema>`` gets
completion, hover text and checks in editors that use yaml-language-server.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, NoDefault

from config.scenario_schema import Scenario
from config.schema import Persona, Settings

CONFIG_DIR = Path(__file__).resolve().parent
SCHEMA_DIR = CONFIG_DIR / "schemas"
REPO = CONFIG_DIR.parent
DOC = REPO / "docs" / "configuration.md"
REGENERATE = "python -m config.reference"
DRAFT = "https://json-schema.org/draft/2020-12/schema"  # what pydantic's output follows


@dataclass(frozen=True)
class FileKind:
    name: str  # settings, persona, scenario: also the schema file's stem
    model: type[BaseModel]
    heading: str  # on the page; the schema's title is "kiosk-robot <heading, lower case>"
    files: str  # where such files are, for the page

    @property
    def schema_file(self) -> Path:
        return SCHEMA_DIR / f"{self.name}.schema.json"


KINDS: dict[str, FileKind] = {k.name: k for k in (
    FileKind("settings", Settings, "Settings", "`config/default.yaml`, or the file given with `--settings FILE`"),
    FileKind("persona", Persona, "Persona", "`config/personas/*.yaml`"),
    FileKind("scenario", Scenario, "Simulation scenario", "`config/scenarios/*.yaml`, run by `robot simulate`"),
)}


class _Generator(GenerateJsonSchema):
    def get_default_value(self, schema: Any) -> Any:
        default = super().get_default_value(schema)
        # A section's default is its keys' defaults, which they carry themselves.
        return NoDefault if isinstance(default, BaseModel) else default


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one kind of file: "settings", "persona" or "scenario".
    ``$id`` is the schema's file name, so it resolves to wherever the file is read from."""
    spec = KINDS[kind]
    body = spec.model.model_json_schema(schema_generator=_Generator)
    body.pop("title", None)
    return {"$schema": DRAFT, "$id": spec.schema_file.name, "title": f"kiosk-robot {spec.heading.lower()}",
            "description": body.pop("description", ""), **body}


def schema_text(kind: str) -> str:
    """``json_schema(kind)`` as the text of its file in config/schemas/."""
    return json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n"


# --- the Markdown page -------------------------------------------------------------------


def _text(text: str) -> str:
    """A description as one line of Markdown: outside `code`, no HTML tag or emphasis."""
    parts = " ".join(text.split()).split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = parts[i].replace("<", "&lt;").replace("*", "\\*")
    return "`".join(parts)


def _cell(text: str) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return _text(text).replace("|", "\\|")


def _value(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _range(node: dict[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and high is not None:
        return f"{_number(low)} to {_number(high)}"
    bounds = [f"{sign} {_number(node[key])}" for key, sign in
              (("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
              if key in node]
    return ", ".join(bounds)


class _Page:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        return self.defs[ref.rsplit("/", 1)[-1]] if ref else node

    def type_of(self, node: dict[str, Any]) -> str:
        if "$ref" in node:
            return "mapping"
        if "anyOf" in node:
            return " or ".join(self.type_of(option) for option in node["anyOf"])
        if "const" in node:
            return _value(node["const"])
        if "enum" in node:
            return "one of " + ", ".join(_value(v) for v in node["enum"])
        kind = node.get("type")
        if kind == "array":
            text = f"list of {self.type_of(node.get('items', {}))}"
            return text + (f", at least {node['minItems']}" if "minItems" in node else "")
        if kind == "object":
            keys = node.get("propertyNames", {}).get("enum")
            key_text = ", ".join(_value(k) for k in keys) if keys else "string"
            return f"mapping of {key_text} to {self.type_of(node.get('additionalProperties', {}))}"
        if kind == "string":
            if node.get("format") == "path":
                return "path"
            text = "string"
            if "pattern" in node:
                text += f" matching `{node['pattern']}`"
            if node.get("minLength") == 1:
                text = "non-empty " + text
            return text
        if kind in ("integer", "number"):
            bounds = _range(node)
            return f"{kind} ({bounds})" if bounds else kind
        if kind == "boolean" or kind == "null":
            return kind
        return "any"

    def nested(self, key: str, node: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The models inside a key's value: (dotted path, model schema)."""
        if "$ref" in node:
            return [(key, self.resolve(node))]
        found: list[tuple[str, dict[str, Any]]] = []
        for option in node.get("anyOf", []):
            found += self.nested(key, option)
        if isinstance(node.get("items"), dict):
            found += self.nested(f"{key}[]", node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            found += self.nested(f"{key}.<name>", node["additionalProperties"])
        return found

    def sections(self, path: str, model: dict[str, Any], level: int) -> list[str]:
        required = set(model.get("required", []))
        rows, below = [], []
        for key, node in model.get("properties", {}).items():
            dotted = f"{path}.{key}" if path else key
            if "default" in node:
                default = _value(node["default"])
            else:
                default = "required" if key in required else "—"
            inside = self.nested(dotted, node)
            kind = self.type_of(node) + ("; keys below" if inside else "")
            rows.append(f"| `{dotted}` | {_cell(kind)} | {default} | {_cell(node.get('description', ''))} |")
            below += inside
        lines = []
        if path:
            lines += [f"{'#' * level} `{path}`", ""]
            if model.get("description"):
                lines += [_text(model["description"]), ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|", *rows, ""]
        for sub_path, sub_model in below:
            lines += self.sections(sub_path, sub_model, level + 1)
        return lines


_INTRO = f"""\
# Configuration reference

Every key of the robot's three kinds of YAML file: settings, personas and simulation
scenarios. This page and the JSON Schemas in `config/schemas/` are generated from the
pydantic models (`config/schema.py`, `config/scenario_schema.py`), whose `description=` of
each field is the text below. Do not edit this page by hand: change the model and run
`.venv/bin/{REGENERATE}` (with `--check` it only says whether anything is stale;
`tests/test_config_reference.py` fails when something is).

Editors: a YAML file whose first line is
`# yaml-language-server: $schema=<path to the schema>` (relative to the file) gets
completion, descriptions on hover and checks of types, ranges and unknown keys in any
editor that uses yaml-language-server (VS Code's YAML extension, Neovim, Helix, ...). The
sample files carry that line. The robot checks more when it loads a file (that paths
exist, that voices are installed, rules between keys such as `llm.filler_after_s` below
`llm.give_up_after_s`), and names the key and line of each problem.

In the tables a key's path is dotted (`llm.model` is `model:` inside `llm:`);
`[]` marks the items of a list. Every key is optional unless its default says "required".
Every number has the range shown in its type, checked when the file is loaded; `.inf` and
`.nan` are no number here (a timer of `1e308` seconds or a timeout of `1e-8` would load and
then freeze the robot or turn every reply into the apology).
"""


def reference_markdown() -> str:
    """The text of docs/configuration.md."""
    lines = [_INTRO]
    for spec in KINDS.values():
        schema = json_schema(spec.name)
        relative = f"config/schemas/{spec.schema_file.name}"
        lines += [f"## {spec.heading}", "",
                  _text(schema.get("description", "")), "",
                  f"Files: {spec.files}. JSON Schema: `{relative}`.", ""]
        lines += _Page(schema).sections("", schema, 2)
    return "\n".join(lines).rstrip("\n") + "\n"


# --- the generated files -----------------------------------------------------------------


def generated_files() -> dict[Path, str]:
    """Every generated file and the text it should have now."""
    files = {spec.schema_file: schema_text(spec.name) for spec in KINDS.values()}
    files[DOC] = reference_markdown()
    return files


def stale_files() -> list[Path]:
    """The generated files that are missing or differ from what the models give now."""
    return [path for path, text in generated_files().items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def write_files() -> list[Path]:
    """Write the stale generated files; returns them."""
    stale = stale_files()
    files = generated_files()
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path], encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.reference", description=(
        "Write the configuration files' JSON Schemas (config/schemas/) and docs/configuration.md "
        "from the pydantic models."))
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is stale")
    args = parser.parse_args(argv)
    if not DOC.parent.is_dir():
        print(f"{parser.prog}: no {DOC.parent} beside {CONFIG_DIR}: run it in a source checkout", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(REPO)}", file=sys.stderr)
        if stale:
            print(f"regenerate with: .venv/bin/{REGENERATE}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_files():
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
