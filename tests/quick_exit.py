"""Simulations in tests that end without waiting for a known visitor's forced summary.

``session.exit_wait_s: 0``: on a two-core Xeon the embedded 135M model's summary of a visit held
the exit its whole 60 s, and no test that uses these looks at it. The summary is cancelled and
the visit's turns stay, raw, in the memory file (folded at the visitor's next session), where
the tests read them. scripts/demo.sh runs the sample scenario as shipped."""

from __future__ import annotations

from pathlib import Path

from config.loader import load_settings
from config.schema import Settings

SETTINGS = "session:\n  exit_wait_s: 0\n"


def quick_exit(folder: Path) -> Path:
    """A settings file for ``robot simulate --settings``, written in ``folder``."""
    path = folder / "quick_exit.yaml"
    path.write_text(SETTINGS)
    return path


def quick_exit_settings(scenario_settings: Path | None = None) -> Settings:
    """The scenario's settings for ``run_scenario``, with the exit's wait at 0."""
    settings = load_settings(scenario_settings)
    settings.session.exit_wait_s = 0
    return settings
