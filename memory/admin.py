"""Operator tools over a memory file, behind ``robot memory show|export|forget|rollback``
(the command line itself is in ``robot/cli.py``).

They open the SQLite file directly (WAL lets them read while a robot runs). ``forget``
and ``rollback`` change a user's memory: run them while the robot is stopped, or use the
robot's own ``forget`` command (MQTT) for the user it is talking to, since a running
robot keeps that user's state in memory.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from memory.records import RolePromptVersion, StoredRemark, SummaryVersion
from memory.sqlite_schema import SCHEMA_VERSION
from memory.sqlite_db import SqliteDb
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


def list_visitors(store_path: Path | str) -> str:
    """One line per visitor: id, first and last seen, turns stored, summary version."""
    db = _open(store_path)
    try:
        visitors = db.visitors()
    finally:
        db.close()
    if not visitors:
        return f"no visitors in {store_path}"
    width = max(len("visitor"), *(len(v.name) for v in visitors))
    lines = [f"{'visitor':<{width}}  first seen           last seen            turns  summary"]
    lines += [f"{v.name:<{width}}  {_when(v.first_seen)}  {_when(v.last_seen)}  {v.turns:>5}  "
              f"{'v' + str(v.summary_version) if v.summary_version else '-'}" for v in visitors]
    return "\n".join(lines)


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


def _turn_dict(t: StoredRemark) -> dict[str, Any]:
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
