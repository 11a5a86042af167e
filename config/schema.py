"""The schema every YAML file is validated against (pydantic, unknown keys rejected)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator,
                      model_validator)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def auto_threads(value: object) -> object:
    """``auto``: one thread per compute-bound component on a machine of two cores or fewer
    (measured with bench/threads.py: there, two threads each for the LLM and STT fight the
    summary, TTS and each other), else half the cores this process may use."""
    if value != "auto":
        return value
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 1 if cores <= 2 else min(8, cores // 2)


# CPU threads of a compute-bound component: a number, or "auto" (resolved when loaded).
ThreadCount = Annotated[int, BeforeValidator(auto_threads), Field(ge=1, le=64)]


# --- settings (config/default.yaml, or --settings FILE) -------------------------------


class AudioSettings(Strict):
    input_device: str | int | None = None  # name or index; None = the system default
    output_device: str | int | None = None
    device_sample_rate: int | None = None  # None = try 16 kHz, else the device's default
    block_ms: int = Field(20, ge=10, le=30)


class VadSettings(Strict):
    aggressiveness: int = Field(3, ge=0, le=3)
    frame_ms: Literal[10, 20, 30] = 20
    preroll_ms: int = Field(300, ge=0, le=2000)  # audio kept before speech onset
    hangover_ms: int = Field(700, ge=100, le=5000)  # silence that ends a turn
    start_ms: int = Field(120, ge=20, le=1000)  # voiced audio needed to open a turn
    min_speech_ms: int = Field(250, ge=0, le=5000)  # shorter blips (clicks) are no turn
    # Whisper hears 30 s at most: a cut utterance (pre-roll included) stays inside that.
    max_utterance_s: float = Field(29.0, gt=1, le=29.5)


class BargeInSettings(Strict):
    """Listening while the robot speaks (docs/speech.md "Barge-in")."""

    enabled: bool = True  # the customer may interrupt the robot by speaking
    confirm_ms: int = Field(150, ge=32, le=2000)  # speech Silero must hear before the robot stops
    threshold: float = Field(0.8, gt=0, lt=1)  # Silero speech probability that counts (robot speaking)
    confirm_by_transcript: bool = True  # a cut that turns out to be no words / own voice resumes
    resume: bool = True  # after a false interruption, say the rest of the cut sentence
    echo_cancel: bool = True  # WebRTC echo canceller on the microphone (off with a hardware AEC array)
    echo_delay_ms: int = Field(50, ge=0, le=500)  # loudspeaker -> microphone delay hint


class SttSettings(Strict):
    model: str = "embedded:tiny.en"  # "embedded:tiny.en" or a CTranslate2 model directory
    language: str | None = "en"
    beam_size: int = Field(1, ge=1, le=10)
    compute_type: str = "int8"
    cpu_threads: ThreadCount = Field("auto", validate_default=True)  # faster-whisper
    device: str = "cpu"
    # The hallucination guard (speech/stt_guard.py): a segment is dropped when it is more
    # likely silence than no_speech_max OR decoded less confidently than logprob_min.
    no_speech_max: float = Field(0.6, ge=0, le=1)
    logprob_min: float = Field(-1.0, le=0)


class LlmSettings(Strict):
    backend: Literal["embedded", "openai"] = "embedded"
    model: str = "embedded:smollm2-135m"  # model name for a server, or a GGUF path / embedded:NAME
    base_url: str | None = None  # env OPENAI_BASE_URL overrides
    api_key: str | None = Field(None, repr=False)  # prefer env OPENAI_API_KEY; never logged (repr hides it)
    temperature: float = Field(0.3, ge=0, le=2)
    # Penalties against repeating words: small local models loop without them.
    frequency_penalty: float = Field(0.0, ge=-2, le=2)
    presence_penalty: float = Field(0.0, ge=-2, le=2)
    max_tokens: int = Field(160, ge=1, le=8192)
    seed: int | None = None  # a fixed seed makes replies reproducible (simulations, tests)
    timeout_s: float = Field(30.0, gt=0)  # whole request (first token included)
    first_token_timeout_s: float = Field(20.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    backoff_s: float = Field(0.5, ge=0)
    # A customer hears something within seconds whatever the LLM does (robot/reply_timing.py):
    # the persona's filler after this long without a first sentence, its apology after that.
    filler_after_s: float = Field(2.0, gt=0, le=30)
    give_up_after_s: float = Field(8.0, gt=0, le=120)
    context_tokens: int = Field(2048, ge=256)  # embedded: llama.cpp context size
    threads: ThreadCount = Field("auto", validate_default=True)  # embedded: replies
    # embedded: summaries on an in-process server of their own with these threads, so a
    # summary's prompt never holds up a reply's first token (bench/threads.py); null: they
    # share the reply's server
    summary_threads: ThreadCount | None = Field("auto", validate_default=True)
    prompt_cache_mib: int = Field(256, ge=0)  # embedded: RAM for reusable prompt states; 0 = off

    @model_validator(mode="after")
    def _filler_before_giving_up(self) -> "LlmSettings":
        if self.filler_after_s >= self.give_up_after_s:
            raise ValueError("filler_after_s must be below give_up_after_s (the filler comes first)")
        return self


class TtsSettings(Strict):
    engine: Literal["pyttsx3"] = "pyttsx3"
    voice: str | None = None  # default voice; a persona may override
    rate: int = Field(150, ge=60, le=400)


class LoggingSettings(Strict):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    turn_log: Path | None = None  # also append the per-turn JSON lines to this file


class MemoryStoreSettings(Strict):
    # Where memory lives: unset = the SQLite file at db_path (one kiosk); a fleet shares a
    # PostgreSQL database, postgresql://user@host:port/db (password: PGPASSWORD, ~/.pgpass
    # or a libpq service file, never in the URL). docs/memory.md, "A fleet of kiosks".
    store: str | None = None
    db_path: Path = Path("var/memory.sqlite3")
    user: str = "default"  # the memory of single-user tools (replays, benches); kiosks keep one per visitor
    token_budget: int = Field(1500, ge=200)  # prompt tokens the memory aims to stay under
    retention_days: float = Field(90.0, ge=0)  # known visitors: deleted this long after their last visit
    anonymous_retention_days: float = Field(0.0, ge=0)  # anonymous visitors: 0 = not kept after the session


class SessionSettings(Strict):
    """A visitor's session: opens on the first utterance after idle (or a session/start
    command), closes after this much silence, on session/end, or on exit."""

    idle_timeout_s: float = Field(90.0, gt=0, le=86400)


class MqttSettings(Strict):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(1883, ge=1, le=65535)
    prefix: str = "kiosk"
    robot_id: str = "robot1"
    client_id: str | None = None
    qos: int = Field(1, ge=0, le=2)
    username: str | None = None
    password: str | None = Field(None, repr=False)  # prefer env MQTT_PASSWORD; never logged (repr hides it)
    tls: bool = False
    ca_file: Path | None = None
    queue_size: int = Field(1000, ge=1)
    max_command_bytes: int = Field(4096, ge=64)
    # Commands taken per second, after a burst (robot/mqtt/rate_limit.py); more are answered "busy".
    commands_per_s: float = Field(5.0, gt=0, le=1000)
    command_burst: int = Field(20, ge=1, le=1000)
    reconnect_min_s: float = Field(0.5, gt=0)
    reconnect_max_s: float = Field(30.0, gt=0)
    share_memory_text: bool = False  # include the summary in memory events
    keepalive_s: int = Field(15, ge=5, le=600)  # the broker sends the offline will ~1.5x this after we vanish
    close_timeout_s: float = Field(2.0, ge=0, le=60)  # on shutdown, time to flush the queue and say offline
    persona_dir: Path | None = None  # `persona` commands may only load files from here; None = config/personas

    @field_validator("prefix", "robot_id")
    @classmethod
    def _plain_topic_level(cls, value: str, info: ValidationInfo) -> str:
        # A wildcard here would make the robot take commands meant for every robot.
        if not value.strip("/") or any(c in value for c in "+#\0"):
            raise ValueError("must be non-empty and free of MQTT wildcards (+, #)")
        if info.field_name == "robot_id" and "/" in value:
            raise ValueError("must be a single topic level (no '/')")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "MqttSettings":
        if self.reconnect_max_s < self.reconnect_min_s:
            raise ValueError("reconnect_max_s must not be below reconnect_min_s")
        if self.ca_file is not None and not self.tls:
            raise ValueError("ca_file is set but tls is false")
        return self


class ConsoleSettings(Strict):
    """The operator console and /metrics (robot/console/, docs/console.md)."""

    enabled: bool = False  # or `robot run --console HOST:PORT`
    host: str = "127.0.0.1"  # any other address needs a token (the robot refuses to start without one)
    port: int = Field(8080, ge=0, le=65535)  # 0: a free port
    token: str | None = Field(None, repr=False)  # prefer env ROBOT_CONSOLE_TOKEN; never logged


class Settings(Strict):
    audio: AudioSettings = AudioSettings()
    vad: VadSettings = VadSettings()
    barge_in: BargeInSettings = BargeInSettings()
    stt: SttSettings = SttSettings()
    llm: LlmSettings = LlmSettings()
    tts: TtsSettings = TtsSettings()
    logging: LoggingSettings = LoggingSettings()
    memory: MemoryStoreSettings = MemoryStoreSettings()
    session: SessionSettings = SessionSettings()
    mqtt: MqttSettings = MqttSettings()
    console: ConsoleSettings = ConsoleSettings()


# --- personas (config/personas/*.yaml) ------------------------------------------------


class PersonaMemory(Strict):
    strategy: Literal["rsum", "swin", "full"] = "rsum"
    # Timers have floors: a tiny interval spins the CPU (issue 14); memory/scheduler.py clamps too.
    update_interval_s: float = Field(300.0, ge=1.0)  # the paper's timer
    update_after_turns: int | None = Field(None, ge=1)  # also fold after N utterances
    update_after_tokens: int | None = Field(None, ge=50)  # or when the history passes T tokens
    swin_window: int = Field(4, ge=1)  # exchanges per window (swin)
    swin_stride: int = Field(2, ge=1)
    max_summary_sentences: int = Field(20, ge=1)
    summary_timeout_s: float = Field(120.0, ge=1.0)
    retry_backoff_s: float = Field(30.0, ge=0.5)
    min_entity_recall: float = Field(0.5, ge=0, le=1)  # quality gate of a summary; 0: off
    # Wording of the summaries; None: the neutral default (prompts/). See docs/memory.md.
    labels: dict[Literal["user", "assistant"], str] | None = None  # "Customer: ..." / "Consultant: ..."
    summary_role: str | None = Field(None, min_length=1)  # who keeps the memory: "a travel consultant"
    summary_focus: str | None = Field(None, min_length=1)  # one sentence: what to note about the person
    fact_words: list[str] | None = None  # words that make the person's sentence a fact kept verbatim

    @field_validator("labels")
    @classmethod
    def _labels_are_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and any(not v.strip() or len(v) > 40 or any(c in v for c in ':"\n')
                                     for v in value.values()):
            raise ValueError("a label must be a name of 1 to 40 characters, without ':', '\"' or a line break")
        return value

    @field_validator("fact_words")
    @classmethod
    def _words_are_words(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not w.strip().rstrip("*") for w in value):
            raise ValueError("a fact word must be a word or phrase (a trailing * matches any ending)")
        return value

    @model_validator(mode="after")
    def _stride_fits(self) -> "PersonaMemory":
        if self.swin_stride > self.swin_window:
            raise ValueError("swin_stride must not exceed swin_window")
        return self


class Persona(Strict):
    name: str
    role_prompt: str = Field(min_length=1)
    greeting: str | None = None
    apology: str = "I'm sorry, I could not think of an answer just now. Could you say that again?"
    filler: str | None = "Let me think."  # said while a slow LLM has not started (null: silence)
    language: str = "en"
    voice: str | None = None  # an espeak-ng voice id, e.g. "en-us"
    rate: int | None = Field(None, ge=60, le=400)  # words per minute
    max_sentences: int = Field(4, ge=1, le=50)  # a kiosk answers briefly; the rest is offered (more_offer)
    # Spoken-length budget of a reply, estimated at the TTS rate: the role prompt asks for it,
    # and the reply stops at the last whole sentence inside it (robot/reply.py).
    max_reply_s: float = Field(8.0, ge=1, le=120)
    more_offer: str | None = "Shall I tell you more?"  # said after a cut reply; null: the rest is dropped
    more_yes: list[str] | None = None  # phrases that take up the offer; None: prompts/more_yes.txt
    gestures: dict[str, str] = {}  # gesture name -> description the LLM sees
    vocabulary: list[str] = []  # names to hear right (places, products): biases speech recognition
    state_gestures: dict[Literal["idle", "listening", "thinking", "speaking"], str] = {}
    memory: PersonaMemory = PersonaMemory()

    @model_validator(mode="after")
    def _state_gestures_known(self) -> "Persona":
        unknown = sorted(set(self.state_gestures.values()) - set(self.gestures))
        if unknown:
            raise ValueError(f"state_gestures name unknown gestures: {', '.join(unknown)}")
        return self
