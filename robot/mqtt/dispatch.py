"""Turns messages from the command topic into RobotControl calls, and answers each one.

Every message gets exactly one answer: an ``ack`` event when the command ran, or an
``error`` event (source "command") when it was rejected or the control raised.
Answers go out through the same non-blocking publish as every other event.

In a flood, the rate limit's refusals are gathered: the first of a flood is answered
alone, the rest in one ``error`` per command name every BUSY_GATHER_S (or BUSY_GATHER_MAX
ids) whose ``ids`` lists each refused command. 5,000 commands in a second cost a few dozen
events, not 5,000, so the outbox never has to drop an answer to make room.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from robot.control.actions import RobotControl
from robot.control.commands import (
                                    Command,
                                    CommandAckEvent,
                                    CommandErrorEvent,
                                    CommandRejected,
                                    execute,
                                    parse_command,
                                    )
from robot.core.events import Event
from robot.mqtt.rate_limit import TokenBucket

log = logging.getLogger(__name__)

BUSY_GATHER_S = 0.25
BUSY_GATHER_MAX = 500


class CommandDispatcher:
    def __init__(
        self,
        command_topic: str,
        max_bytes: int,
        persona_dir: Path,
        publish: Callable[[Event], None],
        control: RobotControl | None = None,
        limit: TokenBucket | None = None,
    ) -> None:
        self.command_topic = command_topic
        self.control = control
        self._limit = limit
        self._flooded = False  # busy answers are logged once per flood, not once each
        self._gathered: dict[str, list[str | None]] = {}  # refused in this flood, by command name
        self._gather_timer: asyncio.TimerHandle | None = None
        self._max_bytes = max_bytes
        self._persona_dir = persona_dir
        self._publish = publish
        self._running: set[asyncio.Task[None]] = set()
        self.accepted = 0
        self.rejected = 0
        self.busy = 0  # rejected by the rate limit (counted in rejected too)

    def handle(self, topic: str, payload: bytes, retained: bool = False) -> None:
        """Validate one message and start its command; never raises, never waits."""
        if topic != self.command_topic:
            # the subscription is exact, so this is a broker or wildcard surprise: ignore it
            log.warning("ignored a message on %s (commands come on %s only)", topic, self.command_topic)
            return
        if retained:
            # a retained command would run again on every reconnect
            self._reject(CommandRejected("retained commands are ignored; publish without retain"))
            return
        try:
            command = parse_command(payload, self._max_bytes)
        except CommandRejected as exc:
            self._reject(exc)
            return
        except Exception as exc:  # a parser surprise must cost one command, not the connection
            log.exception("cannot read a command")
            self._reject(CommandRejected(f"cannot read the command: {exc}"))
            return
        if self.control is None:
            self._reject(CommandRejected("no controller attached yet", command.command, command.id))
            return
        # `stop` is never refused: silencing the robot must work in a flood too
        if self._limit is not None and command.command != "stop" and not self._limit.take():
            self._busy(command)
            return
        self._flooded = False
        # each command is its own task so that a long `say` never holds back a `stop`;
        # tasks start in arrival order, so mute/unmute keep their order
        task = asyncio.create_task(self._run(self.control, command), name=f"mqtt-command-{command.command}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, control: RobotControl, command: Command) -> None:
        try:
            detail = await execute(control, command, self._persona_dir)
        except CommandRejected as exc:
            self._reject(CommandRejected(exc.reason, command.command, command.id))
        except Exception as exc:  # the control's failure is the operator's news, not a crash
            log.warning("command %s failed: %s", command.command, exc)
            self._reject(CommandRejected(f"{command.command} failed: {exc}", command.command, command.id))
        else:
            self.accepted += 1
            self._publish(CommandAckEvent(command=command.command, id=command.id, detail=detail))

    def _reject(self, exc: CommandRejected, quiet: bool = False) -> None:
        self.rejected += 1
        if not quiet:
            log.warning("command rejected: %s", exc.reason)
        self._publish(exc.event())

    def _busy(self, command: Command) -> None:
        self.busy += 1
        if not self._flooded:
            self._flooded = True
            self._reject(CommandRejected(self._busy_reason(), command.command, command.id))
            return
        self.rejected += 1
        ids = self._gathered.setdefault(command.command, [])
        ids.append(command.id)
        if len(ids) >= BUSY_GATHER_MAX:
            self.flush()
        elif self._gather_timer is None:
            self._gather_timer = asyncio.get_running_loop().call_later(BUSY_GATHER_S, self.flush)

    def _busy_reason(self) -> str:
        assert self._limit is not None
        return (f"busy: more than {self._limit.rate:g} commands per second (bursts of {self._limit.burst}); "
                f"try again in {self._limit.wait_s():.1f} s")

    def flush(self) -> None:
        """Answer the refusals gathered so far: one error event per command name."""
        if self._gather_timer is not None:
            self._gather_timer.cancel()
            self._gather_timer = None
        gathered, self._gathered = self._gathered, {}
        for name, ids in gathered.items():
            self._publish(CommandErrorEvent(message=self._busy_reason(), command=name, ids=tuple(ids)))

    async def aclose(self) -> None:
        """Cancel commands still running (the controller is shutting down)."""
        self.flush()
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

