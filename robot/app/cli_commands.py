"""What each ``robot`` command does (robot/app/cli.py holds the parsers and calls these)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from config.loader import LayeredSettings, load_layered_settings, load_persona, load_scenario
from config.schema import Settings
from robot.core import redact

EXIT_EXPECTATION = 1
KEEP_EVENTS = 1000  # a live robot's own record of recent events (bounded: it runs for days)
# At a stop, a turn in flight ends within this, or its reply is cut (its words are stored either
# way): a kiosk stopped by SIGTERM must be gone within a few seconds, whatever the LLM does.
TURN_EXIT_WAIT_S = 2.0


def _setup_logging(settings: Settings, *, console_level: str | None = None, turn_file: Path | None = None,
                   log_file: Path | None = None) -> None:
    """Log lines to stderr, or with ``log_file`` only to that file (``robot chat``: a log line
    on the terminal would land in the middle of what the user types)."""
    redact.install(settings.llm.api_key, settings.mqtt.password, settings.console.token)  # before anything logs them
    root = logging.getLogger()
    root.handlers.clear()
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(console_level or settings.logging.level)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if "DEBUG" in (settings.logging.level, console_level) else logging.INFO)
    for path in filter(None, [settings.logging.turn_log, turn_file]):
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("robot.turn").addHandler(handler)
    # Library loggers by the names they log under: the openai client's HTTP layer is httpx2 /
    # httpcore2 (an INFO line per request), faster_whisper (an INFO line per transcription).
    # A turn's INFO line is the product's own (robot.turn).
    for noisy in ("httpx2", "httpcore2", "httpx", "httpcore", "openai", "faster_whisper", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


# How each flag is named in `robot config show` (the key it sets -> the flag).
FLAG_NAMES = {"memory.store": "--db", "memory.db_path": "--db", "mqtt.enabled": "--mqtt",
              "console.enabled": "--console", "console.host": "--console", "console.port": "--console",
              "audio.input_device": "--input-device", "audio.output_device": "--output-device"}


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    """The command line's settings, as dotted keys over every other layer."""
    flags: dict[str, Any] = {}
    if getattr(args, "db", None):
        if "://" in args.db:
            flags["memory.store"] = args.db
        else:
            flags["memory.store"], flags["memory.db_path"] = None, Path(args.db)
    if getattr(args, "input_device", None) is not None:
        flags["audio.input_device"] = _device(args.input_device)
    if getattr(args, "output_device", None) is not None:
        flags["audio.output_device"] = _device(args.output_device)
    if getattr(args, "mqtt", False):
        flags["mqtt.enabled"] = True
    if getattr(args, "console", None) is not None:
        flags["console.host"], flags["console.port"] = args.console
        flags["console.enabled"] = True
    return flags


def _layered(args: argparse.Namespace, before: list[Path] | None = None) -> LayeredSettings:
    """Settings as the command uses them: default.yaml <- ``before`` (a scenario's own
    settings file) <- --settings files <- environment <- flags."""
    return load_layered_settings([*(before or []), *(args.settings or [])], _flags(args), FLAG_NAMES)


def _settings(args: argparse.Namespace) -> Settings:
    return _layered(args).settings


def _device(value: str) -> str | int:
    return int(value) if value.isdigit() else value


def _memory_where(settings: Settings) -> str:
    """The store for messages: a URL's password and secret query values hidden."""
    return redact.hide_url_password(settings.memory.store or str(settings.memory.db_path))


def chat_log_file() -> Path:
    """Where ``robot chat`` logs (on Linux ~/.local/state/kiosk-robot/log/chat.log)."""
    import platformdirs

    from config.schema import APP_NAME

    return Path(platformdirs.user_log_dir(APP_NAME)) / "chat.log"


async def run(args: argparse.Namespace) -> int:
    from robot.app.runtime import open_runtime
    from speech.audio import SoundDeviceSource

    settings = _settings(args)
    persona = load_persona(args.persona)
    _setup_logging(settings)
    source = SoundDeviceSource.from_settings(settings.audio)
    async with open_runtime(settings, persona, Path(args.persona), audio_out="device", keep_events=KEEP_EVENTS) as rt:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, _stopping, stop, rt.memory, settings.session.exit_wait_s)
        loop.add_signal_handler(signal.SIGTERM, _terminated, stop, rt.memory)
        # The microphone opens before the greeting: a visitor who speaks over it is heard (and
        # may cut it), and the echo filters learn the room's echo path on it, so a quiet
        # customer can cut the first answer too (docs/speech.md, "The greeting").
        listener = asyncio.create_task(rt.controller.listen(source))
        await _opened(source, listener)
        await rt.controller.greet()
        stopping = asyncio.create_task(stop.wait())
        console = f"; operator console at {rt.console.url}" if rt.console is not None else ""  # type: ignore[attr-defined]
        print(f"{persona.name} is listening. Ctrl-C to stop. Memory: {_memory_where(settings)} "
              f"(robot memory list){console}.", file=sys.stderr)
        await asyncio.wait([listener, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        failed = listener.exception() if listener.done() and not listener.cancelled() else None
        listener.cancel()  # no new turn; one in flight goes on (wait_turn does not cancel it)
        await asyncio.gather(listener, return_exceptions=True)
        await source.aclose()
        # before the runtime's exit closes the memory under it: a turn still storing its words
        await rt.controller.finish(TURN_EXIT_WAIT_S)
        if failed is not None:
            raise failed  # e.g. the microphone went away
    return 0


def _stopping(stop: asyncio.Event, memory: Any, wait_s: float) -> None:
    """Ctrl-C: the robot stops, after the visit's forced summary (up to ``session.exit_wait_s``); a
    second one stops waiting for it (the turns stay, summarized later). SIGTERM: ``_terminated``."""
    if not stop.is_set():
        stop.set()
        print(f"Stopping: an open visit is summed up first, for up to {wait_s:.0f} s (Ctrl-C again not to "
              "wait: its turns are kept, unsummarized).", file=sys.stderr, flush=True)
    elif hasattr(memory, "hurry"):
        memory.hurry()


def _terminated(stop: asyncio.Event, memory: Any) -> None:
    """SIGTERM (a service manager stopping the kiosk): stop now, whatever the LLM does. The open
    visit's summary is not waited for: its turns are stored already and stay raw, folded at that
    visitor's next session (systemd kills what is still running after 90 s; a summary on a busy
    machine took two tries of about 22 s)."""
    stop.set()
    if hasattr(memory, "hurry"):
        memory.hurry()
    print("Stopping (SIGTERM): every turn is kept; the open visit is summed up at its next session.",
          file=sys.stderr, flush=True)


async def _opened(source: Any, listener: asyncio.Task[None]) -> None:
    """Wait until the microphone records; a microphone that fails to open (the listener ends)
    stops the robot before it greets."""
    opened = asyncio.create_task(source.opened.wait())
    await asyncio.wait([opened, listener], return_when=asyncio.FIRST_COMPLETED)
    opened.cancel()
    if listener.done() and not listener.cancelled() and (exc := listener.exception()) is not None:
        raise exc


async def chat(args: argparse.Namespace) -> int:
    from robot.app.runtime import open_runtime

    settings = _settings(args)
    persona = load_persona(args.persona)
    log_file = chat_log_file()
    _setup_logging(settings, console_level=args.log_level, log_file=log_file)
    async with open_runtime(settings, persona, Path(args.persona), audio_out="text", listen=False,
                            keep_events=KEEP_EVENTS) as rt:
        if args.visitor and rt.controller.sessions is not None:
            await rt.controller.sessions.start(args.visitor)
        who = f"visitor {args.visitor!r} (remembered)" if args.visitor else "an anonymous visitor (not kept)"
        print(f"Chatting with {persona.name} as {who}. Type a line and press Enter; /quit or Ctrl-D leaves.\n"
              f"Memory: {_memory_where(settings)} (robot memory list). Log: {log_file}", file=sys.stderr, flush=True)
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
    from robot.app.out_dir import claim_out_dir
    from robot.app.simulate import run_scenario

    scenario = load_scenario(args.scenario)
    settings = _layered(args, before=[scenario.settings] if scenario.settings else None).settings
    out = Path(args.out)
    claim_out_dir(out)  # before the turn log opens there
    _setup_logging(settings, console_level="WARNING", turn_file=out / "turns.jsonl")
    print(f"Scenario: {scenario.name}  (robot speech -> {out}/, turn log -> {out}/turns.jsonl)\n")
    linger = _until_interrupted if settings.console.enabled else None
    report = await run_scenario(scenario, out, settings=settings, persona_path=args.persona, memory_store=args.db,
                                claim=False, linger=linger)
    wavs = sorted(out.glob("*.wav"))
    print(f"{len(report.turns)} turns, {len(wavs)} wav files of robot speech in {out}/")
    print(report.reply_length_line())
    if (note := report.timing_note()) is not None:
        print(note)
    print(f"Who the robot remembers: robot memory list --db {args.db or out / 'memory.sqlite3'}")
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
    from memory.recall.profile import labels_of

    settings = _settings(args)
    where, user = _memory_where(settings), args.user or settings.memory.user
    try:
        if args.memory_command == "list":
            print(asyncio.run(admin.list_visitors(where)))
        elif args.memory_command == "show":  # the profile with the persona's labels
            labels = labels_of({k: v.model_dump() for k, v in load_persona(args.persona).memory.profile.items()})
            print(asyncio.run(admin.show(where, user, labels)))
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


def config_show(args: argparse.Namespace) -> int:
    """``robot config show``: the merged settings, each value with the layer it came from."""
    from robot.app.config_view import render_layered

    layered = _layered(args)
    persona = load_persona(args.persona)
    print(render_layered(layered))
    print(f"\n# persona: {args.persona} ({persona.name}, language {persona.language}, "
          f"voice {persona.voice or layered.settings.tts.voice or 'default'})")
    print(f"# memory store: {_memory_where(layered.settings)}")
    return 0


def config_check(args: argparse.Namespace) -> int:
    """``robot config check FILE...``: each file validated as what its keys say it is."""
    from config.loader import ConfigError
    from robot.app.config_view import check_file

    failed = 0
    for path in args.files:
        try:
            print(f"{path}: ok ({check_file(path)})")
        except ConfigError as exc:
            failed += 1
            print(f"{exc}", file=sys.stderr)
    return 2 if failed else 0


def knowledge_check(args: argparse.Namespace) -> int:
    """``robot knowledge check``: the persona's knowledge files read as the robot reads them."""
    from collections import Counter

    persona = load_persona(args.persona)  # a bad file: ConfigError, one line, exit 2
    if persona.knowledge is None:
        print(f"{args.persona}: no knowledge: files (the LLM answers alone)")
        return 0
    per_file = Counter(e.source.rsplit(":", 1)[0] for e in persona.knowledge.entries)
    for f in persona.knowledge.files:
        print(f"{f.path}: {per_file.get(f.path.name, 0)} entries")
    print(f"{len(persona.knowledge.entries)} entries in all: ok")
    knowledge = _shop_knowledge(persona)
    from memory.recall.knowledge.probes import probes, warnings

    found = warnings(knowledge.index)
    asked = probes(knowledge.index)
    reached = sum(p.found for p in asked)
    print(f"probe questions (one per sentence, by rule, as visitors ask): {reached} of {len(asked)} find their sentence")
    for w in found:
        print(f"warning: {w}")
    if not found:
        print("no warnings: every sentence is found by a question about it")
    return 0


def _shop_knowledge(persona):  # noqa: ANN001, ANN202 - a persona with knowledge, indexed as the robot does
    from robot.app.runtime import understanding_of
    from robot.dialogue.knowledge import ShopKnowledge

    settings = _settings_for_search()
    knowledge = ShopKnowledge.of_persona(persona, settings.memory.retrieval_tokens, understanding_of(settings))
    knowledge.embed()
    return knowledge


def knowledge_search(args: argparse.Namespace) -> int:
    """``robot knowledge search "question"``: the entries found, their scores, and what the robot would do."""
    persona = load_persona(args.persona)
    if persona.knowledge is None:
        print(f"{args.persona}: no knowledge: files")
        return 1
    knowledge = _shop_knowledge(persona)
    places = [p.strip() for p in args.places.split(",") if p.strip()]
    plan = knowledge.plan(args.question, places)
    finding = plan.finding
    q = finding.question
    print(f"asks: {'a question' if q.is_question else 'nothing (a statement)'}; kind: {q.kind.value}"
          + (f"; compares: {q.comparison.word}" if q.comparison else "")
          + f"; its words: {', '.join(q.content) or 'none'}" + (f"; heard as: {finding.query}" if finding.heard else ""))
    for hit in finding.hits:
        named = f", named ({hit.named.how}: {hit.named.name!r})" if hit.named else ""
        print(f"{hit.score:6.3f}  {hit.entry.title}  ({hit.entry.line_of(hit.sentence) if hasattr(hit.entry, 'line_of') else hit.entry.source})"
              f"  meaning {hit.answer_dense:.2f}, words {hit.lexical:.1f}{named}; holds "
              f"{hit.coverage:.0%} of the words" + (f" (lacks: {', '.join(hit.lacking)})" if hit.lacking else ""))
    if not finding.hits:
        print("no entry matches")
    print(f"judged: {finding.confidence.why}")
    if plan.handover:
        if plan.opening:
            print("the robot says: " + " ".join(plan.opening))
        print(f"the robot hands over to staff: {plan.handover}")
    elif plan.opening:
        print("the robot says: " + " ".join(plan.opening))
    else:
        print("the LLM answers, with the entries above in its prompt and the grounding guard on"
              + (f"; its fallback: {' '.join(plan.fallback)}" if plan.fallback else ""))
    print(f"search took {plan.retrieval_s * 1000:.1f} ms; names heard in the next turn: "
          f"{', '.join(knowledge.turn_vocabulary(places)) or 'none'}")
    return 0


def _settings_for_search() -> Settings:
    from config.loader import load_settings

    return load_settings()
