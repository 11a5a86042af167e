"""A wav file as a microphone: for tests, benchmarks and scenario turns given as recordings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import AsyncIterator

from speech.audio.pcm import split_frames
from speech.audio.wavio import read_wav_16k_mono
from speech.types import FRAME_MS

_YIELD_EVERY = 50  # frames between explicit yields to the loop when not paced (1 s of audio)


class WavFileSource:
    """Yields a wav file (any rate, channels or sample format) as 20 ms frames of 16 kHz
    mono int16. ``realtime=True`` paces frames at the speed a microphone would deliver
    them; otherwise they come as fast as the consumer takes them."""

    def __init__(self, path: str | Path, realtime: bool = False) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"audio file not found: {self.path}")
        self.realtime = realtime
        self._closed = False

    async def frames(self) -> AsyncIterator[bytes]:
        # decoding and resampling a long file takes a moment: keep it off the loop
        pcm = await asyncio.to_thread(read_wav_16k_mono, self.path)
        loop = asyncio.get_running_loop()
        started = loop.time()
        for index, frame in enumerate(split_frames(pcm)):
            if self._closed:
                return
            if self.realtime:
                delay = started + index * FRAME_MS / 1000 - loop.time()
                await asyncio.sleep(max(0.0, delay))
            elif index % _YIELD_EVERY == 0:
                await asyncio.sleep(0)  # let other tasks run between bursts
            yield frame

    async def aclose(self) -> None:
        self._closed = True
