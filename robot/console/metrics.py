"""``/metrics``: what the robot did, in Prometheus form, counted from the event stream.

Its own registry (not prometheus-client's global one), so two robots in one process, as in
the tests, never share counters.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from robot.core.events import (ErrorEvent, Event, HandoverEvent, IgnoredEvent, InterruptionEvent, MemoryEvent,
                               TurnEvent)

# The stages a turn's latency plot shows, by their key in TurnEvent.timings.
STAGES = {"transcript": "transcript_s", "first_token": "first_token_s", "first_audio": "first_audio_s",
          # from the customer's last sound, the endpointer's wait included: what they feel
          "voice_to_voice": "voice_to_voice_s"}
BUCKETS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0)
ERROR_SOURCES = ("llm", "stt", "tts", "audio", "robot", "mqtt")


class RobotMetrics:
    """An ``EventPublisher`` that counts; ``render()`` gives the text exposition."""

    def __init__(self, mqtt_stats: Callable[[], dict[str, Any]] | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.stage = Histogram("robot_turn_stage_seconds", "Seconds from the end of the customer's speech to "
                               "each stage of a turn", ["stage"], buckets=BUCKETS, registry=r)
        self.turns = Counter("robot_turns", "Turns answered (an utterance with words, or a typed line)", registry=r)
        self.interrupted = Counter("robot_replies_interrupted", "Replies cut before their end (barge-in, stop)",
                                   registry=r)
        self.barge_ins = Counter("robot_barge_ins", "Barge-ins by verdict: cut (the robot stopped), customer, "
                                 "false_alarm (no words or its own voice: it resumed)", ["verdict"], registry=r)
        self.yields = Counter("robot_turns_yielded", "Turns that ended on a pause too early: the customer went "
                              "on while the robot thought or spoke, it stopped and answered both parts as one turn",
                              ["stage"], registry=r)
        self.false_turns = Counter("robot_false_turns_rejected", "Sounds not taken as turns (noise the second "
                                   "stage rejected, transcripts the hallucination guard dropped)", registry=r)
        self.errors = Counter("robot_errors", "Errors by source (llm, stt, tts, audio, robot: a failed turn, "
                              "a memory store error included; mqtt)", ["source"], registry=r)
        self.rewrites = Counter("robot_memory_rewrites", "Role-prompt rewrites: a summary folded in (also a "
                                "persona switch or a forget)", registry=r)
        self.handovers = Counter("robot_handovers", "Questions the shop's knowledge could not answer: the "
                                 "robot said its no_answer line and called a member of staff", registry=r)
        for stage in STAGES:
            self.stage.labels(stage)
        for source in ERROR_SOURCES:
            self.errors.labels(source)
        for verdict in ("cut", "customer", "false_alarm"):
            self.barge_ins.labels(verdict)
        for stage in ("thinking", "speaking"):
            self.yields.labels(stage)
        if mqtt_stats is not None:
            r.register(_MqttCollector(mqtt_stats))

    def publish(self, event: Event) -> None:
        if isinstance(event, TurnEvent):
            self.turns.inc()
            if event.interrupted:
                self.interrupted.inc()
            for stage, key in STAGES.items():
                if (seconds := event.timings.get(key)) is not None:
                    self.stage.labels(stage).observe(seconds)
        elif isinstance(event, ErrorEvent):
            self.errors.labels(event.source).inc()
        elif isinstance(event, MemoryEvent):
            self.rewrites.inc()
        elif isinstance(event, IgnoredEvent):
            self.false_turns.inc()
        elif isinstance(event, HandoverEvent):
            self.handovers.inc()
        elif isinstance(event, InterruptionEvent) and event.verdict == "yielded":
            self.yields.labels(event.stage or "thinking").inc()
        elif isinstance(event, InterruptionEvent):
            self.barge_ins.labels(event.verdict).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _MqttCollector(Collector):
    """The MQTT hooks' own counters, read at scrape time."""

    def __init__(self, stats: Callable[[], dict[str, Any]]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Any]:
        s = self._stats()
        yield GaugeMetricFamily("robot_mqtt_connected", "1 while the broker connection is up",
                                value=1 if s["connected"] else 0)
        yield CounterMetricFamily("robot_mqtt_reconnects", "Broker connections made again after a loss",
                                  value=s["reconnects"])
        yield CounterMetricFamily("robot_mqtt_dropped", "Events dropped while the broker was away",
                                  value=s["dropped"])
