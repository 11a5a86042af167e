"""Turns a full disk would lose, kept beside the memory file until the next start.

A SQLite file on a full disk (or past a file-size limit) takes no more turns: they wait in RAM
(``unwritten.py``) and are written once there is room again. If the robot stops first, they are
written here, ``<memory file>.unwritten``: a file of ``RESERVED`` bytes allocated when the memory
opens, while there is room, so that writing into it later needs no new block of the full disk.
Each turn is one JSON line; the rest of the file is zeros. At the next start the memory writes
them into the file, in order, and zeroes the journal again.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from memory.core.base import Remark

log = logging.getLogger(__name__)

RESERVED = 64 * 1024  # about 250 turns of a visit: a small disk keeps room for the memory itself


def journal_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".unwritten")


def reserve(path: Path, size: int = RESERVED) -> bool:
    """Allocate the journal now (all zeros), unless it holds turns; False when there is no room."""
    try:
        if path.exists() and path.stat().st_size >= size:
            return True
        with open(path, "ab") as f:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(f.fileno(), 0, size)
            else:
                f.truncate(size)
        return True
    except OSError as exc:
        log.warning("could not reserve the journal %s (%s): turns a full disk holds back are kept in RAM only",
                    path, exc)
        return False


def write(path: Path, user: str, turns: list[Remark]) -> int:
    """Append ``turns`` of ``user`` inside the reserved space; the number written."""
    if not turns:
        return 0
    try:
        with open(path, "r+b") as f:
            data = f.read()
            end = data.find(b"\0")
            end = len(data) if end < 0 else end
            lines = b"".join(json.dumps({"user": user, "role": t.role, "text": t.text, "ts": t.ts,
                                         "turn_id": t.turn_id}).encode() + b"\n" for t in turns)
            if end + len(lines) > max(len(data), RESERVED):
                log.error("the journal %s is full: %d turns lost", path, len(turns))
                return 0
            f.seek(end)
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())
        return len(turns)
    except OSError as exc:
        log.error("could not write the journal %s (%s): %d turns lost", path, exc, len(turns))
        return 0


def read(path: Path) -> list[tuple[str, Remark]]:
    """The turns kept in the journal, in the order said: (user, turn)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().split(b"\0", 1)[0].splitlines():
        try:
            d = json.loads(line)
            out.append((d["user"], Remark(d["role"], d["text"], d["ts"], d.get("turn_id"))))
        except (ValueError, KeyError, TypeError):
            log.error("a broken line in the journal %s was skipped", path)
    return out


def clear(path: Path) -> None:
    """Zero the journal (its space stays reserved)."""
    try:
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.write(b"\0" * size)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        log.error("could not clear the journal %s (%s): its turns may be written twice", path, exc)
