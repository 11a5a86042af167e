"""MqttHooks: the robot's MQTT side. An EventPublisher for the dialogue loop, plus commands.

One background task owns the connection, in the aiomqtt reconnect-loop style: connect,
announce (online + the current state, both retained), then send the queue and read the
command topic until the connection breaks; wait with exponential backoff; repeat.
The dialogue loop only ever calls ``publish()``, which queues and returns, so a missing
or vanished broker never slows the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import aiomqtt

from config.schema import MqttSettings
from robot.control.actions import RobotControl
from robot.control.commands import DEFAULT_PERSONA_DIR
from robot.core.events import ErrorEvent, Event
from robot.core.retry import describe_exception
from robot.mqtt.connection import (
                                   OPERATION_TIMEOUT_S,
                                   client_id,
                                   encode,
                                   exposure_warning,
                                   make_client,
                                   reconnect_policy,
                                   status_payload,
                                   )
from robot.mqtt.dispatch import CommandDispatcher
from robot.mqtt.outbox import Outbox
from robot.mqtt.rate_limit import TokenBucket
from robot.mqtt.topics import Topics, is_retained

log = logging.getLogger(__name__)

DROP_NOTICE_EVERY_S = 1.0  # a long overflow is told once a second, with the count since the last notice


class MqttHooks:
    """Publish robot events to the body and run its commands; see docs/mqtt.md.

    ``publish(event)`` never blocks; ``start()`` returns at once; ``aclose()`` says offline.
    Counters: ``published``, ``dropped``, ``reconnects``, ``queued``, ``connected``, ``stats()``.
    """

    def __init__(self, settings: MqttSettings, control: RobotControl | None = None) -> None:
        self.settings = settings
        self.topics = Topics.from_settings(settings)
        self.client_id = client_id(settings)
        self._outbox = Outbox(settings.queue_size)
        self._commands = CommandDispatcher(
            self.topics.command,
            settings.max_command_bytes,
            settings.persona_dir or DEFAULT_PERSONA_DIR,
            self.publish,
            control,
            TokenBucket(settings.commands_per_s, settings.command_burst),
        )
        self._reconnect = reconnect_policy(settings)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._close_deadline = 0.0
        self._connected = asyncio.Event()
        self._offline_since: float | None = None
        self._outage_notice: ErrorEvent | None = None
        self._drops_told = 0  # dropped events the error topic has been told of
        self._drops_told_at = float("-inf")
        self.published = 0  # events the broker acknowledged (QoS>0) or took (QoS 0)
        self.republished = 0  # retained states sent again after a reconnect
        self.connections = 0
        self.abandoned = 0  # still queued when aclose() gave up (no broker, or out of time)
        self.last_error: str | None = None

    # --- the EventPublisher side ----------------------------------------------------

    def publish(self, event: Event) -> None:
        """Queue an event for the broker; returns at once, from any thread, connected or not."""
        if self._closing:
            return
        self._outbox.put(event)

    # --- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the background connection; returns at once, even if no broker is there."""
        if self._task is None:
            if warning := exposure_warning(self.settings):
                log.warning("%s", warning)
            self._outbox.bind(asyncio.get_running_loop())
            self._task = asyncio.create_task(self._run(), name="mqtt-hooks")

    def set_control(self, control: RobotControl | None) -> None:
        self._commands.control = control

    async def wait_connected(self, timeout: float | None = None) -> bool:
        """True once connected (and announced); False if ``timeout`` passes first."""
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        """Flush what is queued (for up to close_timeout_s), say offline, disconnect cleanly."""
        if self._closing:
            return
        self._commands.flush()  # refusals still gathered go out before publish() shuts
        self._closing = True
        await self._commands.aclose()
        if self._task is None:
            return
        self._close_deadline = time.monotonic() + self.settings.close_timeout_s
        if not self.connected:
            # nobody to say goodbye to; if we were ever connected, the broker sent our will
            self._task.cancel()
        self._outbox.wake()
        done, _ = await asyncio.wait({self._task}, timeout=self.settings.close_timeout_s + OPERATION_TIMEOUT_S)
        if not done:  # the broker stalled mid-goodbye
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=OPERATION_TIMEOUT_S)
        self._connected.clear()
        self.abandoned = len(self._outbox)

    # --- counters (tests, health) ---------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    @property
    def dropped(self) -> int:
        return self._outbox.dropped + self.abandoned

    @property
    def reconnects(self) -> int:
        return max(0, self.connections - 1)

    @property
    def queued(self) -> int:
        return len(self._outbox)

    def stats(self) -> dict[str, Any]:
        return {
            "connected": self.connected,
            "published": self.published,
            "dropped": self.dropped,
            "queued": self.queued,
            "reconnects": self.reconnects,
            "republished_states": self.republished,
            "commands_accepted": self._commands.accepted,
            "commands_rejected": self._commands.rejected,
            "commands_busy": self._commands.busy,
            "last_error": self.last_error,
        }

    # --- the connection loop --------------------------------------------------------

    async def _run(self) -> None:
        backoff = self._reconnect.backoff()
        while not self._closing:
            try:
                async with make_client(self.settings, self.client_id, self._will()) as client:
                    self._on_connected()
                    backoff.reset()
                    await self._session(client)
            except* aiomqtt.MqttError as group:
                self._on_lost(group.exceptions[0])
            except* Exception as group:  # a bug here must not end MQTT for the rest of the day
                log.error("MQTT session failed", exc_info=group.exceptions[0])
                self._on_lost(group.exceptions[0])
            if not self._closing:
                await asyncio.sleep(backoff.next())

    def _will(self) -> aiomqtt.Will:
        # the broker publishes this if we vanish without a DISCONNECT; its ts is the
        # connect time, as the broker cannot stamp it
        payload = status_payload("offline", "connection lost")
        return aiomqtt.Will(self.topics.status, payload, qos=self.settings.qos, retain=True)

    async def _session(self, client: aiomqtt.Client) -> None:
        await client.subscribe(self.topics.command, qos=self.settings.qos)
        await self._announce(client)
        self._connected.set()
        # the receiver doubles as the disconnect detector: aiomqtt ends its iterator with
        # MqttError when the link drops, and the TaskGroup then cancels a pending publish
        async with asyncio.TaskGroup() as group:
            receiver = group.create_task(self._receive(client))
            await self._drain(client)
            await self._publish_raw(client, self.topics.status, status_payload("offline", "shutdown"), retain=True)
            receiver.cancel()

    async def _announce(self, client: aiomqtt.Client) -> None:
        """Online, the current state again (a restarted broker has lost its retained copy),
        and what the outage cost. Sent directly, ahead of the queue, so that they never push
        a queued event out of a full queue."""
        await self._publish_raw(client, self.topics.status, status_payload("online", "connected"), retain=True)
        state = self._outbox.latest_state
        if state is not None and not self._outbox.holds(state):  # a queued state will come in order
            await self._publish_raw(client, self.topics.state, encode(state, False), retain=True)
            self.republished += 1
        if self._outage_notice is not None:
            await self._publish_raw(client, self.topics.error, encode(self._outage_notice, False))
            self._outage_notice = None

    async def _drain(self, client: aiomqtt.Client) -> None:
        """Send queued events in order until shutdown; an event leaves the queue only once sent."""
        while True:
            event = self._outbox.peek()
            if self._closing and (event is None or time.monotonic() > self._close_deadline):
                return  # what is left is counted as abandoned by aclose()
            if event is None:
                await self._outbox.wait()
                continue
            await self._send(client, event)
            self._outbox.done(event)
            await self._tell_drops(client)

    async def _tell_drops(self, client: aiomqtt.Client) -> None:
        """An error event for events the full queue dropped: at most one a second, sent
        ahead of the queue so that it cannot push out another event itself."""
        dropped = self._outbox.dropped
        now = time.monotonic()
        if dropped == self._drops_told or now - self._drops_told_at < DROP_NOTICE_EVERY_S:
            return
        notice = ErrorEvent(source="mqtt", message=(
            f"{dropped - self._drops_told} events dropped: more than queue_size ({self.settings.queue_size}) "
            f"waited for the broker; {dropped} dropped since start (answers to commands are dropped last)"))
        self._drops_told, self._drops_told_at = dropped, now
        log.warning("%s", notice.message)
        await self._publish_raw(client, self.topics.error, encode(notice, False))

    async def _send(self, client: aiomqtt.Client, event: Event) -> None:
        try:
            payload = encode(event, self.settings.share_memory_text)
        except Exception:  # one unserializable event must not jam the queue
            log.exception("cannot encode %r; dropped", event)
            self._outbox.dropped += 1
            return
        await self._publish_raw(client, self.topics.for_event(event), payload, retain=is_retained(event))
        self.published += 1

    async def _publish_raw(self, client: aiomqtt.Client, topic: str, payload: bytes, retain: bool = False) -> None:
        await client.publish(topic, payload, qos=self.settings.qos, retain=retain)

    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            payload = message.payload
            raw = payload if isinstance(payload, bytes) else str(payload or "").encode()
            self._commands.handle(str(message.topic), raw, retained=message.retain)

    # --- bookkeeping ----------------------------------------------------------------

    def _on_connected(self) -> None:
        self.connections += 1
        log.info("MQTT connected to %s:%s as %s", self.settings.host, self.settings.port, self.client_id)
        if self._offline_since is not None:
            # the operator should learn that the body may have missed part of the conversation
            gap = time.monotonic() - self._offline_since
            self._offline_since = None
            self._outage_notice = ErrorEvent(
                source="mqtt", message=f"broker connection back after {gap:.1f} s; {self.dropped} events dropped so far")
            self._drops_told = self._outbox.dropped  # the notice tells them

    def _on_lost(self, exc: BaseException) -> None:
        first = self._offline_since is None
        self._connected.clear()
        self.last_error = describe_exception(exc)
        if first:
            self._offline_since = time.monotonic()
            # once per outage: a missing broker should not flood the log every backoff step
            log.warning("MQTT broker %s:%s unavailable (%s); events queue up, reconnecting (%s)",
                        self.settings.host, self.settings.port, self.last_error,
                        self._reconnect.describe())
        else:
            log.debug("MQTT reconnect failed: %s", self.last_error)
