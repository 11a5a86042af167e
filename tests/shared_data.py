"""The evaluation data in ../shared/data, for the tests that read it.

CI has ../shared beside the clone (it runs with CI=true), so there a missing file is a
failure; a user's clone has no ../shared, so there the test is skipped. Either way the
reason is the same one line. SHARED_DIR points at another copy of the shared folder
(the one that holds data/).

    from tests.shared_data import shared_data
    wav = shared_data("audio", "speech", "jfk_16k.wav")  # the path, or fail/skip
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV_VAR = "SHARED_DIR"


def shared_root() -> Path:
    """The shared folder: $SHARED_DIR, else ../shared beside the repository."""
    return Path(os.environ.get(ENV_VAR) or REPO_ROOT.parent / "shared")


def in_ci() -> bool:
    """CI is set to anything but an explicit no (CI=true on the CI machines)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing_message(path: Path) -> str:
    return (f"shared test data missing: {path} (tests read ../shared/data beside the clone, "
            f"or ${ENV_VAR}/data)")


def missing(path: Path) -> NoReturn:
    """Fail under CI, skip elsewhere, with the same one-line message."""
    message = missing_message(path)
    if in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def shared_data(*parts: str) -> Path:
    """The path of ``data/<parts>`` in the shared folder; fails or skips the calling test
    (see ``missing``) when it does not exist."""
    path = shared_root().joinpath("data", *parts)
    if not path.exists():
        missing(path)
    return path
