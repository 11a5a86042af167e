"""``robot``: run the kiosk live, chat at a terminal, simulate a scenario, inspect memory.

Every argparse parser of the product is here; what each command does is in
robot/app/cli_commands.py."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from config.loader import DEFAULT_PERSONA, ConfigError
from memory.stores.protocol import StoreUnavailable
from robot.app import cli_commands as commands
from robot.llm.client import LLMUnreachable
from speech.types import AudioDeviceError

EXIT_CONFIG = 2
EXIT_DEVICE = 3

# What stops a command before it starts, as one line on stderr: (kind, prefix, exit status).
_ONE_LINE: tuple[tuple[type[Exception], str, int], ...] = (
    (AudioDeviceError, "audio device error", EXIT_DEVICE),
    (StoreUnavailable, "memory store error", EXIT_CONFIG),
    (LLMUnreachable, "LLM error", EXIT_CONFIG),
    (FileNotFoundError, "error", EXIT_CONFIG),
)
ONE_LINE_ERRORS = tuple(kind for kind, _, _ in _ONE_LINE)


def _host_port(value: str) -> tuple[str, int]:
    """``--console HOST:PORT`` (``[::1]:8080`` for IPv6)."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:8080 (got {value!r})")
    return host.strip("[]"), int(port)


# --- parser --------------------------------------------------------------------------


def common_flags(p: argparse.ArgumentParser, *, persona_default: Path | None = DEFAULT_PERSONA,
                 robot: bool = True) -> None:
    """The flags every command that builds a robot takes, with the same meaning everywhere."""
    p.add_argument("--settings", type=Path, action="append", metavar="FILE",
                   help="settings YAML over config/default.yaml; several allowed, later wins")
    p.add_argument("--persona", type=Path, default=persona_default,
                   help="persona YAML" + (" (default: the scenario's)" if persona_default is None else ""))
    p.add_argument("--db", default=None, metavar="PATH|URL",
                   help="the memory store: a SQLite file, sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    if robot:
        p.add_argument("--mqtt", action="store_true", help="publish to the body over MQTT (mqtt.enabled)")
        p.add_argument("--console", type=_host_port, metavar="HOST:PORT",
                       help="serve the operator console and /metrics here (console.enabled; docs/console.md)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robot", description="Spoken dialogue kiosk robot controller.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="live kiosk on the sound devices")
    common_flags(run)
    run.add_argument("--input-device", help="microphone name or index (see `robot devices`)")
    run.add_argument("--output-device", help="speaker name or index")
    run.set_defaults(handler=commands.run)

    chat = sub.add_parser("chat", help="the same dialogue typed at a terminal")
    common_flags(chat)
    chat.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                      help="what goes to the log file (printed at start; never into what you type)")
    chat.add_argument("--visitor", default=None, metavar="ID",
                      help="talk as this known visitor (their memory is kept and comes back); default: anonymous")
    chat.set_defaults(handler=commands.chat)

    sim = sub.add_parser("simulate", help="run a scenario headless")
    sim.add_argument("scenario", type=Path)
    common_flags(sim, persona_default=None)
    sim.add_argument("--out", default="out/simulation",
                     help="folder for wav files and the turn log: a new or empty one, or one a simulation wrote")
    sim.set_defaults(handler=commands.simulate)

    devices = sub.add_parser("devices", help="list sound devices")
    devices.set_defaults(handler=commands.devices)

    _add_memory_commands(sub)
    _add_config_commands(sub)
    _add_knowledge_commands(sub)
    _add_body_command(sub)
    return parser


def _add_config_commands(sub: argparse._SubParsersAction) -> None:
    """``robot config show|check``: the merged settings and where each value came from; a
    check of settings, persona and scenario files before they are used."""
    parser = sub.add_parser("config", help="show the merged settings, or check configuration files")
    config_sub = parser.add_subparsers(dest="config_command", required=True)
    show = config_sub.add_parser("show", help="the settings as the robot would use them, and where each "
                                 "value came from (secrets hidden)")
    common_flags(show)
    show.set_defaults(handler=commands.config_show)
    check = config_sub.add_parser("check", help="validate settings, persona or scenario files (the kind "
                                  "is told by their keys)")
    check.add_argument("files", type=Path, nargs="+", metavar="FILE")
    check.set_defaults(handler=commands.config_check)


def _add_knowledge_commands(sub: argparse._SubParsersAction) -> None:
    """``robot knowledge check|search``: a shop's knowledge files as the robot reads them."""
    parser = sub.add_parser("knowledge", help="check the shop's knowledge files, or see what the robot finds "
                            "for a question (docs/knowledge.md)")
    knowledge_sub = parser.add_subparsers(dest="knowledge_command", required=True)
    check = knowledge_sub.add_parser("check", help="read the persona's knowledge files: entries per file, or "
                                     "the first problem with its file and line (exit status 2)")
    check.add_argument("--persona", type=Path, default=DEFAULT_PERSONA, help="persona YAML")
    check.set_defaults(handler=commands.knowledge_check)
    search = knowledge_sub.add_parser("search", help="the entries the robot finds for a question, with their "
                                      "scores, and what it would do (say an entry, hand over, ask the LLM)")
    search.add_argument("question", help='a visitor\'s words, e.g. "how long is the train to Nara?"')
    search.add_argument("--persona", type=Path, default=DEFAULT_PERSONA, help="persona YAML")
    search.add_argument("--places", default="", metavar="A,B", help="places the visitor named before (their profile)")
    search.set_defaults(handler=commands.knowledge_search)


def _add_memory_commands(sub: argparse._SubParsersAction) -> None:
    """``robot memory {list,show,export,forget,rollback}`` over ``memory.admin``."""
    parser = sub.add_parser("memory", help="inspect, export or forget the robot's memory")
    memory_sub = parser.add_subparsers(dest="memory_command", required=True)

    def common(p: argparse.ArgumentParser, user_required: bool = False) -> None:
        common_flags(p, robot=False)
        p.add_argument("--visitor", "--user", dest="user", required=user_required,
                       help="whose memory: a visitor id (--user is the same; default: memory.user)")
        p.set_defaults(handler=commands.memory)

    common(memory_sub.add_parser("list", help="every visitor: first and last seen, turns, summary version"))
    common(memory_sub.add_parser("show", help="summary, its versions, history, and the role prompt as the LLM sees it"))
    exp = memory_sub.add_parser("export", help="everything stored, as JSON (all users unless --user)")
    common(exp)
    exp.add_argument("--out", type=Path, default=None, help="write to this file instead of stdout")
    common(memory_sub.add_parser("forget", help="delete all of a user's data"), user_required=True)
    rb = memory_sub.add_parser("rollback", help="make an earlier summary version current again")
    common(rb, user_required=True)
    rb.add_argument("--to", type=int, required=True, metavar="VERSION", help="summary version (0: none)")
    mig = memory_sub.add_parser("migrate", help="copy every visitor from one store into another (a kiosk's "
                                "SQLite file into a fleet's PostgreSQL), verified by counts")
    mig.add_argument("--from", dest="source", required=True, metavar="PATH|URL", help="the store to copy from")
    mig.add_argument("--to", dest="target", required=True, metavar="PATH|URL", help="the store to copy into")
    mig.set_defaults(handler=commands.memory_migrate)


def _add_body_command(sub: argparse._SubParsersAction) -> None:
    """``robot body``: an example robot body on MQTT (robot.mqtt.body)."""
    from robot.mqtt import body

    parser = sub.add_parser("body", help="print what a robot body would do with the MQTT events",
                            description=body.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", type=Path, action="append", metavar="FILE",
                        help="settings YAML over config/default.yaml (its mqtt: section); several allowed")
    parser.add_argument("--host", help="broker host (overrides settings)")
    parser.add_argument("--port", type=int, help="broker port (overrides settings)")
    parser.add_argument("--prefix", help="topic prefix (overrides settings)")
    parser.add_argument("--robot-id", help="robot id (overrides settings)")
    parser.add_argument("--send", metavar="JSON", help='send one command, e.g. \'{"command": "say", "text": "Hi"}\', '
                        "print the robot's ack or error, and exit")
    parser.set_defaults(handler=lambda a: body.body_main(a.settings, a.send, host=a.host, port=a.port,
                                                         prefix=a.prefix, robot_id=a.robot_id))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.handler(args)
        return asyncio.run(result) if asyncio.iscoroutine(result) else int(result or 0)
    except ConfigError as exc:
        print(f"configuration error:\n{exc}", file=sys.stderr)
        return EXIT_CONFIG
    except ONE_LINE_ERRORS as exc:
        prefix, status = next((p, st) for kind, p, st in _ONE_LINE if isinstance(exc, kind))
        print(f"{prefix}: {exc}", file=sys.stderr)
        return status
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The process's entry (``robot``, ``python -m robot``): ``main``, then the exit. A knowledge
    embedding still running in its thread (a large shop, a busy machine: it runs at a lower
    priority and is asked to stop at its next batch) would hold the exit until that batch ends,
    seconds on a busy machine (as a daemon thread it hung the exit inside OpenBLAS for good: seen as
    ``robot run`` never ending after SIGTERM). Everything of the robot is closed and written by
    then, so the process leaves at once."""
    import threading

    code = main()
    runtime = sys.modules.get("robot.app.runtime")  # loaded only by the commands that embed
    embedding = getattr(runtime, "KNOWLEDGE_EMBED_THREAD", None)
    if embedding and any(t.name == embedding and t.is_alive() for t in threading.enumerate()):
        import logging
        import os

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
