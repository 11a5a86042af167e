"""The schema of simulation scenarios (config/scenarios/*.yaml): a scripted customer."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from config.schema import Strict


class FactsExpectation(Strict):
    """At least `at_least` of the facts `of` in the reply (and, with `from_turn`, in the replies
    since that turn: an answer and its continuation after "Shall I tell you more?")."""

    at_least: int = Field(ge=1, le=1000, description="How many of the facts must be said.")
    of: list[str] = Field(min_length=1, description=(
        "The facts, each a word or phrase; alternatives of one fact separated by `|` (\"2,000|two thousand\")."))
    from_turn: int | None = Field(None, ge=1, le=10000, description=(
        "Count over the replies from this turn (1 = the first) through this one; null: this reply only."))


class ScenarioTurn(Strict):
    """One utterance of the customer: exactly one of `text` or `wav`, and what must be heard
    and answered."""

    text: str | None = Field(None, description=(
        "What the customer says: synthesized with espeak-ng and fed to the microphone path."))
    wav: Path | None = Field(None, description=(
        "A recording to feed instead of text (any rate and channels: resampled to 16 kHz mono)."))
    pause_before_s: float = Field(0.5, ge=0, le=600, description="Seconds of silence fed before the utterance.")
    advance_clock_s: float = Field(0.0, ge=0, le=400 * 86400, description=(
        "Simulated seconds that pass before this turn, so the memory timer and the session timeout fire."))
    expect_transcript: list[str] = Field([], description=(
        "Words that must each appear in the transcript (\"temple\" is also heard in \"temples\")."))
    expect_reply_any: list[str] = Field([], description="At least one of these words must appear in the reply.")
    expect_from_knowledge: bool = Field(False, description=(
        "The reply must say a whole sentence of one of the persona's knowledge entries (answered from "
        "the shop's own knowledge)."))
    expect_recommendation: bool = Field(False, description=(
        "The reply recommends one of the shop's offers with its total for the visitor's party (docs/consult.md)."))
    expect_handover_sheet: bool = Field(False, description=(
        "The turn hands over to staff with a complete consultation sheet: the party, the plan priced, its total."))
    expect_reply_facts: FactsExpectation | None = Field(None, description=(
        "Facts the reply must name, such as what a recap must recall; null: none."))
    voice: str | None = Field(None, description="espeak-ng voice of this turn; null: the scenario's customer_voice.")
    rate: int | None = Field(None, ge=60, le=400, description=(
        "Speaking rate of this turn in words per minute; null: the scenario's customer_rate."))
    interrupt_after_s: float | None = Field(None, gt=0, le=60, description=(
        "Barge-in: the customer says this turn this many seconds after the robot began answering the turn "
        "before, which must then be cut. Said within 1.5 s of the answer's start it may be taken for the rest of "
        "that turn (yield and merge): the run then reports it merged there, and the turn before as not cut. "
        "Needs the scenario's `room`; null: the turn waits for the reply."))
    goes_on: str | None = Field(None, description=(
        "Yield and merge: after `text` the customer pauses `goes_on_after_s`, then says this as part of the "
        "same turn. A pause longer than the endpointer's hangover ends the turn early; the robot then stops "
        "what it began and answers both parts as one turn. null: nothing more."))
    goes_on_after_s: float = Field(1.3, ge=0, le=60, description="Seconds of silence before `goes_on`.")
    new_visitor: str | bool = Field(False, description=(
        "Another visitor walks up before this turn: an id (a card, a face module) or true for an anonymous "
        "one. The previous visitor's session ends, and their memory is not in this one's. false: the same "
        "visitor."))

    @model_validator(mode="after")
    def _one_source(self) -> "ScenarioTurn":
        if (self.text is None) == (self.wav is None):
            raise ValueError("a turn needs exactly one of 'text' or 'wav'")
        return self


class RoomSettings(Strict):
    """A simulated room (speech/audio/room.py): the robot's voice comes back into the
    microphone, and a noise bed plays; the scenario then runs in real time."""

    echo_gain_db: float = Field(-6.0, ge=-60, le=0, description="Level of the robot's voice at the microphone, in dB.")
    echo_delay_ms: int = Field(50, ge=0, le=500, description="Milliseconds from the loudspeaker to the microphone.")
    noise_wav: Path | None = Field(None, description="A noise bed under everything, looped; null: none.")
    noise_gain: float = Field(0.1, ge=0, le=2, description="Linear gain of noise_wav.")


class Scenario(Strict):
    """A simulation scenario (config/scenarios/*.yaml, run by `robot simulate`): a scripted
    customer talks to a persona through the real microphone path. Paths are relative to the
    scenario file."""

    name: str = Field(description="The scenario's name, as the report shows it.")
    persona: Path = Field(description="The persona file the robot plays.")
    settings: Path | None = Field(None, description="The settings file; null: config/default.yaml.")
    customer_voice: str = Field("en-us", description="espeak-ng voice of the customer.")
    customer_rate: int = Field(140, ge=60, le=400, description=(
        "The customer's speaking rate in words per minute (about 140 is what Whisper understands well)."))
    noise_wav: Path | None = Field(None, description="A recording mixed under the customer's speech; null: none.")
    noise_gain: float = Field(0.1, ge=0, le=2, description="Linear gain of noise_wav.")
    room: RoomSettings | None = Field(None, description=(
        "A simulated room: the robot hears its own voice and a noise bed, and the run takes real time. "
        "Needed by interrupt_after_s. null: no room."))
    visitor: str | None = Field(None, description=(
        "The first visitor's id; null: anonymous (nothing of them is kept after the run)."))
    turns: list[ScenarioTurn] = Field(min_length=1, description="What the customer says, in order; at least one turn.")

    @model_validator(mode="after")
    def _interruptions_need_a_room(self) -> "Scenario":
        if self.turns[0].interrupt_after_s is not None:
            raise ValueError("the first turn has no reply before it to interrupt")
        if self.room is None and any(t.interrupt_after_s is not None for t in self.turns):
            raise ValueError("interrupt_after_s needs a `room:` (the customer must be heard while the robot speaks)")
        return self
