"""What each ``robot`` command does (robot/cli.py holds the parsers and calls these)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from config.loader import load_persona, load_scenario, load_settings
from config.schema import Settings
from robot import redact

EXIT_EXPECTATION = 1


def _setup_logging(settings: Settings, *, console_level: str | None = None, turn_file: Path | None = None) -> None:
    redact.install(settings.llm.api_key, settings.mqtt.password, settings.console.token)  # before anything logs them
    root = logging.getLogger()
    root.handlers.clear()
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    console.setLevel(console_level or settings.logging.level)
    root.addHandler(console)
    root.setLevel(logging.DEBUG if settings.logging.level == "DEBUG" else logging.INFO)
    for path in filter(None, [settings.logging.turn_log, turn_file]):
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("robot.turn").addHandler(handler)
    # Library loggers by the names they log under: the openai client's HTTP layer is httpx2 /
    # httpcore2 (an INFO line per request), faster_whisper (an INFO line per transcription).
    # A turn's INFO line is the product's own (robot.turn).
    for noisy in ("httpx2", "httpcore2", "httpx", "httpcore", "openai", "faster_whisper"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.settings)
    if getattr(args, "input_device", None) is not None:
        settings.audio.input_device = _device(args.input_device)
    if getattr(args, "output_device", None) is not None:
        settings.audio.output_device = _device(args.output_device)
    if getattr(args, "mqtt", False):
        settings.mqtt.enabled = True
    _console_option(args, settings)
    return settings


def _console_option(args: argparse.Namespace, settings: Settings) -> None:
    if getattr(args, "console", None) is not None:
        settings.console.host, settings.console.port = args.console
        settings.console.enabled = True


def _device(value: str) -> str | int:
    return int(value) if value.isdigit() else value


async def run(args: argparse.Namespace) -> int:
    from robot.runtime import open_runtime
    from speech.audio import SoundDeviceSource

    settings = _settings(args)
    persona = load_persona(args.persona)
    _setup_logging(settings)
    source = SoundDeviceSource(settings.audio.input_device, settings.audio.device_sample_rate)
    async with open_runtime(settings, persona, Path(args.persona), audio_out="device") as rt:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await rt.controller.greet()
        listener = asyncio.create_task(rt.controller.listen(source))
        stopping = asyncio.create_task(stop.wait())
        print(f"{persona.name} is listening. Ctrl-C to stop.", file=sys.stderr)
        await asyncio.wait([listener, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        await source.aclose()
        if listener.done() and not listener.cancelled() and listener.exception():
            raise listener.exception()  # type: ignore[misc]  # e.g. the microphone went away
        listener.cancel()
    return 0


async def chat(args: argparse.Namespace) -> int:
    from robot.runtime import open_runtime

    settings = _settings(args)
    persona = load_persona(args.persona)
    _setup_logging(settings, console_level=args.log_level)
    async with open_runtime(settings, persona, Path(args.persona), audio_out="text", listen=False) as rt:
        if args.visitor and rt.controller.sessions is not None:
            await rt.controller.sessions.start(args.visitor)
        await rt.controller.greet()
        while True:
            try:
                line = await asyncio.to_thread(input, "you> ")
            except EOFError:
                break
            if line.strip() in {"/quit", "/exit"}:
                break
            if line.strip():
                await rt.controller.handle_text(line.strip())
    return 0


async def simulate(args: argparse.Namespace) -> int:
    from robot.simulate import run_scenario

    scenario = load_scenario(args.scenario)
    settings = load_settings(scenario.settings)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "turns.jsonl").unlink(missing_ok=True)  # this run's turns only
    _setup_logging(settings, console_level="WARNING", turn_file=out / "turns.jsonl")
    print(f"Scenario: {scenario.name}  (robot speech -> {out}/, turn log -> {out}/turns.jsonl)\n")
    _console_option(args, settings)
    linger = _until_interrupted if settings.console.enabled else None
    report = await run_scenario(scenario, out, mqtt=args.mqtt, settings=settings, linger=linger)
    wavs = sorted(out.glob("*.wav"))
    print(f"{len(report.turns)} turns, {len(wavs)} wav files of robot speech in {out}/")
    print(report.reply_length_line())
    print(f"Who the robot remembers: robot memory list --db {out}/memory.sqlite3")
    if report.ok:
        print("All expectations met.")
        return 0
    print("Expectations failed:\n  " + "\n  ".join(report.failures))
    return EXIT_EXPECTATION


async def _until_interrupted(url: str) -> None:
    """After a scenario watched on the console: keep the page up until Ctrl-C (or SIGTERM)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"Scenario done; the console stays at {url} until Ctrl-C.", flush=True)
    await stop.wait()


def devices(_args: argparse.Namespace) -> int:
    from speech.audio import list_devices

    print(list_devices())
    return 0


def memory(args: argparse.Namespace) -> int:
    """Run a ``memory`` subcommand; prints its result; returns the exit status."""
    import json

    from memory import admin

    store = load_settings(args.settings).memory
    where, user = args.db or store.store or store.db_path, args.user or store.user
    try:
        if args.memory_command == "list":
            print(asyncio.run(admin.list_visitors(where)))
        elif args.memory_command == "show":
            print(asyncio.run(admin.show(where, user)))
        elif args.memory_command == "export":
            text = json.dumps(asyncio.run(admin.export(where, args.user)), indent=2, ensure_ascii=False)
            if args.out:
                args.out.write_text(text + "\n", encoding="utf-8")
                print(f"exported to {args.out}")
            else:
                print(text)
        elif args.memory_command == "forget":
            print(asyncio.run(admin.forget(where, args.user)))
        elif args.memory_command == "rollback":
            print(asyncio.run(admin.rollback(where, args.user, args.to)))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def memory_migrate(args: argparse.Namespace) -> int:
    """``robot memory migrate --from A --to B``: every visitor copied, counts verified."""
    from memory import admin

    try:
        print(asyncio.run(admin.migrate(args.source, args.target)))
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
