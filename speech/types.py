"""Plain objects passed between the speech stages, and the interfaces of sources and sinks.

Audio inside the pipeline is always 16 kHz mono signed 16-bit little-endian PCM, in
20 ms frames (640 bytes) unless a stage says otherwise.
"""

from __future__ import annotations

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

    @property
    def duration_s(self) -> float:
        return len(self.audio) / 2 / SAMPLE_RATE


@dataclass(frozen=True)
class Transcript:
    text: str
    audio_s: float  # seconds of audio transcribed
    stt_s: float  # seconds spent transcribing
    language: str | None = None

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


class AudioSink(Protocol):
    """Plays (or writes) speech. ``play`` returns when the audio has been played out;
    ``stop`` cuts current playback short (barge-in, the body's stop command)."""

    async def play(self, audio: SpeechAudio) -> None: ...

    async def stop(self) -> None: ...

    async def aclose(self) -> None: ...


class AudioDeviceError(RuntimeError):
    """A sound device is missing, busy or cannot be opened: one clear line for the user."""
