"""The microphone: sounddevice's callback thread hands blocks to the event loop, each
stamped with when it was captured (``CaptureClock``)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator

import numpy as np

from speech.audio.capture import CaptureClock
from speech.audio.devices import import_sounddevice, pick_rate, resolve_device
from speech.audio.pcm import FrameBuffer, float_to_pcm
from speech.audio.resample import StreamResampler
from speech.types import BYTES_PER_FRAME, SAMPLE_RATE, AudioDeviceError

if TYPE_CHECKING:
    from config.schema import AudioSettings

log = logging.getLogger(__name__)

_QUEUE_BLOCKS = 500  # ~10 s of 20 ms blocks; beyond that the oldest audio is dropped


class SoundDeviceSource:
    """Records from a sound device and yields 20 ms frames of 16 kHz mono int16.

    The device is looked up at construction, so a wrong name fails at start-up with an
    AudioDeviceError; the stream opens when ``frames()`` starts. A device that cannot do
    16 kHz is opened at ``device_sample_rate`` (or its default rate) and resampled.
    ``capture.frame_end`` is when the latest frame yielded was captured (time.monotonic()):
    the moment PortAudio handed its block over, less the stream's reported input latency, less
    what of the block's audio the resampler still holds and the frame's distance from the newest.
    (PortAudio's own capture time, ``inputBufferAdcTime``, was 0.1-0.5 s off on PulseAudio.)"""

    def __init__(
        self, device: str | int | None = None, device_sample_rate: int | None = None, block_ms: int = 20
    ) -> None:
        self._sd = import_sounddevice()
        self.info = resolve_device(device, "input")
        self.rate = pick_rate(
            self._sd, self.info["index"], "input", device_sample_rate, SAMPLE_RATE, self.info["default_samplerate"]
        )
        self.block_ms = block_ms
        self.overflows = 0  # blocks PortAudio or our queue lost (a stalled consumer)
        self.capture = CaptureClock()
        self.input_latency_s = 0.0  # the stream's, once open
        self._stream: Any = None
        self._queue: asyncio.Queue[tuple[bytes, float] | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.opened = asyncio.Event()  # the stream runs: what plays now reaches the microphone's clock

    @classmethod
    def from_settings(cls, audio: AudioSettings) -> SoundDeviceSource:
        """The microphone the settings' ``audio`` section names, read in its ``block_ms`` blocks."""
        return cls(audio.input_device, audio.device_sample_rate, audio.block_ms)

    async def frames(self) -> AsyncIterator[bytes]:
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue(maxsize=_QUEUE_BLOCKS)
        await asyncio.to_thread(self._open)
        self.opened.set()
        converter = StreamResampler(self.rate, SAMPLE_RATE) if self.rate != SAMPLE_RATE else None
        framer = FrameBuffer()
        heard = given = 0  # samples the card gave (at its rate), and the resampler passed on (16 kHz)
        try:
            while (item := await self._queue.get()) is not None:
                block, captured = item
                heard += len(block) // 2
                if converter is not None:
                    samples = np.frombuffer(block, dtype="<i2").astype(np.float32) / 32768.0
                    block = float_to_pcm(converter.process(samples))
                given += len(block) // 2
                frames = framer.push(block)
                # the block's last sample was captured at `captured`; soxr passes its output on in
                # bursts, up to ~36 ms behind the input (its output is aligned: 16 kHz sample j is
                # 48 kHz sample 3j), and the framer keeps a part-frame
                newest = captured - max(heard / self.rate - given / SAMPLE_RATE, 0.0)
                end = newest - (framer.pending_bytes + len(frames) * BYTES_PER_FRAME) / 2 / SAMPLE_RATE
                for frame in frames:
                    end += len(frame) / 2 / SAMPLE_RATE
                    self.capture.stamp(frame, end)
                    yield frame
        finally:
            await self.aclose()

    def _open(self) -> None:
        try:
            self._stream = self._sd.RawInputStream(
                device=self.info["index"],
                samplerate=self.rate,
                channels=1,
                dtype="int16",
                blocksize=int(self.rate * self.block_ms / 1000),
                callback=self._on_block,
            )
            # read before start(): PortAudio's thread may hand a block over before start() returns,
            # and a block stamped without the latency would seem captured later than it was
            self.input_latency_s = float(self._stream.latency)
            self._stream.start()
        except Exception as exc:  # busy device, rate refused, driver error
            self._stream = None
            name = self.info["name"]
            raise AudioDeviceError(f"cannot open audio input {name!r} at {self.rate} Hz: {exc}") from None
        log.info("recording from %r at %d Hz (input latency %.0f ms)", self.info["name"], self.rate,
                 self.input_latency_s * 1000)

    def _on_block(self, indata: Any, frames: int, times: Any, status: Any) -> None:
        # PortAudio's thread: copy the block and hand it to the loop, never block here
        captured = time.monotonic() - self.input_latency_s
        if status.input_overflow:
            self.overflows += 1
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._enqueue, (bytes(indata), captured))

    def _enqueue(self, block: tuple[bytes, float] | None) -> None:
        assert self._queue is not None
        if self._queue.full():
            self._queue.get_nowait()  # a late consumer loses old audio, not the newest
            self.overflows += 1
        self._queue.put_nowait(block)

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await asyncio.to_thread(_close_stream, stream)
        if self._queue is not None:
            self._enqueue(None)  # ends frames()


def _close_stream(stream: Any) -> None:
    try:
        stream.stop()
    finally:
        stream.close()
