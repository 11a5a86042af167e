"""The operator console and /metrics, served by the robot process. See docs/console.md."""

from robot.console.server import Console, open_console

__all__ = ["Console", "open_console"]
