"""``python -m robot ...``: the ``robot`` command."""

from robot.app.cli import main

raise SystemExit(main())
