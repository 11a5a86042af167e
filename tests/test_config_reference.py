"""The JSON Schemas (config/schemas/) and docs/configuration.md are generated from the
models and committed: they must be current, every key must say what it is, and the sample
YAML files must point at their schema and pass it."""

import json
import re
import typing
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from config import reference
from config.reference import KINDS, REGENERATE

REPO = Path(__file__).resolve().parents[1]

# Each sample file and the kind of file it is.
SAMPLES = {
    "config/default.yaml": "settings",
    "config/patient_turns.yaml": "settings",
    "docker/settings.yaml": "settings",
    **{str(p.relative_to(REPO)): "persona" for p in sorted((REPO / "config/personas").glob("*.yaml"))},
    **{str(p.relative_to(REPO)): "scenario" for p in sorted((REPO / "config/scenarios").glob("*.yaml"))},
}
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


@pytest.mark.parametrize("path", sorted(reference.generated_files()), ids=lambda p: str(p.relative_to(REPO)))
def test_generated_file_is_current(path):
    expected = reference.generated_files()[path]
    where = path.relative_to(REPO)
    assert path.is_file(), f"{where} is missing: run `.venv/bin/{REGENERATE}` and commit it"
    assert path.read_text(encoding="utf-8") == expected, (
        f"{where} is stale (a model or its description changed): run `.venv/bin/{REGENERATE}` and commit it")


def test_check_flag_says_what_is_stale(tmp_path, monkeypatch, capsys):
    assert reference.main(["--check"]) == 0
    stale_doc = tmp_path / "docs" / "configuration.md"
    stale_doc.parent.mkdir()
    stale_doc.write_text("# old\n")
    monkeypatch.setattr(reference, "REPO", tmp_path)
    monkeypatch.setattr(reference, "DOC", stale_doc)
    assert reference.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "stale: docs/configuration.md" in err and REGENERATE in err
    assert stale_doc.read_text() == "# old\n"  # --check writes nothing


def _models(annotation: object) -> list[type[BaseModel]]:
    """The models inside a field's type: itself, list/dict items, union members, Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in typing.get_args(annotation):
        found += _models(arg)
    return found


def _all_models() -> dict[str, type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    todo = [spec.model for spec in KINDS.values()]
    while todo:
        model = todo.pop()
        if model.__qualname__ in seen:
            continue
        seen[model.__qualname__] = model
        for field in model.model_fields.values():
            todo += _models(field.annotation)
    return seen


def test_the_walk_finds_the_nested_models():
    names = set(_all_models())
    assert {"Settings", "MqttSettings", "Persona", "PersonaMemory", "Scenario", "ScenarioTurn",
            "RoomSettings"} <= names


@pytest.mark.parametrize("name, model", sorted(_all_models().items()))
def test_every_field_and_model_is_described(name, model):
    assert (model.__doc__ or "").strip(), f"{name} has no docstring (its description in the schema)"
    missing = [key for key, field in model.model_fields.items() if not (field.description or "").strip()]
    assert not missing, f"{name}: fields without a description=: {', '.join(missing)}"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_schema_describes_every_key(kind):
    schema = reference.json_schema(kind)
    assert schema["$id"] == f"{kind}.schema.json" and schema["title"] and schema["description"]
    jsonschema.Draft202012Validator.check_schema(schema)

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                assert sub.get("description"), f"{kind}: {where}{key} has no description"
            for key, sub in node.items():
                walk(sub, f"{where}{key}." if key not in ("properties", "$defs") else where)
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(schema, "")
    for name, definition in schema.get("$defs", {}).items():
        assert definition.get("description"), f"{kind}: model {name} has no description"


def test_schemas_hold_nothing_of_this_machine():
    # db_path's real default is the user's data directory: the files say null, as YAML does.
    for spec in KINDS.values():
        text = reference.schema_text(spec.name)
        assert str(Path.home()) not in text
    memory = reference.json_schema("settings")["$defs"]["MemoryStoreSettings"]["properties"]
    assert memory["db_path"]["default"] is None


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_sample_points_at_its_schema_and_passes_it(sample):
    path = REPO / sample
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = MODELINE.match(first)
    assert match, f"{sample}: the first line should be '# yaml-language-server: $schema=<schema path>'"
    schema_file = (path.parent / match.group(1)).resolve()
    assert schema_file.is_file(), f"{sample}: {match.group(1)} does not exist"
    assert schema_file == KINDS[SAMPLES[sample]].schema_file
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
              for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
    assert not errors, f"{sample} fails {schema_file.name}:\n" + "\n".join(errors)


@pytest.mark.parametrize("document, key", [
    ({"llm": {"threads": 0}}, "llm.threads"),
    ({"llm": {"summary_threads": "many"}}, "llm.summary_threads"),
    ({"vad": {"frame_ms": 15}}, "vad.frame_ms"),
    ({"mqtt": {"prot": 1883}}, "mqtt"),
    ({"memory": {"db_path": 3}}, "memory.db_path"),
])
def test_schema_rejects_what_the_models_reject(document, key):
    validator = jsonschema.Draft202012Validator(reference.json_schema("settings"))
    assert [".".join(map(str, e.absolute_path)) for e in validator.iter_errors(document)] == [key]
    with pytest.raises(ValueError):
        KINDS["settings"].model.model_validate(document)


def test_schema_accepts_what_a_file_may_say():
    # "auto" threads and a null db_path are resolved by validators; the schema takes them as written.
    validator = jsonschema.Draft202012Validator(reference.json_schema("settings"))
    document = {"llm": {"threads": "auto", "summary_threads": None}, "stt": {"cpu_threads": 2},
                "memory": {"db_path": None}}
    assert not list(validator.iter_errors(document))
    KINDS["settings"].model.model_validate(document)


def test_page_lists_every_key_once():
    page = reference.reference_markdown()
    intro, *kinds = page.split("\n## ")
    assert len(kinds) == len(KINDS)
    rows = {}
    for spec, text in zip(KINDS.values(), kinds):
        keys = re.findall(r"^\| `([^`]+)` \|", text, flags=re.M)
        assert len(keys) == len(set(keys)), f"{spec.name}: a key listed twice"
        rows[spec.name] = set(keys)
        assert "<" not in re.sub(r"`[^`]*`", "", text), f"{spec.name}: raw HTML in the page"
    settings_keys = {f"{section}.{key}" for section, field in KINDS["settings"].model.model_fields.items()
                     for key in _models(field.annotation)[0].model_fields}
    assert settings_keys <= rows["settings"]
    assert {"name", "memory.fact_words"} <= rows["persona"]
    assert {"turns[].interrupt_after_s", "room.noise_gain"} <= rows["scenario"]


def test_readme_links_the_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/configuration.md)" in readme and REGENERATE in readme


def test_schema_files_are_package_data():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"schemas/*.json"' in pyproject

