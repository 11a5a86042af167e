"""Operator tools over a memory file: ``robot memory show|export|forget|rollback``.

They open the SQLite file directly (WAL lets them read while a robot runs). ``forget``
and ``rollback`` change a user's memory: run them while the robot is stopped, or use the
robot's own ``forget`` command (MQTT) for the user it is talking to, since a running
robot keeps that user's state in memory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from memory.records import RolePromptVersion, StoredTurn, SummaryVersion
from memory.sqlite_store import SCHEMA_VERSION, SqliteDb
from memory.summarizer import render_role_prompt, turn_content
from memory.tokens import count_tokens


def _open(store_path: Path | str) -> SqliteDb:
    # Reading must not create an empty memory file where the operator mistyped a path.
    if not Path(store_path).is_file():
        raise FileNotFoundError(f"no memory store at {store_path}")
    return SqliteDb(store_path)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _short(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def show(store_path: Path | str, user: str) -> str:
    """The user's summary, its versions, the current-prompt history, and the role prompt
    as the LLM sees it (the last version, followed by the history turns)."""
    db = _open(store_path)
    try:
        user_id = db.user_id(user)
        if user_id is None:
            known = ", ".join(db.user_names()) or "none"
            return f"no memory for user {user!r} in {store_path} (users: {known})"
        state = db.load_user(user, now=0.0)
        chain = {s.id for s in db.chain(state.summary)}
        versions = {s.id: s.version for s in db.summaries(user_id)}
        lines = [f"memory of user {user!r} in {store_path}", ""]
        lines += _show_summaries(db.summaries(user_id), state.summary, chain, versions)
        lines += ["", f"current-prompt history ({len(state.history)} turns not summarized yet):"]
        lines += [f"  #{t.id} {_when(t.ts)} {t.role}: {_short(turn_content(t))}" for t in state.history] or ["  (empty)"]
        prompts = db.role_prompts(user_id)
        lines += ["", f"role-prompt versions ({len(prompts)}):"]
        lines += [f"  v{p.version} {_when(p.created)} {p.reason}, summary "
                  f"{'v' + str(versions[p.summary_id]) if p.summary_id in versions else '-'}, "
                  f"{count_tokens(p.text)} tokens" for p in prompts]
        if state.role_prompt is not None:
            lines += ["", f"role prompt as the LLM sees it (v{state.role_prompt.version}; then the history above):"]
            lines += ["  " + line for line in state.role_prompt.text.splitlines()]
        return "\n".join(lines)
    finally:
        db.close()


def _show_summaries(summaries: list[SummaryVersion], current: SummaryVersion | None, chain: set[int],
                    versions: dict[int, int]) -> list[str]:
    if current is None:
        lines = ["summary: none yet (every turn is in the history)"]
    else:
        lines = [f"summary v{current.version} ({_when(current.created)}, {current.strategy}):"]
        lines += ["  " + line for line in current.text.splitlines()]
    lines += ["", f"summary versions ({len(summaries)}; * = in the current chain):"]
    for s in summaries:
        mark = "*" if s.id in chain else " "
        before = f"v{versions[s.predecessor_id]}" if s.predecessor_id in versions else "-"
        ids = f"{s.absorbed[0]}..{s.absorbed[-1]}" if s.absorbed else "none"
        lines.append(f" {mark}v{s.version} {_when(s.created)} {s.strategy}, predecessor {before}, "
                     f"absorbed {len(s.absorbed)} turns (ids {ids}): {_short(s.text, 60)}")
    return lines


def export(store_path: Path | str, user: str | None = None) -> dict[str, Any]:
    """Everything stored (for one user, or all) as JSON-ready data."""
    db = _open(store_path)
    try:
        names = [user] if user is not None else db.user_names()
        return {"store": str(store_path), "schema_version": SCHEMA_VERSION,
                "users": [_export_user(db, name) for name in names if db.user_id(name) is not None]}
    finally:
        db.close()


def _export_user(db: SqliteDb, name: str) -> dict[str, Any]:
    user_id = db.user_id(name)
    assert user_id is not None
    current = db.current_summary(user_id)
    summaries = db.summaries(user_id)
    versions = {s.id: s.version for s in summaries}
    return {
        "user": name,
        "current_summary_version": current.version if current else None,
        "turns": [_turn_dict(t) for t in db.turns(user_id)],
        "summaries": [_summary_dict(s, versions) for s in summaries],
        "role_prompts": [_prompt_dict(p, versions) for p in db.role_prompts(user_id)],
    }


def _turn_dict(t: StoredTurn) -> dict[str, Any]:
    return {"id": t.id, "role": t.role, "text": t.text, "ts": t.ts, "loop_turn_id": t.loop_turn_id,
            "speaker": t.speaker, "session_id": t.session_id}


def _summary_dict(s: SummaryVersion, versions: dict[int, int]) -> dict[str, Any]:
    return {"version": s.version, "text": s.text, "created": s.created, "strategy": s.strategy,
            "predecessor_version": versions.get(s.predecessor_id) if s.predecessor_id else None,
            "absorbed_turn_ids": list(s.absorbed)}


def _prompt_dict(p: RolePromptVersion, versions: dict[int, int]) -> dict[str, Any]:
    return {"version": p.version, "text": p.text, "created": p.created, "reason": p.reason,
            "persona_prompt": p.persona_prompt,
            "summary_version": versions.get(p.summary_id) if p.summary_id else None}


def forget(store_path: Path | str, user: str) -> str:
    """Delete all of a user's data; says what it deleted."""
    db = _open(store_path)
    try:
        return str(db.forget_user(user))
    finally:
        db.close()


def rollback(store_path: Path | str, user: str, version: int) -> str:
    """Make summary ``version`` (0: none) the current one again. Nothing is deleted: the
    later versions stay listed, and the turns only they absorbed return to the history,
    so the next summary folds them again."""
    db = _open(store_path)
    try:
        user_id = db.user_id(user)
        if user_id is None:
            raise ValueError(f"no memory for user {user!r}")
        target = next((s for s in db.summaries(user_id) if s.version == version), None)
        if target is None and version != 0:
            raise ValueError(f"user {user!r} has no summary version {version}")
        last = db.latest_role_prompt(user_id)
        persona = last.persona_prompt if last else ""
        text = render_role_prompt(persona, target.text if target else None)
        prompt = db.set_current_summary(user_id, target.id if target else None, persona, text, time.time())
        pending = len(db.load_user(user, now=0.0).history)
        return (f"user {user!r}: current summary is now v{version}; role prompt v{prompt.version}; "
                f"{pending} turns are in the current-prompt history and will be summarized again")
    finally:
        db.close()


# --- the `robot memory ...` subcommands ---------------------------------------------------


def add_cli(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``memory {show,export,forget,rollback}`` to a CLI; each sets ``handler=run_cli``."""
    parser = subparsers.add_parser("memory", help="inspect, export or forget the robot's memory")
    sub = parser.add_subparsers(dest="memory_command", required=True)

    def common(p: argparse.ArgumentParser, user_required: bool = False) -> None:
        p.add_argument("--settings", type=Path, default=None, help="settings YAML (its memory.db_path, memory.user)")
        p.add_argument("--db", type=Path, default=None, help="the memory file (default: memory.db_path)")
        p.add_argument("--user", required=user_required, help="whose memory (default: memory.user)")
        p.set_defaults(handler=run_cli)

    common(sub.add_parser("show", help="summary, its versions, history, and the role prompt as the LLM sees it"))
    exp = sub.add_parser("export", help="everything stored, as JSON (all users unless --user)")
    common(exp)
    exp.add_argument("--out", type=Path, default=None, help="write to this file instead of stdout")
    common(sub.add_parser("forget", help="delete all of a user's data"), user_required=True)
    rb = sub.add_parser("rollback", help="make an earlier summary version current again")
    common(rb, user_required=True)
    rb.add_argument("--to", type=int, required=True, metavar="VERSION", help="summary version (0: none)")
    return parser


def run_cli(args: argparse.Namespace) -> int:
    """Run a ``memory`` subcommand; prints its result; returns the exit status."""
    db_path, default_user = _store_of(args)
    command = args.memory_command
    try:
        if command == "show":
            print(show(db_path, args.user or default_user))
        elif command == "export":
            text = json.dumps(export(db_path, args.user), indent=2, ensure_ascii=False)
            if args.out:
                args.out.write_text(text + "\n", encoding="utf-8")
                print(f"exported to {args.out}")
            else:
                print(text)
        elif command == "forget":
            print(forget(db_path, args.user))
        elif command == "rollback":
            print(rollback(db_path, args.user, args.to))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _store_of(args: argparse.Namespace) -> tuple[Path, str]:
    from config.loader import load_settings  # only the CLI needs the settings file

    settings = load_settings(args.settings).memory
    return (args.db or settings.db_path), settings.user
