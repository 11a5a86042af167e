"""What every test shares: the user's own state folder is never written.

``robot chat`` logs to the per-user state folder (~/.local/state/kiosk-robot/log/chat.log); a
test that runs it, in process or in a subprocess that inherits this environment, wrote into the
real user's log, and under pytest-xdist two workers appended to the same file. Each test gets
a state folder of its own in the session's temp folder. Tests of a new user's first start
(tests/test_newcomer.py) give their subprocess a home of its own and drop every ``XDG_``
variable, so they still see the defaults."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def own_state_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per test, as a home of its own is: a test that counts a log's lines reads its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
