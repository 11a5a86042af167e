"""The folder ``robot simulate --out`` writes into: it deletes only what it wrote itself.

A run claims a folder that is new, empty, or written by an earlier simulation (it holds
the manifest): then the files that manifest lists are deleted, and nothing else. A folder
holding anything else (``--out .`` in a project, a folder of the user's recordings) is
refused. After the run the manifest lists every file in the folder: all of them are the
run's own.
"""

from __future__ import annotations

import json
from pathlib import Path

from config.loader import ConfigError

MANIFEST = ".robot-simulate.json"


def claim_out_dir(out_dir: Path) -> None:
    """Make ``out_dir`` ready for a run, deleting only files an earlier run wrote."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, a symlink loop, no permission
        raise ConfigError(out_dir, [f"--out: cannot use it as the run's folder: {exc.strerror or exc}"]) from None
    manifest = out_dir / MANIFEST
    if manifest.is_file():
        for name in _listed(manifest):
            (out_dir / name).unlink(missing_ok=True)
        manifest.unlink()
    foreign = sorted(p.name for p in out_dir.iterdir())
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ConfigError(out_dir, [f"--out: this folder holds files robot simulate did not write ({shown}); "
                                    "nothing was deleted: choose a new or empty folder"])


def record_out_dir(out_dir: Path) -> None:
    """List what the run wrote (every file now in the folder), for the next run to delete."""
    files = sorted(p.name for p in out_dir.iterdir() if p.is_file() and p.name != MANIFEST)
    (out_dir / MANIFEST).write_text(json.dumps({"written_by": "robot simulate", "files": files}, indent=1) + "\n")


def _listed(manifest: Path) -> list[str]:
    try:
        names = json.loads(manifest.read_text()).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    # Plain names in this folder only: a hand-edited manifest must not reach elsewhere.
    return [n for n in names if isinstance(n, str) and n and Path(n).name == n and n not in (".", "..")]
