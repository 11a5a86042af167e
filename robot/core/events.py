"""Events the controller emits, and the one interface that carries them out.

Every stage of a turn reports what happened as a small frozen dataclass. A publisher
(the log, the MQTT hooks, a test recorder) receives them through ``publish()``, which
must never block: it is called from the dialogue loop, next to the audio path.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field, fields, replace
from enum import Enum
from typing import Any, ClassVar, Protocol

from robot.core.redact import has_secrets, redact

SCHEMA_VERSION = 1


class RobotState(str, Enum):
    IDLE = "idle"
    LISTENING = "listening"
    THINKING = "thinking"
    SPEAKING = "speaking"


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event: ``kind`` names the topic family (state, transcript, ...)."""

    kind: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time)  # wall-clock seconds since the epoch
    turn_id: str | None = None

    def payload(self) -> dict[str, Any]:
        """JSON-ready dict with the schema version, as the MQTT hooks publish it."""
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, Enum):
                data[key] = value.value
        return {"schema": SCHEMA_VERSION, "kind": self.kind, **data}


@dataclass(frozen=True, kw_only=True)
class StateEvent(Event):
    kind: ClassVar[str] = "state"
    state: RobotState


@dataclass(frozen=True, kw_only=True)
class TranscriptEvent(Event):
    """What the customer said, once speech-to-text is done."""

    kind: ClassVar[str] = "transcript"
    text: str
    audio_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SpeechEvent(Event):
    """A sentence the robot is about to speak (published right before its audio starts)."""

    kind: ClassVar[str] = "speech"
    text: str
    index: int  # sentence number within the turn, from 0
    duration_s: float


@dataclass(frozen=True, kw_only=True)
class GestureEvent(Event):
    """A gesture to perform now: an LLM tag's as its sentence starts playing, a planned one
    (the persona's gesture_rules) as playback reaches its word; never one of audio that
    was cut before it."""

    kind: ClassVar[str] = "gesture"
    name: str
    sentence_index: int | None = None
    reason: str = "reply"  # "reply" (goes with a sentence) or "state" (persona's default for a state)
    planned: bool = False  # chosen by the gesture planner from the persona's rules, not an LLM tag
    word_index: int | None = None  # the word of the sentence it goes with (planned); None: its start
    at_s: float = 0.0  # estimated seconds after the sentence's audio starts: when it is published


@dataclass(frozen=True, kw_only=True)
class MemoryEvent(Event):
    """The role prompt was rewritten. ``summary`` is None unless config allows sharing it."""

    kind: ClassVar[str] = "memory"
    version: int
    prompt_chars: int
    prompt_tokens: int
    summary: str | None = None


@dataclass(frozen=True, kw_only=True)
class ErrorEvent(Event):
    """Trouble an operator or the body should see; ``source`` is llm, stt, audio, mqtt, command..."""

    kind: ClassVar[str] = "error"
    source: str
    message: str


@dataclass(frozen=True, kw_only=True)
class TurnEvent(Event):
    """One finished turn with its stage timings (seconds from end of speech)."""

    kind: ClassVar[str] = "turn"
    user_text: str
    reply_text: str
    timings: dict[str, float | None]
    interrupted: bool = False  # the reply was cut (stop command; later barge-in)


@dataclass(frozen=True, kw_only=True)
class InterruptionEvent(Event):
    """Barge-in: the robot stopped because the customer spoke ("cut"), then the verdict on
    it: "customer" (the robot answers them) or "false_alarm" (no words, or its own voice:
    the robot says the rest of the cut sentence). "yielded": the customer went on just after
    their turn ended on a pause; the robot stopped the turn it had begun (``stage``: thinking
    or speaking) and answers both parts as one turn (robot/dialogue/yielding.py)."""

    kind: ClassVar[str] = "interruption"
    verdict: str  # "cut" | "customer" | "false_alarm" | "yielded"
    detect_s: float | None = None  # onset of the customer's speech -> the cut, in audio time
    stage: str | None = None  # "yielded": "thinking" | "speaking"


@dataclass(frozen=True, kw_only=True)
class IgnoredEvent(Event):
    """Sound that was not taken as a turn: noise (the second stage), or a transcript the
    hallucination guard dropped. Operators count these as false turns avoided."""

    kind: ClassVar[str] = "ignored"
    reason: str
    audio_s: float


@dataclass(frozen=True, kw_only=True)
class SessionEvent(Event):
    """A visitor's session began or ended. ``visitor`` is the id a card reader, a face
    module or an operator gave, or "anonymous"; ``reason`` says why it ended (idle, goodbye,
    command, new visitor, exit)."""

    kind: ClassVar[str] = "session"
    state: str  # "started" | "ended"
    visitor: str
    turns: int = 0  # customer turns in the session (when it ended)
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ForgottenEvent(Event):
    """A visitor's memory was deleted: at their own request, by voice (``by: visitor``), or by
    an operator's ``forget`` (``by: operator``). A body that keeps data of its own about the
    visitor (a face module's embedding, a card reader's log) deletes it on this event."""

    kind: ClassVar[str] = "forgotten"
    visitor: str  # the id a card reader or face module gave (or the store name an operator used)
    by: str  # "visitor" | "operator"


@dataclass(frozen=True, kw_only=True)
class HandoverEvent(Event):
    """A visitor asked for something the shop's knowledge does not hold: the robot said its
    ``no_answer`` line and offers a member of staff; staff (a pager, the console) come over."""

    kind: ClassVar[str] = "handover"
    question: str  # the visitor's words
    reason: str = "no_answer"  # "no_answer": the knowledge holds nothing for it; "partial": part of it
    missing: str = ""  # what the files lack of the question ("a child fare"), when the robot knows
    # The consultation sheet (robot/consult/sheet.py): who, the party, dates, needs, the plan with its
    # quote and total, the open questions; None for a shop without offers.
    sheet: dict | None = None


class EventPublisher(Protocol):
    """Anything that takes events. ``publish`` must return at once (queue, don't wait)."""

    def publish(self, event: Event) -> None: ...


class EventBus:
    """Fans each event out to several publishers; one failing publisher never stops the rest."""

    def __init__(self, *publishers: EventPublisher) -> None:
        self._publishers: list[EventPublisher] = list(publishers)

    def add(self, publisher: EventPublisher) -> None:
        self._publishers.append(publisher)

    def publish(self, event: Event) -> None:
        event = _without_secrets(event)  # what goes out (MQTT, the console) never carries a secret
        for publisher in list(self._publishers):
            try:
                publisher.publish(event)
            except Exception:  # a broken sink must not break the conversation
                import logging

                logging.getLogger(__name__).exception("publisher %r failed", publisher)


def _without_secrets(event: Event) -> Event:
    """The event with every known secret masked in its texts (robot/core/redact.py)."""
    if not has_secrets():
        return event
    clean = {f.name: redact(v, shapes=False) for f in fields(event) if isinstance(v := getattr(event, f.name), str)}
    changed = {name: text for name, text in clean.items() if text != getattr(event, name)}
    return replace(event, **changed) if changed else event


class RecordingPublisher:
    """Keeps every event in a list (tests, the simulator's report); with ``limit`` only the
    latest ``limit`` (a robot that runs for days must not keep them all: issue 28, item 7)."""

    def __init__(self, limit: int | None = None) -> None:
        self.events: list[Event] | deque[Event] = [] if limit is None else deque(maxlen=limit)

    def publish(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
