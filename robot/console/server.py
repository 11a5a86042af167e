"""Serve the console from the robot's own event loop: uvicorn's server as one task.

The socket is bound here, before the task starts, so a busy port is one clear error at
start-up, and port 0 gives a free port (tests, the benchmark) that ``url`` reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import uvicorn

from config.loader import ConfigError
from config.schema import ConsoleSettings
from robot.console.auth import TokenGate, check_bind
from robot.console.hub import EventHub
from robot.console.metrics import RobotMetrics
from robot.console.routes import ConsoleRoutes
from robot.console.status import RobotStatus
from robot.control.actions import RobotCommands

log = logging.getLogger(__name__)
CLOSE_TIMEOUT_S = 2.0


class _EmbeddedServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        # The robot owns SIGINT/SIGTERM (it closes the console on its way out).
        yield


class Console:
    """The running console: ``hub`` and ``metrics`` are the robot's event publishers."""

    def __init__(self, hub: EventHub, metrics: RobotMetrics, url: str) -> None:
        self.hub, self.metrics, self.url = hub, metrics, url


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError("console", [f"cannot listen on {host}:{port}: {exc.strerror}"]) from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


@asynccontextmanager
async def open_console(settings: ConsoleSettings, commands: RobotCommands, *, persona_dir: Path,
                       mqtt_stats: Callable[[], dict[str, Any]] | None = None,
                       ) -> AsyncIterator[Console]:
    """Serve the console until the block ends. ConfigError (exit 2) for a bad bind."""
    check_bind(settings.host, settings.token)
    hub, metrics = EventHub(), RobotMetrics(mqtt_stats)
    hub.bind(asyncio.get_running_loop())
    status = RobotStatus(commands, hub, persona_dir, mqtt_stats)
    app = TokenGate(ConsoleRoutes(hub, metrics, status, commands).app(), settings.token)
    sock = _bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False,
                            timeout_graceful_shutdown=CLOSE_TIMEOUT_S)
    server = _EmbeddedServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="console")
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    log.info("operator console at %s%s", url, " (token required)" if settings.token else "")
    try:
        yield Console(hub, metrics, url)
    finally:
        hub.close()  # live streams end, so the server can stop at once
        server.should_exit = True
        try:
            await asyncio.wait_for(task, CLOSE_TIMEOUT_S + 1)
        except (asyncio.TimeoutError, Exception):
            log.warning("console server did not stop cleanly", exc_info=True)
            task.cancel()
        sock.close()
