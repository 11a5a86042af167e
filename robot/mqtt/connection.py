"""How to reach the broker: the aiomqtt client built from settings, payloads, and the reconnect policy."""

from __future__ import annotations

import dataclasses
import json
import secrets
import socket
import time

import aiomqtt

from config.checks import is_loopback
from config.schema import MqttSettings
from robot.core.events import SCHEMA_VERSION, Event, MemoryEvent
from robot.core.retry import RetryPolicy

# Broker round-trips (CONNACK, PUBACK, SUBACK) on a healthy link take milliseconds; a
# stalled broker should be given up on well before a customer notices anything.
OPERATION_TIMEOUT_S = 5.0
# Bound what an inbound flood can hold in memory (at most this many x max_command_bytes).
# Beyond it aiomqtt drops messages unanswered ("Message queue is full"); the rate limit
# answers a flood with "busy" quickly, so the queue only has to absorb a burst: 100 lost
# 601 of 2,000 commands sent in 1.5 s.
MAX_INCOMING = 5000
# Reconnect delays grow by this factor, with up to this much random extra (see robot.core.retry):
# a fleet of robots must not hammer a restarted broker in lockstep.
RECONNECT_MULTIPLIER = 2.0
RECONNECT_JITTER = 0.2
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


def exposure_warning(settings: MqttSettings) -> str | None:
    """Why this connection lets anyone on the network command the robot, or None. On
    loopback only local processes reach the broker; elsewhere, without credentials or TLS,
    anyone who reaches it can publish `say`, `persona` or `forget`, or read the transcripts."""
    if is_loopback(settings.host):
        return None
    gaps = [gap for gap, missing in (("anonymously", settings.username is None), ("without TLS", not settings.tls))
            if missing]
    if not gaps:
        return None
    return (f"MQTT: connecting to {settings.host}:{settings.port} {' and '.join(gaps)}; anyone who can reach "
            "that broker may command this robot and read what customers say. Use an account "
            "(MQTT_USERNAME, MQTT_PASSWORD), tls: true and a broker ACL (config/mosquitto/).")


def reconnect_policy(settings: MqttSettings) -> RetryPolicy:
    """Reconnect forever, waiting reconnect_min_s, then twice as long each time up to
    reconnect_max_s (every wait stays between the two); the caller starts over after a
    successful connection."""
    return RetryPolicy(attempts=None, first_delay_s=settings.reconnect_min_s, max_delay_s=settings.reconnect_max_s,
                       multiplier=RECONNECT_MULTIPLIER, jitter=RECONNECT_JITTER)
