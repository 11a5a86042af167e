"""Plain objects passed between the speech stages, and the interfaces of sources and sinks.

Audio inside the pipeline is always 16 kHz mono signed 16-bit little-endian PCM, in
20 ms frames (640 bytes) unless a stage says otherwise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import AsyncIterator, Protocol

SAMPLE_RATE = 16_000
FRAME_MS = 20
SAMPLES_PER_FRAME = SAMPLE_RATE * FRAME_MS // 1000  # 320
BYTES_PER_FRAME = SAMPLES_PER_FRAME * 2  # 640


@dataclass(frozen=True)
class Utterance:
    """One stretch of customer speech found by the endpointer.

    ``t_start``/``t_end`` are seconds on the source's stream clock (0 = first frame), so
    tests can compare them with labels; ``ended_at`` is the wall/monotonic time when the
    endpointer decided the utterance was over (start of the turn's latency budget).
    """

    audio: bytes  # 16 kHz mono int16, pre-roll included
    t_start: float
    t_end: float
    ended_at: float
    truncated: bool = False  # cut at the maximum utterance length
    # How long the customer's voice had ended before ``ended_at`` (what they feel is from
    # there): the silence the endpointer waited after the last voiced frame, plus
    # ``overhang_s``, plus (on a sound card) the input path's latency and queueing.
    hangover_s: float = 0.0
    # What ended it: "silence" (the hangover ran out), "policy" (the end-of-turn policy said
    # the customer had finished, at a shorter pause), "cut" (the maximum length), "flush"
    # (the source ended). An early end ("policy") is the one worth merging with what follows.
    ended_by: str = "silence"
    # webrtcvad calls frames voiced for about 100 ms after a voice stops: the last voiced
    # frame (``t_end``) is this long after the customer's last sound (speech/voice_end.py).
    overhang_s: float = 0.0
    audio_from: float | None = None  # stream seconds of the audio's first sample (pre-roll included)

    @property
    def duration_s(self) -> float:
        return len(self.audio) / 2 / SAMPLE_RATE

    def after(self, t: float) -> Utterance | None:
        """The part of it from stream time ``t`` on (None when its start is unknown or
        nothing is left)."""
        if self.audio_from is None:
            return None
        skip = max(0, round((t - self.audio_from) * SAMPLE_RATE)) * 2
        if skip >= len(self.audio):
            return None
        start = self.audio_from + skip / 2 / SAMPLE_RATE
        return dataclasses.replace(self, audio=self.audio[skip:], t_start=max(self.t_start, start), audio_from=start)


@dataclass(frozen=True)
class Transcript:
    text: str
    audio_s: float  # seconds of audio transcribed
    stt_s: float  # seconds spent transcribing
    language: str | None = None
    heard: str = ""  # what Whisper said before the hallucination guard
    rejected: str | None = None  # why the guard dropped it all (``text`` is then "")
    # Where the last word Whisper kept ends, seconds into the audio (its word alignment; asked
    # for by early transcripts only, None otherwise or with no words): a transcript whose words
    # stop well before the voice does has lost its last word ("formal review [of]").
    words_end_s: float | None = None

    @property
    def rtf(self) -> float:
        return self.stt_s / self.audio_s if self.audio_s else 0.0


@dataclass(frozen=True)
class SpeechAudio:
    """Synthesized speech for one sentence."""

    pcm: bytes  # mono int16
    sample_rate: int
    text: str

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate if self.sample_rate else 0.0


class AudioSource(Protocol):
    """Yields 20 ms frames of 16 kHz mono int16 until the source ends or is closed."""

    def frames(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class AudioStream(Protocol):
    """One reply's output at one sample rate: blocks written in order play without gaps.

    ``write`` returns once the block was taken; a real-time sink (a sound card) paces the
    caller at the speed of playback, so a writer that checks a flag between blocks can be
    stopped within one block."""

    sample_rate: int

    async def write(self, pcm: bytes) -> None: ...

    async def drain(self) -> None:
        """Wait until everything written has played, then close."""
        ...

    async def abort(self) -> None:
        """Drop what is still buffered and close at once (barge-in, the stop command)."""
        ...


class AudioSink(Protocol):
    """Where speech goes: a sound card, wav files, nothing. One stream per reply."""

    async def open_stream(self, sample_rate: int, label: str) -> AudioStream:
        """A stream for one reply named ``label``, at ``sample_rate`` or, where the device
        cannot, at the rate the returned stream names (the writer converts to it)."""
        ...

    async def aclose(self) -> None: ...


class AudioDeviceError(RuntimeError):
    """A sound device is missing, busy or cannot be opened: one clear line for the user."""
