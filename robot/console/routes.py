"""The console's HTTP side: the page and its assets, the robot's status, the live event
stream (server-sent events), controls, and /metrics. Every asset is served from
``static/``: kiosks are offline, so the page loads nothing from elsewhere."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from robot.console.hub import EventHub
from robot.console.metrics import RobotMetrics
from robot.console.status import RobotStatus
from robot.control.actions import RobotControl
from robot.control.commands import CommandRejected, execute, parse_command

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
MAX_COMMAND_BYTES = 4096
PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ConsoleRoutes:
    """Request handlers over the robot's parts; ``app()`` is the Starlette application."""

    def __init__(self, hub: EventHub, metrics: RobotMetrics, status: RobotStatus, control: RobotControl) -> None:
        self.hub, self.metrics, self.status, self.control = hub, metrics, status, control
        self._running: set[asyncio.Task[str]] = set()

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/", lambda _: FileResponse(STATIC / "index.html")),
            Route("/api/status", self.get_status),
            Route("/api/events", self.events),
            Route("/api/command", self.command, methods=["POST"]),
            Route("/metrics", self.get_metrics),
            Mount("/static", StaticFiles(directory=STATIC)),
        ])

    async def get_status(self, _: Request) -> JSONResponse:
        await self.status.notice_forgets()  # never serve the words of a visitor forgotten elsewhere
        personas = await asyncio.to_thread(self.status.personas)
        return JSONResponse(self.status.snapshot(personas))

    async def get_metrics(self, _: Request) -> Response:
        return Response(await asyncio.to_thread(self.metrics.render), media_type=PROMETHEUS_TYPE)

    async def events(self, request: Request) -> StreamingResponse:
        """Server-sent events: the log since ``Last-Event-ID`` (or ``?after=``), then live."""
        after = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        start = int(after) if after.isdigit() else 0
        await self.status.notice_forgets()  # the replay holds no words of a visitor forgotten elsewhere

        async def lines():
            yield "retry: 1000\n\n"
            async for item in self.hub.stream(start):
                if item is None:
                    yield ": ping\n\n"
                    continue
                seq, event = item
                yield f"id: {seq}\ndata: {json.dumps(event.payload(), ensure_ascii=False)}\n\n"

        return StreamingResponse(lines(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def command(self, request: Request) -> JSONResponse:
        """The same commands as MQTT (robot.control.commands): 400 with the reason when invalid,
        409 when the robot could not do it, 200 with what was done."""
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            # a plain form post from another site cannot set this type without CORS consent
            return JSONResponse({"error": "send the command as application/json"}, 415)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_COMMAND_BYTES:
                break  # parse_command reports the size; the rest is never read
        try:
            command = parse_command(bytes(body), MAX_COMMAND_BYTES)
        except CommandRejected as exc:
            return JSONResponse({"error": exc.reason}, 400)
        # Its own task: a browser that goes away mid-`say` must not cut the command half-way.
        task = asyncio.create_task(execute(self.control, command, self.status.persona_dir))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        try:
            detail = await asyncio.shield(task)
        except CommandRejected as exc:
            return JSONResponse({"error": exc.reason}, 400)
        except Exception as exc:  # the control failed (a persona that does not load, ...)
            log.warning("console command %s failed: %s", command.command, exc)
            return JSONResponse({"error": f"{command.command} failed: {exc}"}, 409)
        log.info("console command %s: %s", command.command, detail)
        return JSONResponse({"command": command.command, "detail": detail})
