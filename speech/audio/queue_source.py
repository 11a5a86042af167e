"""An in-memory microphone: the headless simulator pushes a customer's speech into it."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import AsyncIterator

from speech.audio.capture import CaptureClock
from speech.audio.pcm import FrameBuffer, silence
from speech.audio.resample import resample_pcm
from speech.types import FRAME_MS, SAMPLE_RATE


class QueueSource:
    """Frames pushed with ``push``/``push_silence`` come out of ``frames()`` in order;
    ``frames()`` waits while the queue is empty and ends once ``close()`` was called and
    everything pushed has been yielded. Call the push methods from the event loop's thread.

    ``realtime=True`` paces output at 20 ms per frame (like a microphone), and stamps each
    frame with when a microphone would have delivered it (``capture``, as a sound card's): a
    frame the listen loop takes late, while it waits on a model, counts in the customer's wait
    as it would live. By default frames come as fast as they are consumed, so a simulation
    runs faster than real time, and there is no such clock."""

    def __init__(self, realtime: bool = False) -> None:
        self.realtime = realtime
        self.capture = CaptureClock() if realtime else None
        self._frames: deque[bytes] = deque()
        self._partial = FrameBuffer()
        self._closed = False
        self._changed = asyncio.Event()  # something was pushed, or the source closed
        self._empty = asyncio.Event()
        self._empty.set()
        self._pushed = 0  # frames pushed so far: the stream's clock runs on them alone (no gap is filled)

    def push(self, pcm: bytes, sample_rate: int = SAMPLE_RATE) -> None:
        """Queue mono int16 PCM; other rates (espeak's 22050 Hz) are converted to 16 kHz."""
        if self._closed:
            raise RuntimeError("QueueSource is closed")
        self._add(self._partial.push(resample_pcm(pcm, sample_rate, SAMPLE_RATE)))

    def push_silence(self, seconds: float) -> None:
        self.push(silence(seconds))

    def close(self) -> None:
        """No more audio: a partial last frame is padded, and frames() ends after it."""
        if not self._closed:
            self._add(self._partial.flush())
            self._closed = True
            self._changed.set()

    @property
    def pushed_s(self) -> float:
        """Stream seconds pushed so far: where the next push begins on the stream's clock."""
        return self._pushed * FRAME_MS / 1000 + self._partial.pending_bytes / 2 / SAMPLE_RATE

    @property
    def pending_s(self) -> float:
        """Seconds of audio pushed but not yet yielded."""
        return len(self._frames) * FRAME_MS / 1000

    async def wait_empty(self) -> None:
        """Until every pushed frame has been taken by the consumer."""
        await self._empty.wait()

    async def frames(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        next_due = loop.time()
        while True:
            if not self._frames:
                self._empty.set()
                if self._closed:
                    return
                self._changed.clear()
                await self._changed.wait()
                next_due = max(next_due, loop.time())  # pacing restarts after a gap
                continue
            due = next_due
            if self.realtime:
                await asyncio.sleep(max(0.0, next_due - loop.time()))
                next_due += FRAME_MS / 1000
            else:
                await asyncio.sleep(0)  # a long push must not starve the rest of the loop
            if self._frames:
                frame = self._frames.popleft()
                if not self._frames:
                    self._empty.set()
                if self.capture is not None:
                    self.capture.stamp(frame, due)  # loop.time() is time.monotonic(), the clock's
                yield frame

    async def aclose(self) -> None:
        self._frames.clear()
        self.close()

    def _add(self, frames: list[bytes]) -> None:
        if frames:
            self._pushed += len(frames)
            self._frames.extend(frames)
            self._empty.clear()
            self._changed.set()
