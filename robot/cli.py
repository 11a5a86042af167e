"""``robot``: run the kiosk live, chat at a terminal, simulate a scenario, inspect memory."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from config.loader import DEFAULT_PERSONA, ConfigError, load_persona, load_scenario, load_settings
from config.schema import Settings
from speech.types import AudioDeviceError

EXIT_CONFIG = 2
EXIT_DEVICE = 3
EXIT_EXPECTATION = 1


def _setup_logging(settings: Settings, *, console_level: str | None = None, turn_file: Path | None = None) -> None:
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
    for noisy in ("httpx", "openai", "faster_whisper"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.settings)
    if getattr(args, "input_device", None) is not None:
        settings.audio.input_device = _device(args.input_device)
    if getattr(args, "output_device", None) is not None:
        settings.audio.output_device = _device(args.output_device)
    if getattr(args, "mqtt", False):
        settings.mqtt.enabled = True
    return settings


def _device(value: str) -> str | int:
    return int(value) if value.isdigit() else value


# --- commands ------------------------------------------------------------------------


async def _run(args: argparse.Namespace) -> int:
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


async def _chat(args: argparse.Namespace) -> int:
    from robot.runtime import open_runtime

    settings = _settings(args)
    persona = load_persona(args.persona)
    _setup_logging(settings, console_level="WARNING")
    async with open_runtime(settings, persona, Path(args.persona), audio_out="text", listen=False) as rt:
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


async def _simulate(args: argparse.Namespace) -> int:
    from robot.simulate import run_scenario

    scenario = load_scenario(args.scenario)
    settings = load_settings(scenario.settings)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "turns.jsonl").unlink(missing_ok=True)  # this run's turns only
    _setup_logging(settings, console_level="WARNING", turn_file=out / "turns.jsonl")
    print(f"Scenario: {scenario.name}  (robot speech -> {out}/, turn log -> {out}/turns.jsonl)\n")
    report = await run_scenario(scenario, out, mqtt=args.mqtt, settings=settings)
    wavs = sorted(out.glob("*.wav"))
    print(f"{len(report.turns)} turns, {len(wavs)} wav files of robot speech in {out}/")
    print(f"What the robot remembers: robot memory show --db {out}/memory.sqlite3")
    if report.ok:
        print("All expectations met.")
        return 0
    print("Expectations failed:\n  " + "\n  ".join(report.failures))
    return EXIT_EXPECTATION


def _devices(_args: argparse.Namespace) -> int:
    from speech.audio import list_devices

    print(list_devices())
    return 0


# --- parser --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robot", description="Spoken dialogue kiosk robot controller.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, persona: bool = True) -> None:
        p.add_argument("--settings", type=Path, default=None, help="settings YAML (default: config/default.yaml)")
        if persona:
            p.add_argument("--persona", type=Path, default=DEFAULT_PERSONA, help="persona YAML")
        p.add_argument("--mqtt", action="store_true", help="publish to the body over MQTT (mqtt.enabled)")

    run = sub.add_parser("run", help="live kiosk on the sound devices")
    common(run)
    run.add_argument("--input-device", help="microphone name or index (see `robot devices`)")
    run.add_argument("--output-device", help="speaker name or index")
    run.set_defaults(handler=_run)

    chat = sub.add_parser("chat", help="the same dialogue typed at a terminal")
    common(chat)
    chat.set_defaults(handler=_chat)

    sim = sub.add_parser("simulate", help="run a scenario headless")
    sim.add_argument("scenario", type=Path)
    sim.add_argument("--out", default="out/simulation", help="folder for wav files and the turn log")
    sim.add_argument("--mqtt", action="store_true", help="also publish the events over MQTT (watch with `robot body`)")
    sim.set_defaults(handler=_simulate)

    devices = sub.add_parser("devices", help="list sound devices")
    devices.set_defaults(handler=_devices)

    _add_plugin_commands(sub)
    return parser


def _add_plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Subcommands owned by memory/ and the MQTT hooks."""
    from memory.admin import add_cli as add_memory_cli

    add_memory_cli(sub)
    from robot.mqtt.body import add_cli as add_body_cli

    add_body_cli(sub)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.handler(args)
        return asyncio.run(result) if asyncio.iscoroutine(result) else int(result or 0)
    except ConfigError as exc:
        print(f"configuration error:\n{exc}", file=sys.stderr)
        return EXIT_CONFIG
    except AudioDeviceError as exc:
        print(f"audio device error: {exc}", file=sys.stderr)
        return EXIT_DEVICE
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
