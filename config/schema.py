"""The schema every YAML file is validated against (pydantic, unknown keys rejected)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


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
    max_utterance_s: float = Field(30.0, gt=1, le=300)


class SttSettings(Strict):
    model: str = "embedded:tiny.en"  # "embedded:tiny.en" or a CTranslate2 model directory
    language: str | None = "en"
    beam_size: int = Field(1, ge=1, le=10)
    compute_type: str = "int8"
    cpu_threads: int = Field(2, ge=1, le=64)
    device: str = "cpu"


class LlmSettings(Strict):
    backend: Literal["embedded", "openai"] = "embedded"
    model: str = "embedded:smollm2-135m"  # model name for a server, or a GGUF path / embedded:NAME
    base_url: str | None = None  # env OPENAI_BASE_URL overrides
    api_key: str | None = None  # prefer env OPENAI_API_KEY; never logged
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
    context_tokens: int = Field(2048, ge=256)  # embedded: llama.cpp context size
    threads: int = Field(2, ge=1, le=64)  # embedded: CPU threads


class TtsSettings(Strict):
    engine: Literal["pyttsx3"] = "pyttsx3"
    voice: str | None = None  # default voice; a persona may override
    rate: int = Field(150, ge=60, le=400)


class LoggingSettings(Strict):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    turn_log: Path | None = None  # also append the per-turn JSON lines to this file


class MemoryStoreSettings(Strict):
    db_path: Path = Path("var/memory.sqlite3")
    user: str = "default"  # whose memory a kiosk session belongs to
    token_budget: int = Field(1500, ge=200)  # prompt tokens the memory aims to stay under


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


class Settings(Strict):
    audio: AudioSettings = AudioSettings()
    vad: VadSettings = VadSettings()
    stt: SttSettings = SttSettings()
    llm: LlmSettings = LlmSettings()
    tts: TtsSettings = TtsSettings()
    logging: LoggingSettings = LoggingSettings()
    memory: MemoryStoreSettings = MemoryStoreSettings()
    mqtt: MqttSettings = MqttSettings()


# --- personas (config/personas/*.yaml) ------------------------------------------------


class PersonaMemory(Strict):
    strategy: Literal["rsum", "swin", "full"] = "rsum"
    update_interval_s: float = Field(300.0, gt=0)  # the paper's timer
    update_after_turns: int | None = Field(None, ge=1)  # also fold after N utterances
    update_after_tokens: int | None = Field(None, ge=50)  # or when the history passes T tokens
    swin_window: int = Field(4, ge=1)  # exchanges per window (swin)
    swin_stride: int = Field(2, ge=1)
    max_summary_sentences: int = Field(20, ge=1)
    summary_timeout_s: float = Field(120.0, gt=0)
    retry_backoff_s: float = Field(30.0, ge=0)

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
    language: str = "en"
    voice: str | None = None  # an espeak-ng voice id, e.g. "en-us"
    rate: int | None = Field(None, ge=60, le=400)  # words per minute
    max_sentences: int = Field(4, ge=1, le=50)  # a kiosk answers briefly; the rest is not spoken
    gestures: dict[str, str] = {}  # gesture name -> description the LLM sees
    state_gestures: dict[Literal["idle", "listening", "thinking", "speaking"], str] = {}
    memory: PersonaMemory = PersonaMemory()

    @model_validator(mode="after")
    def _state_gestures_known(self) -> "Persona":
        unknown = sorted(set(self.state_gestures.values()) - set(self.gestures))
        if unknown:
            raise ValueError(f"state_gestures name unknown gestures: {', '.join(unknown)}")
        return self


# --- simulation scenarios (config/scenarios/*.yaml) -----------------------------------


class ScenarioTurn(Strict):
    text: str | None = None  # synthesized with espeak-ng and fed to the microphone path
    wav: Path | None = None  # or a recording (resampled to 16 kHz mono)
    pause_before_s: float = Field(0.5, ge=0)  # silence fed before the utterance
    advance_clock_s: float = Field(0.0, ge=0)  # simulated time that passes before this turn
    expect_transcript: list[str] = []  # each word must appear in the transcript
    expect_reply_any: list[str] = []  # at least one of these must appear in the reply
    voice: str | None = None  # espeak-ng voice for the customer
    rate: int | None = Field(None, ge=60, le=400)

    @model_validator(mode="after")
    def _one_source(self) -> "ScenarioTurn":
        if (self.text is None) == (self.wav is None):
            raise ValueError("a turn needs exactly one of 'text' or 'wav'")
        return self


class Scenario(Strict):
    name: str
    persona: Path
    settings: Path | None = None  # settings file; default config/default.yaml
    customer_voice: str = "en-us"
    customer_rate: int = Field(140, ge=60, le=400)
    noise_wav: Path | None = None  # mixed under the customer's speech
    noise_gain: float = Field(0.1, ge=0, le=2)
    turns: list[ScenarioTurn] = Field(min_length=1)
