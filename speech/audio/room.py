"""A simulated room for headless barge-in: one microphone that hears the customer, the
robot's own voice coming back from its loudspeaker, and a noise bed, in real time.

The robot's output goes through ``Room.sink(inner)``: each block it writes is also laid
into the microphone's future, ``echo_delay_ms`` later and ``echo_gain_db`` quieter (what a
loudspeaker a metre from the microphone does). The microphone runs on its own 20 ms clock
whether or not the customer speaks, as a real one does.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import AsyncIterator

import numpy as np

from speech.audio.pcm import FrameBuffer, silence
from speech.audio.resample import resample_pcm
from speech.types import FRAME_MS, SAMPLE_RATE, SAMPLES_PER_FRAME, AudioSink, AudioStream


class Room:
    def __init__(self, echo_gain_db: float = -6.0, echo_delay_ms: int = 50,
                 noise: bytes | None = None, noise_gain: float = 0.0) -> None:
        self._gain = 10 ** (echo_gain_db / 20)
        self._delay = SAMPLE_RATE * echo_delay_ms // 1000
        self._noise = np.frombuffer(noise, dtype=np.int16).astype(np.float32) * noise_gain if noise else None
        self._voice: deque[bytes] = deque()
        self._partial = FrameBuffer()
        self._echo = np.zeros(SAMPLE_RATE * 10, dtype=np.float32)  # a ring: the microphone's next 10 s
        self._position = 0  # samples the microphone has produced
        self._played_to = 0  # the sample (microphone clock) where the loudspeaker's queue ends
        self._closed = False
        self.voice_positions: list[tuple[int, int]] = []  # (start, end) sample of each pushed voice

    # --- the customer's side -----------------------------------------------------------------

    def push(self, pcm: bytes) -> None:
        """The customer says this (16 kHz mono int16), from the next free moment on."""
        frames = self._partial.push(pcm) + self._partial.flush()
        start = self._queue_end()
        self._voice.extend(frames)
        self.voice_positions.append((start, start + len(frames) * SAMPLES_PER_FRAME))

    def push_silence(self, seconds: float) -> None:
        self._voice.extend(self._partial.push(silence(seconds)))

    @property
    def pushed_s(self) -> float:
        """Stream seconds where the next push begins (the microphone hears the queue in order)."""
        return (self._queue_end() + self._partial.pending_bytes // 2) / SAMPLE_RATE

    def _queue_end(self) -> int:
        """The sample (microphone clock) where what the customer was given to say runs out."""
        return self._position + len(self._voice) * SAMPLES_PER_FRAME

    @property
    def quiet(self) -> bool:
        """Everything the customer was given to say has been heard."""
        return not self._voice

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()

    @property
    def now_s(self) -> float:
        return self._position / SAMPLE_RATE

    # --- the microphone ---------------------------------------------------------------------------

    async def frames(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        due = loop.time()
        while not (self._closed and not self._voice):
            due += FRAME_MS / 1000
            await asyncio.sleep(max(0.0, due - loop.time()))
            yield self._next_frame()

    def _next_frame(self) -> bytes:
        n = SAMPLES_PER_FRAME
        voice = self._voice.popleft() if self._voice else silence(FRAME_MS / 1000)
        ring = np.arange(self._position, self._position + n) % len(self._echo)
        mix = np.frombuffer(voice, dtype=np.int16).astype(np.float32) + self._echo[ring]
        self._echo[ring] = 0.0
        if self._noise is not None and len(self._noise):
            mix += self._noise[np.arange(self._position, self._position + n) % len(self._noise)]
        self._position += n
        return np.clip(mix, -32768, 32767).astype(np.int16).tobytes()

    # --- the loudspeaker ---------------------------------------------------------------------------

    def sink(self, inner: AudioSink) -> AudioSink:
        return _EchoSink(self, inner)

    def _hear_robot(self, pcm: bytes, sample_rate: int) -> None:
        # A loudspeaker plays its blocks one after the other: a block written before the one
        # ahead of it has played is queued behind it, never laid on top of it (two tasks'
        # clocks jitter against each other on a busy machine).
        block = np.frombuffer(resample_pcm(pcm, sample_rate, SAMPLE_RATE), dtype=np.int16).astype(np.float32)
        start = max(self._position + self._delay, self._played_to)
        self._echo[np.arange(start, start + len(block)) % len(self._echo)] += block * self._gain
        self._played_to = start + len(block)

    def _stop_robot(self) -> None:
        """The robot was cut: what its sound card had queued is never played."""
        start = self._position + self._delay
        if self._played_to > start:
            self._echo[np.arange(start, self._played_to) % len(self._echo)] = 0.0
        self._played_to = 0


class _EchoSink:
    def __init__(self, room: Room, inner: AudioSink) -> None:
        self._room, self._inner = room, inner

    async def open_stream(self, sample_rate: int, label: str) -> AudioStream:
        return _EchoStream(self._room, await self._inner.open_stream(sample_rate, label))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _EchoStream:
    def __init__(self, room: Room, inner: AudioStream) -> None:
        self._room, self._inner = room, inner
        self.sample_rate = inner.sample_rate

    async def write(self, pcm: bytes) -> None:
        self._room._hear_robot(pcm, self.sample_rate)  # the air carries it as it plays
        await self._inner.write(pcm)

    async def drain(self) -> None:
        await self._inner.drain()

    async def abort(self) -> None:
        self._room._stop_robot()
        await self._inner.abort()
