"""Commands a body (MQTT) or an operator (the console) may send: the one place that
validates them, and the one place that runs them on a ``RobotControl``.

A command is a JSON object whose ``command`` field picks its shape (a pydantic
discriminated union); unknown fields are rejected so that a typo never half-works.
Every command may carry an ``id`` that comes back in its ack or error event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from config.loader import CONFIG_DIR
from robot.control.actions import RobotControl
from robot.core.events import ErrorEvent, Event

# `persona` commands load only files from here (mqtt.persona_dir overrides it).
DEFAULT_PERSONA_DIR = CONFIG_DIR / "personas"
ID_FIELD = Field(None, max_length=64, description="echoed in the ack or error event")


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = ID_FIELD


class Say(_Command):
    command: Literal["say"]
    text: str = Field(min_length=1, max_length=2000)
    # An operator's words are not the consultant's: kept in the dialogue memory only if asked.
    remember: bool = False


class Stop(_Command):
    command: Literal["stop"]


class Mute(_Command):
    command: Literal["mute"]


class Unmute(_Command):
    command: Literal["unmute"]


class SwitchPersona(_Command):
    command: Literal["persona"]
    # a file name inside the persona directory, e.g. "travel_agent" or "travel_agent.yaml"
    path: str = Field(min_length=1, max_length=255)


class Reload(_Command):
    command: Literal["reload"]


class Forget(_Command):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    command: Literal["forget"]
    # a visitor's id ("visitor" and "user" name the same thing: a memory in the store)
    user: str = Field(min_length=1, max_length=128, validation_alias=AliasChoices("user", "visitor"))


class SessionStart(_Command):
    """A visitor walks up: a card reader, a face module or an operator may say who."""

    command: Literal["session/start"]
    visitor: str | None = Field(None, min_length=1, max_length=128)


class SessionEnd(_Command):
    command: Literal["session/end"]


Command = Annotated[
    Say | Stop | Mute | Unmute | SwitchPersona | Reload | Forget | SessionStart | SessionEnd,
    Field(discriminator="command"),
]
COMMAND_NAMES = ("say", "stop", "mute", "unmute", "persona", "reload", "forget", "session/start", "session/end")
_ADAPTER: TypeAdapter[Command] = TypeAdapter(Command)


# --- what the robot answers -----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CommandAckEvent(Event):
    """A command ran; ``detail`` says what happened (e.g. what ``forget`` deleted)."""

    kind: ClassVar[str] = "ack"
    command: str
    id: str | None = None
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class CommandErrorEvent(ErrorEvent):
    """A command was rejected or failed; nothing was changed unless the control itself failed midway."""

    source: str = "command"
    command: str | None = None
    id: str | None = None
    # a flood's refusals, gathered: every command this one event answers (``id`` is then null)
    ids: tuple[str | None, ...] | None = None


class CommandRejected(Exception):
    """Why a payload is not a valid command, with whatever name and id could be read from it."""

    def __init__(self, reason: str, command: str | None = None, id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.command = command
        self.id = id

    def event(self) -> CommandErrorEvent:
        return CommandErrorEvent(message=self.reason, command=self.command, id=self.id)


# --- parsing ---------------------------------------------------------------------------


def parse_command(payload: bytes, max_bytes: int) -> Command:
    """The command in ``payload``, or CommandRejected with a one-line reason."""
    if len(payload) > max_bytes:
        # checked before parsing so that a huge payload costs nothing
        raise CommandRejected(f"command too large: {len(payload)} bytes > {max_bytes}")
    try:
        return _ADAPTER.validate_json(payload)
    except ValidationError as exc:
        name, ident = _peek(payload)
        raise CommandRejected(_describe(exc), command=name, id=ident) from None


def _peek(payload: bytes) -> tuple[str | None, str | None]:
    """Best-effort command name and id of an invalid command, to correlate the error."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    name, ident = data.get("command"), data.get("id")
    return (name if isinstance(name, str) else None, ident if isinstance(ident, str) else None)


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        if kind == "json_invalid":
            problems.append(f"malformed JSON: {err['ctx'].get('error', err['msg'])}")
        elif kind == "union_tag_invalid":
            problems.append(f"unknown command {err['input'].get('command')!r}; known: {', '.join(COMMAND_NAMES)}")
        elif kind == "union_tag_not_found":
            problems.append("missing field 'command'")
        elif kind == "model_attributes_type" or not err["loc"]:
            problems.append("a command must be a JSON object")
        else:
            field = ".".join(str(p) for p in err["loc"][1:]) or str(err["loc"][0])
            msg = "unknown field" if kind == "extra_forbidden" else err["msg"]
            problems.append(f"field {field!r}: {msg}")
    return "; ".join(problems)


def persona_file(name: str, persona_dir: Path) -> Path:
    """The persona file a command names, confined to ``persona_dir`` (no absolute paths, no ..)."""
    relative = Path(name)
    if relative.is_absolute():
        raise CommandRejected("persona path must be relative to the persona directory", "persona")
    if relative.suffix not in (".yaml", ".yml"):
        relative = relative.with_name(relative.name + ".yaml")
    root = persona_dir.resolve()
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        raise CommandRejected("persona path leaves the persona directory", "persona")
    return target


# --- running ---------------------------------------------------------------------------


async def execute(control: RobotControl, command: Command, persona_dir: Path) -> str:
    """Run one validated command; returns the ack's detail. Control errors propagate."""
    match command:
        case Say(text=text, remember=remember):
            await control.say(text, remember=remember)
            return f"{len(text)} characters spoken (or stopped)"
        case Stop():
            await control.stop_speaking()
            return "stopped speaking"
        case Mute():
            control.mute()
            return "microphone muted"
        case Unmute():
            control.unmute()
            return "microphone unmuted"
        case SwitchPersona(path=name):
            path = persona_file(name, persona_dir)
            await control.switch_persona(path)
            return f"persona {path.name} loaded; memory kept"
        case Reload():
            await control.reload()
            return "reloaded"
        case Forget(user=user):
            return await control.forget(user)
        case SessionStart(visitor=visitor):
            await control.start_session(visitor)
            return f"session started for visitor {visitor or 'anonymous'}"
        case SessionEnd():
            return "session ended" if await control.end_session() else "no session was open"
    raise AssertionError(f"unhandled command {command!r}")  # the union and the match diverged

