"""Operator tools over a memory store, behind ``robot memory list|show|export|forget|
rollback|migrate`` (the command line itself is in ``robot/app/cli.py``).

They work on either store: the SQLite file of one kiosk (WAL lets them read while a robot
runs) or a fleet's PostgreSQL database. ``forget`` and ``rollback`` change a user's memory:
a running robot honours a forget before its next reply; a rollback is for a stopped robot
(or one not talking to that user), since a running robot keeps its user's state in memory.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

from memory.core.records import RolePromptVersion, StoredRemark, SummaryVersion, turn_content
from memory.core.tokens import count_tokens
from memory.recall.archive import segments_of
from memory.stores.location import StoreLocation, parse_location
from memory.stores.opening import open_store
from memory.stores.protocol import AdminStore
from memory.summary.summarizer import render_role_prompt


@asynccontextmanager
async def _open(where: str | Path, create: bool = False) -> AsyncIterator[AdminStore]:
    """The store at ``where`` (a path or URL), connected; ``StoreUnavailable`` when a server
    cannot be reached. Reading never creates an empty memory file at a mistyped path."""
    location = where if isinstance(where, StoreLocation) else parse_location(where)
    if location.kind == "sqlite" and not create and not (location.path and location.path.is_file()):
        raise FileNotFoundError(f"no memory store at {location.path}")
    store: AdminStore = open_store(location)  # type: ignore[assignment] - both stores are AdminStores
    try:
        await store.connect()
        yield store
    finally:
        await store.close()


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _short(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


async def list_visitors(store_path: Path | str) -> str:
    """One line per visitor: id, first and last seen, turns stored, summary version."""
    async with _open(store_path) as db:
        visitors = await db.visitors()
    if not visitors:
        return f"no visitors in {store_path}"
    width = max(len("visitor"), *(len(v.name) for v in visitors))
    lines = [f"{'visitor':<{width}}  first seen           last seen            turns  summary"]
    lines += [f"{v.name:<{width}}  {_when(v.first_seen)}  {_when(v.last_seen)}  {v.turns:>5}  "
              f"{'v' + str(v.summary_version) if v.summary_version else '-'}" for v in visitors]
    return "\n".join(lines)


async def show(store_path: Path | str, user: str, labels: Sequence[tuple[str, str]] = ()) -> str:
    """The user's profile, summary, its versions, the current-prompt history, and the role
    prompt as the LLM sees it (the last version, followed by the history turns). ``labels``:
    the persona's (slot, label) pairs, in its order: the profile is shown as it labels it."""
    async with _open(store_path) as db:
        user_id = await db.user_id(user)
        if user_id is None:
            known = ", ".join(await db.user_names()) or "none"
            return f"no memory for user {user!r} in {store_path} (users: {known})"
        state = await db.load_user(user, now=0.0)
        chain = {s.id for s in await db.chain(state.summary)}
        summaries = await db.summaries(user_id)
        versions = {s.id: s.version for s in summaries}
        lines = [f"memory of user {user!r} in {store_path}", ""]
        lines += ["profile:"] + (_profile_lines(state.profile, labels) or ["  (nothing yet)"]) + [""]
        lines += _show_summaries(summaries, state.summary, chain, versions)
        lines += ["", f"current-prompt history ({len(state.history)} turns not summarized yet):"]
        lines += [f"  #{t.id} {_when(t.ts)} {t.role}: {_short(turn_content(t))}" for t in state.history] or ["  (empty)"]
        pending = {t.id for t in state.history}
        archived = [t for t in await db.turns(user_id) if t.id not in pending]
        lines += ["", f"archive for retrieval: {len(segments_of(archived))} exchanges of {len(archived)} turns "
                      f"(the turns summaries absorbed; indexed in RAM while the visitor talks)"]
        prompts = await db.role_prompts(user_id)
    lines += ["", f"role-prompt versions ({len(prompts)}):"]
    lines += [f"  v{p.version} {_when(p.created)} {p.reason}, summary "
              f"{'v' + str(versions[p.summary_id]) if p.summary_id in versions else '-'}, "
              f"{count_tokens(p.text)} tokens" for p in prompts]
    if state.role_prompt is not None:
        lines += ["", f"role prompt as the LLM sees it (v{state.role_prompt.version}; then the history above):"]
        lines += ["  " + line for line in state.role_prompt.text.splitlines()]
    return "\n".join(lines)


def _profile_lines(profile: dict[str, list[str]], labels: Sequence[tuple[str, str]]) -> list[str]:
    """"  Travellers: 2 adults", in the persona's order; a slot it does not have by its key."""
    named = dict(labels)
    order = [slot for slot, _ in labels if slot in profile] + [slot for slot in profile if slot not in named]
    return [f"  {named.get(slot, slot)}: {', '.join(profile[slot])}" for slot in order]


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


async def export(store_path: Path | str, user: str | None = None) -> dict[str, Any]:
    """Everything stored (for one user, or all) as JSON-ready data."""
    async with _open(store_path) as db:
        names = [user] if user is not None else await db.user_names()
        users = [await _export_user(db, name) for name in names if await db.user_id(name) is not None]
    return {"store": str(store_path), "users": users}


async def _export_user(db: AdminStore, name: str) -> dict[str, Any]:
    dump = await db.dump_user(name)
    assert dump is not None
    versions = {s.id: s.version for s in dump.summaries}
    return {
        "user": name,
        "profile": dump.profile,
        "current_summary_version": versions.get(dump.current_summary_id) if dump.current_summary_id else None,
        "turns": [_turn_dict(t) for t in dump.turns],
        "summaries": [_summary_dict(s, versions) for s in dump.summaries],
        "role_prompts": [_prompt_dict(p, versions) for p in dump.role_prompts],
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


async def forget(store_path: Path | str, user: str) -> str:
    """Delete all of a user's data; says what it deleted."""
    async with _open(store_path) as db:
        return str(await db.forget_user(user))


async def rollback(store_path: Path | str, user: str, version: int) -> str:
    """Make summary ``version`` (0: none) the current one again. Nothing is deleted: the
    later versions stay listed, and the turns only they absorbed return to the history,
    so the next summary folds them again."""
    async with _open(store_path) as db:
        user_id = await db.user_id(user)
        if user_id is None:
            raise ValueError(f"no memory for user {user!r}")
        target = next((s for s in await db.summaries(user_id) if s.version == version), None)
        if target is None and version != 0:
            raise ValueError(f"user {user!r} has no summary version {version}")
        last = await db.latest_role_prompt(user_id)
        persona = last.persona_prompt if last else ""
        text = render_role_prompt(persona, target.text if target else None)
        prompt = await db.set_current_summary(user_id, target.id if target else None, persona, text, time.time())
        pending = len((await db.load_user(user, now=0.0)).history)
    return (f"user {user!r}: current summary is now v{version}; role prompt v{prompt.version}; "
            f"{pending} turns are in the current-prompt history and will be summarized again")


async def migrate(source: str | Path, target: str | Path) -> str:
    """Copy every visitor of one store into another (a kiosk's SQLite file into the fleet's
    PostgreSQL), each in one transaction, verified by counting what arrived. A visitor the
    target already has is not copied (said so); the source is left as it was."""
    lines: list[str] = []
    copied = skipped = 0
    async with _open(source) as src, _open(target, create=True) as dst:
        for name in await src.user_names():
            dump = await src.dump_user(name)
            if dump is None:  # forgotten meanwhile
                continue
            try:
                await dst.load_dump(dump)
            except ValueError as exc:
                lines.append(f"skipped: {exc}")
                skipped += 1
                continue
            arrived = await dst.dump_user(name)
            if arrived is None or arrived.counts() != dump.counts():
                raise RuntimeError(f"visitor {name!r}: copied {arrived.counts() if arrived else None}, "
                                   f"expected {dump.counts()} (sessions, turns, summaries, role prompts)")
            sessions, turns, summaries, prompts = dump.counts()
            lines.append(f"copied {name!r}: {sessions} sessions, {turns} turns, {summaries} summary versions, "
                         f"{prompts} role-prompt versions")
            copied += 1
    lines.append(f"{copied} visitors copied from {source} to {target}, counts verified; {skipped} skipped")
    return "\n".join(lines)
