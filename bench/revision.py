"""An older git revision of this repository, checked out for a bench's ``--compare REV``.

Every bench that sets this tree against an older one runs the old one from a temporary
worktree (its own code, in a subprocess) in the same run, so both see the same machine.
"""

from __future__ import annotations

import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def checked_out(rev: str | None) -> Iterator[Path | None]:
    """Git revision ``rev`` in a temporary worktree, removed afterwards; None without a revision."""
    if rev is None:
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(path), rev], cwd=REPO, check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, check=False)
