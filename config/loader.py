"""Load YAML, validate it, and on failure say which file, which key and which line.

A ``ConfigError`` carries one readable message per problem; the CLI prints them and
exits non-zero before anything starts.

Settings come in layers, each overriding the one before key by key: the schema's built-in
defaults <- config/default.yaml <- the ``--settings`` files (several allowed, later wins)
<- the environment (``EnvOverrides``) <- command-line flags. A partial file changes only
the keys it names. ``load_layered_settings`` also says where each value came from
(``robot config show``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Literal, Mapping, Sequence, TypeVar, get_args

import yaml
from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from config import checks
from config.scenario_schema import Scenario
from config.schema import Persona, Settings

CONFIG_DIR = Path(__file__).resolve().parent
DEFAULT_SETTINGS = CONFIG_DIR / "default.yaml"
DEFAULT_PERSONA = CONFIG_DIR / "personas" / "travel_agent.yaml"

M = TypeVar("M", bound=BaseModel)


ENVIRONMENT = "environment"  # the "file" a ConfigError names for a bad environment variable
_TOO_DEEP = "nested too deeply to be a configuration file"


class ConfigError(Exception):
    """A config file is missing, unreadable, not YAML, or does not fit the schema; or an
    environment variable does not (then ``path`` is ``ENVIRONMENT``)."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = path
        # one line each, whatever the text quoted (a YAML error's context, a path with a line break)
        self.problems = [" ".join(problem.split()) for problem in problems]
        super().__init__("\n".join(f"{path}: {p}" for p in problems))


def resolved(path: Path) -> Path:
    """``path.resolve()``, or a ConfigError naming it: a symlink loop raises RuntimeError
    (Python 3.11), which would otherwise end the robot in a traceback."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(path, [f"cannot read: {exc}"]) from None


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
    if problem := checks.unusable_path_problem(path):
        raise ConfigError(checks.shown_path(path), [f"cannot read: {problem}"])
    if not path.is_file():
        # /dev/zero, a pipe or a directory would never end or make no sense: refused unread
        raise ConfigError(path, ["not a regular file" if path.exists() else "file not found"])
    try:
        if too_big := checks.size_problem(path):
            raise ConfigError(path, [too_big])
        text = checks.read_small(path)
        return yaml.load(text, Loader=checks.UniqueKeyLoader), yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise ConfigError(path, [_TOO_DEEP]) from None
    except checks.FileTooLarge as exc:
        raise ConfigError(path, [str(exc)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(path, [f"{where}broken YAML: {exc.problem or exc}"]) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(path, [f"cannot read: {exc}"]) from None


def _placed(root: yaml.Node | None, loc: tuple[Any, ...], msg: str) -> str:
    key = ".".join(str(p) for p in loc) or "(top level)"
    node = _node_at(root, loc)
    line = f"line {node.start_mark.line + 1}: " if node is not None else ""
    return f"{line}key '{key}': {msg}"


def read_mapping(path: Path | str) -> dict[str, Any]:
    """A configuration file's keys and values, read with the loader's limits (size, depth,
    duplicate keys, a regular file); ConfigError naming the problem."""
    return _read_mapping(Path(path))[0]


def _read_mapping(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    data, root = _read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, ["line 1: the file must hold a mapping of keys"])
    return data, root


def validate_file(path: Path | str, model: type[M],
                  extra_checks: Callable[[M], list[checks.Problem]] | None = None) -> M:
    """The file validated against ``model``; then ``extra_checks`` (paths, voices: what
    the schema cannot see) on the result. Every problem names its key and line."""
    path = Path(path)
    data, root = _read_mapping(path)
    result = _validated(path, model, data, root)
    if extra_checks is not None and (found := extra_checks(result)):
        raise ConfigError(path, [_placed(root, loc, msg) for loc, msg in found])
    return result


def _validated(path: Path, model: type[M], data: dict[str, Any], root: yaml.Node | None) -> M:
    """``data`` (read from ``path``, parsed into ``root``) validated; its problems placed."""
    try:
        return model.model_validate(data)
    except RecursionError:
        raise ConfigError(path, [_TOO_DEEP]) from None
    except ValidationError as exc:
        problems = [_placed(root, tuple(err["loc"]),
                            "unknown key" if err["type"] == "extra_forbidden" else err["msg"])
                    for err in exc.errors()]
        raise ConfigError(path, problems) from None


class EnvOverrides(BaseSettings):
    """The environment variables that override the settings file, by these exact names.
    Unset or empty means "keep the file's value". Secrets are ``SecretStr``: no repr, str
    or log shows them."""

    model_config = SettingsConfigDict(case_sensitive=True, env_ignore_empty=True, extra="ignore", frozen=True)

    base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    model: str | None = Field(None, validation_alias="ROBOT_LLM_MODEL")
    backend: Literal["embedded", "openai"] | None = Field(None, validation_alias="ROBOT_LLM_BACKEND")
    mqtt_username: str | None = Field(None, validation_alias="MQTT_USERNAME")
    mqtt_password: SecretStr | None = Field(None, validation_alias="MQTT_PASSWORD")
    console_token: SecretStr | None = Field(None, validation_alias="ROBOT_CONSOLE_TOKEN")
    memory_store: str | None = Field(None, validation_alias="ROBOT_MEMORY_STORE")  # a fleet's database URL

    # where each value goes in Settings
    TARGETS: ClassVar[dict[str, tuple[str, str]]] = {
        "base_url": ("llm", "base_url"),
        "api_key": ("llm", "api_key"),
        "model": ("llm", "model"),
        "backend": ("llm", "backend"),
        "mqtt_username": ("mqtt", "username"),
        "mqtt_password": ("mqtt", "password"),
        "console_token": ("console", "token"),
        "memory_store": ("memory", "store"),
    }

    @classmethod
    def read(cls) -> "EnvOverrides":
        """The overrides in ``os.environ``; ConfigError naming the variable if one is invalid."""
        try:
            return cls()
        except ValidationError as exc:
            raise ConfigError(ENVIRONMENT, [_env_problem(err) for err in exc.errors()]) from None

    def apply(self, settings: Settings, sources: dict[str, str] | None = None) -> Settings:
        """Set each variable that is set on ``settings`` (validated by the schema as it goes);
        ``sources`` records ``section.key -> "environment VARIABLE"``."""
        for name in sorted(self.model_fields_set):
            value = getattr(self, name)
            if value is None:
                continue
            section, key = self.TARGETS[name]
            variable = type(self).model_fields[name].validation_alias
            try:
                setattr(getattr(settings, section), key,
                        value.get_secret_value() if isinstance(value, SecretStr) else value)
            except ValidationError as exc:
                raise ConfigError(ENVIRONMENT, [f"variable {variable}: {exc.errors()[0]['msg']}"]) from None
            if sources is not None:
                sources[f"{section}.{key}"] = f"environment {variable}"
        return settings


# never echoed in an error, even when invalid: the variables of the SecretStr fields
_SECRET_VARIABLES = frozenset(field.validation_alias for field in EnvOverrides.model_fields.values()
                              if SecretStr in get_args(field.annotation))


def _env_problem(err: Any) -> str:
    variable = ".".join(str(p) for p in err["loc"])
    got = "" if variable in _SECRET_VARIABLES else f" (got {err['input']!r})"
    return f"variable {variable}: {err['msg']}{got}"


BUILT_IN = "built-in default"
SettingsFiles = Path | str | Sequence[Path | str] | None


@dataclass
class LayeredSettings:
    """The merged settings and, for every key, the layer its value came from."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)  # "mqtt.port" -> "site.yaml", "flag --db", ...
    files: list[Path] = field(default_factory=list)  # the settings files, in the order applied

    def source(self, key: str) -> str:
        return self.sources.get(key, BUILT_IN)


def load_settings(paths: SettingsFiles = None, flags: Mapping[str, Any] | None = None) -> Settings:
    """config/default.yaml, then each of ``paths`` (a file or several; later wins), then the
    environment (``EnvOverrides``: OPENAI_BASE_URL, OPENAI_API_KEY, ROBOT_LLM_MODEL,
    ROBOT_LLM_BACKEND, MQTT_USERNAME, MQTT_PASSWORD, ROBOT_CONSOLE_TOKEN,
    ROBOT_MEMORY_STORE), then ``flags`` (dotted key -> value, e.g. ``{"mqtt.enabled": True}``)."""
    return load_layered_settings(paths, flags).settings


def load_layered_settings(paths: SettingsFiles = None, flags: Mapping[str, Any] | None = None,
                          flag_names: Mapping[str, str] | None = None) -> LayeredSettings:
    """``load_settings`` with where each value came from; ``flag_names`` names each flag's
    key as the user typed it (``{"memory.store": "--db"}``)."""
    files = [DEFAULT_SETTINGS] + [Path(p) for p in _as_list(paths) if resolved(Path(p)) != DEFAULT_SETTINGS]
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    roots: dict[str, tuple[Path, yaml.Node | None]] = {}
    for path in files:
        data, root = _read_mapping(path)
        _validated(path, Settings, data, root)  # each file alone: its own mistakes named with their lines
        _merge(merged, data)
        for key in _leaf_keys(data):
            sources[key], roots[key] = _shown(path), (path, root)
    settings = _merged_settings(merged, files)
    EnvOverrides.read().apply(settings, sources)
    for key, value in (flags or {}).items():
        _set_flag(settings, key, value)
        sources[key] = f"flag {(flag_names or {}).get(key, key)}"
    if found := checks.settings_problems(settings):
        raise _placed_problems(found, sources, roots)
    return LayeredSettings(settings, sources, files)


def _as_list(paths: SettingsFiles) -> list[Path | str]:
    if paths is None:
        return []
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


def _shown(path: Path) -> str:
    return "config/default.yaml" if path == DEFAULT_SETTINGS else str(path)


def _merge(into: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """Key by key: a mapping merges into the mapping below it; anything else replaces it."""
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _leaf_keys(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaf_keys(value, dotted + ".")
        else:
            yield dotted


def _merged_settings(merged: dict[str, Any], files: list[Path]) -> Settings:
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:  # each file was valid alone: a combination is not
        names = " + ".join(_shown(p) for p in files)
        raise ConfigError(names, [f"key '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors()]) from None


def _set_flag(settings: Settings, key: str, value: Any) -> None:
    *sections, name = key.split(".")
    target: Any = settings
    for section in sections:
        target = getattr(target, section)
    try:
        setattr(target, name, value)
    except ValidationError as exc:
        raise ConfigError("command line", [f"{key}: {exc.errors()[0]['msg']}"]) from None


def _placed_problems(found: list[checks.Problem], sources: dict[str, str],
                     roots: dict[str, tuple[Path, yaml.Node | None]]) -> ConfigError:
    """What the schema cannot see (a path, a voice), each named in the layer that set its key."""
    def layer(loc: tuple[object, ...]) -> tuple[Path | str, yaml.Node | None]:  # the file (and its YAML) or layer
        key = ".".join(map(str, loc))
        source = sources.get(key, BUILT_IN)
        if key in roots and _shown(roots[key][0]) == source:
            return roots[key]
        return source, None  # a flag or a variable set it last, not the file that set it before

    return ConfigError(layer(found[0][0])[0], [_placed(layer(loc)[1], loc, msg) for loc, msg in found])


def load_settings_file(path: Path | str) -> Settings:
    """One settings file over config/default.yaml, checked as the robot would use it."""
    return load_layered_settings([path]).settings


def load_persona(path: Path | str) -> Persona:
    """A persona, with its knowledge files read (paths relative to the persona file): a
    problem in one names that file and its line."""
    path = Path(path)
    persona = validate_file(path, Persona, checks.persona_problems)
    if persona.knowledge is not None:
        persona.knowledge._entries = tuple(load_persona_knowledge(persona, path))
        persona.knowledge._base = resolved(path).parent
    return persona


def load_persona_knowledge(persona: Persona, path: Path) -> list[Any]:
    """The entries of ``persona``'s knowledge files (``config.knowledge.KnowledgeEntry``)."""
    from config.knowledge import KnowledgeError, KnowledgeFileSpec, load_knowledge

    if persona.knowledge is None:
        return []
    base = resolved(path).parent
    specs = [KnowledgeFileSpec(_inside(base, f.path, path, index), f.say)
             for index, f in enumerate(persona.knowledge.files)]
    try:
        return load_knowledge(specs)
    except KnowledgeError as exc:
        raise ConfigError(exc.path, [f"{f'line {exc.line}: ' if exc.line else ''}{exc.message}"]) from None


def _inside(base: Path, given: Path, persona_file: Path, index: int) -> Path:
    """``given`` (relative to the persona's folder), resolved, if it lies in that folder.
    A persona file may come from anyone who can write one (a `persona` command, a shop's
    USB stick): its knowledge must not read /etc/passwd, by an absolute path, ``..`` or a
    symlink that leaves the folder. Nothing of the file is read or shown before this."""
    key = f"knowledge.files[{index}].path"
    try:
        resolved = (base / given).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ConfigError(persona_file, [f"key '{key}': cannot resolve {str(given)!r}: {exc}"]) from None
    if not resolved.is_relative_to(base):
        raise ConfigError(persona_file, [
            f"key '{key}': {str(given)!r} is outside the persona's folder {base} (a knowledge file must "
            "lie in that folder or below it; copy it there)"])
    return resolved


def load_scenario(path: Path | str) -> Scenario:
    """A scenario, with its relative paths resolved against the scenario file's folder."""
    path = Path(path)
    base = resolved(path).parent
    scenario = validate_file(path, Scenario, lambda s: checks.scenario_problems(s, base))

    def resolve(p: Path | None) -> Path | None:
        return p if p is None or p.is_absolute() else resolved(base / p)

    scenario.persona = resolve(scenario.persona)  # type: ignore[assignment]
    scenario.settings = resolve(scenario.settings)
    scenario.noise_wav = resolve(scenario.noise_wav)
    if scenario.room is not None:
        scenario.room.noise_wav = resolve(scenario.room.noise_wav)
    for turn in scenario.turns:
        turn.wav = resolve(turn.wav)
    return scenario
