"""How to reach the broker: the aiomqtt client built from settings, payloads, and backoff."""

from __future__ import annotations

import dataclasses
import json
import random
import secrets
import socket
import time

import aiomqtt

from config.schema import MqttSettings
from robot.events import SCHEMA_VERSION, Event, MemoryEvent

# Broker round-trips (CONNACK, PUBACK, SUBACK) on a healthy link take milliseconds; a
# stalled broker should be given up on well before a customer notices anything.
OPERATION_TIMEOUT_S = 5.0
# Bound what an inbound flood can hold in memory; commands are rare.
MAX_INCOMING = 100
# Small messages back to back (a sentence, then its gesture): without this, Nagle's
# algorithm holds the second one until the first is ACKed, up to 40 ms later on Linux.
NO_DELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def client_id(settings: MqttSettings) -> str:
    """The configured id, or a fresh one per process: two controllers must not share an id,
    or the broker keeps disconnecting one of them."""
    return settings.client_id or f"{settings.robot_id}-controller-{secrets.token_hex(3)}"


def status_payload(status: str, reason: str, ts: float | None = None) -> bytes:
    """Body of the retained ``status`` topic: online, or offline (said by us or by the will)."""
    data = {"schema": SCHEMA_VERSION, "kind": "status", "ts": ts or time.time(), "turn_id": None,
            "status": status, "reason": reason}
    return json.dumps(data).encode()


def encode(event: Event, share_memory_text: bool) -> bytes:
    """The event's JSON payload; a memory summary leaves the robot only if config allows it."""
    if isinstance(event, MemoryEvent) and event.summary is not None and not share_memory_text:
        event = dataclasses.replace(event, summary=None)
    return json.dumps(event.payload(), ensure_ascii=False, default=str).encode()


def make_client(settings: MqttSettings, identifier: str, will: aiomqtt.Will | None) -> aiomqtt.Client:
    """A new client per connection attempt: a reused aiomqtt client can carry the previous
    connection's state across an unexpected disconnect."""
    tls = aiomqtt.TLSParameters(ca_certs=str(settings.ca_file) if settings.ca_file else None) if settings.tls else None
    return aiomqtt.Client(
        settings.host,
        settings.port,
        identifier=identifier,
        username=settings.username,
        password=settings.password,
        will=will,
        clean_session=True,  # commands sent while we were away are stale: do not queue them
        keepalive=settings.keepalive_s,
        timeout=OPERATION_TIMEOUT_S,
        tls_params=tls,
        max_queued_incoming_messages=MAX_INCOMING,
        socket_options=[NO_DELAY],
    )


class Backoff:
    """Exponential delays between reconnect attempts, with jitter so a fleet of robots
    does not hammer a restarted broker in lockstep."""

    def __init__(self, first_s: float, max_s: float) -> None:
        self._first = first_s
        self._max = max_s
        self._attempt = 0

    def reset(self) -> None:
        self._attempt = 0

    def next(self) -> float:
        delay = min(self._max, self._first * 2**self._attempt)
        self._attempt = min(self._attempt + 1, 30)  # 2**30 x first_s is past any max_s
        return delay * random.uniform(0.8, 1.0)
