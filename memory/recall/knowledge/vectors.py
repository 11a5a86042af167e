"""The knowledge's sentence vectors, computed in the background and kept between starts: a shop's
units are embedded once, in a thread that yields the cores to replies and stops at a sign."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from memory.recall.embedding import Embedder

log = logging.getLogger(__name__)
BACKGROUND_NICE = 10  # the embedding thread yields the cores to replies (Linux: per thread)


def yield_to_replies() -> None:
    """Lower the calling thread's priority for good (Linux threads have their own nice value;
    an unprivileged one cannot raise it again): for a thread of its own that embeds a shop in
    the background, so that it never slows a reply. Elsewhere nothing changes."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass


EMBED_CHUNK = 16  # texts embedded between two looks at the stop sign (a fraction of a second)


def cached_embed(embedder: "Embedder", texts: list[str], cache: Path | None,
                 stop: threading.Event | None = None) -> np.ndarray | None:
    """Vectors of ``texts``; those already in ``cache`` (by model and text) are read, not computed.
    None when ``stop`` is set before all are computed (what was computed is cached)."""
    keys = [hashlib.sha1(f"{embedder.name}\n{t}".encode()).hexdigest() for t in texts]
    known: dict[str, np.ndarray] = {}
    path = cache / f"{re.sub(r'[^a-zA-Z0-9]+', '_', embedder.name)}.npz" if cache is not None else None
    if path is not None and path.is_file():
        try:
            with np.load(path) as stored:
                known = {k: stored[k] for k in stored.files}
        except Exception as exc:  # noqa: BLE001 - a broken cache is computed again
            log.warning("embedding cache %s unreadable (%s): computing again", path, exc)
    missing = [n for n, k in enumerate(keys) if k not in known]
    stopped = False
    if missing:
        for start in range(0, len(missing), EMBED_CHUNK):
            if stop is not None and stop.is_set():
                stopped = True
                break
            chunk = missing[start:start + EMBED_CHUNK]
            for n, v in zip(chunk, embedder.embed([texts[n] for n in chunk])):
                known[keys[n]] = v
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp.npz")
                np.savez(tmp, **{k: known[k] for k in keys if k in known})
                tmp.replace(path)
            except OSError as exc:
                log.warning("embedding cache %s not written (%s)", path, exc)
    if stopped:
        return None
    return np.stack([known[k] for k in keys]) if keys else np.zeros((0, embedder.dim), dtype=np.float32)
