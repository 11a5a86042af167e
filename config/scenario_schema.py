"""The schema of simulation scenarios (config/scenarios/*.yaml): a scripted customer."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from config.schema import Strict


class ScenarioTurn(Strict):
    text: str | None = None  # synthesized with espeak-ng and fed to the microphone path
    wav: Path | None = None  # or a recording (resampled to 16 kHz mono)
    pause_before_s: float = Field(0.5, ge=0)  # silence fed before the utterance
    advance_clock_s: float = Field(0.0, ge=0)  # simulated time that passes before this turn
    expect_transcript: list[str] = []  # each word must appear in the transcript
    expect_reply_any: list[str] = []  # at least one of these must appear in the reply
    voice: str | None = None  # espeak-ng voice for the customer
    rate: int | None = Field(None, ge=60, le=400)
    # Barge-in: the customer says this turn this long after the robot began answering the
    # turn before (which must then be cut). Needs the scenario's `room`.
    interrupt_after_s: float | None = Field(None, gt=0, le=60)
    # Another visitor walks up before this turn: an id (a card, a face module) or true for
    # an anonymous one. The previous visitor's session ends; their memory is not in this one's.
    new_visitor: str | bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "ScenarioTurn":
        if (self.text is None) == (self.wav is None):
            raise ValueError("a turn needs exactly one of 'text' or 'wav'")
        return self


class RoomSettings(Strict):
    """A simulated room (speech/audio/room.py): the robot's voice comes back into the
    microphone, and a noise bed plays; the scenario then runs in real time."""

    echo_gain_db: float = Field(-6.0, ge=-60, le=0)  # the robot's voice at the microphone
    echo_delay_ms: int = Field(50, ge=0, le=500)  # loudspeaker -> microphone
    noise_wav: Path | None = None  # a noise bed under everything, looped
    noise_gain: float = Field(0.1, ge=0, le=2)


class Scenario(Strict):
    name: str
    persona: Path
    settings: Path | None = None  # settings file; default config/default.yaml
    customer_voice: str = "en-us"
    customer_rate: int = Field(140, ge=60, le=400)
    noise_wav: Path | None = None  # mixed under the customer's speech
    noise_gain: float = Field(0.1, ge=0, le=2)
    room: RoomSettings | None = None  # barge-in and echo, headless (the run takes real time)
    visitor: str | None = None  # the first visitor's id; default: anonymous (not kept after the run)
    turns: list[ScenarioTurn] = Field(min_length=1)

    @model_validator(mode="after")
    def _interruptions_need_a_room(self) -> "Scenario":
        if self.turns[0].interrupt_after_s is not None:
            raise ValueError("the first turn has no reply before it to interrupt")
        if self.room is None and any(t.interrupt_after_s is not None for t in self.turns):
            raise ValueError("interrupt_after_s needs a `room:` (the customer must be heard while the robot speaks)")
        return self
