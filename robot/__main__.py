"""``python -m robot ...``: the ``robot`` command."""

from robot.app.cli import run

run()
