"""The speaker: one sounddevice output stream per reply, written block by block."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from speech.audio.devices import import_sounddevice, pick_rate, resolve_device
from speech.types import AudioDeviceError


class _DeviceStream:
    """Blocking PortAudio calls run on one thread per stream, in order: ``abort`` queued
    behind a ``write`` runs as soon as that block was taken, so a cut lands within a block."""

    def __init__(self, stream: Any, sample_rate: int, executor: ThreadPoolExecutor) -> None:
        self.sample_rate = sample_rate  # the device's rate: the writer converts whole sentences to it
        self._stream, self._executor = stream, executor
        self._closed = False

    async def write(self, pcm: bytes) -> None:
        if not self._closed:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._stream.write, pcm)

    async def drain(self) -> None:
        await self._close(self._stream.stop)  # stop() returns once the buffer has played

    async def abort(self) -> None:
        await self._close(self._stream.abort)  # abort() drops what is buffered

    async def _close(self, how: Any) -> None:
        if self._closed:
            return
        self._closed = True

        def close() -> None:
            try:
                how()
            finally:
                self._stream.close()

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, close)
        finally:
            self._executor.shutdown(wait=False)


class SoundDeviceSink:
    """Opens one output stream per reply (not per sentence: no gap or click between them),
    at ``sample_rate`` if the device takes it, else at a rate it does (``stream.sample_rate``)."""

    def __init__(self, device: str | int | None = None, device_sample_rate: int | None = None) -> None:
        self._sd = import_sounddevice()
        self.info = resolve_device(device, "output")
        self._wanted_rate = device_sample_rate

    async def open_stream(self, sample_rate: int, label: str) -> _DeviceStream:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="speaker")
        try:
            stream, rate = await asyncio.get_running_loop().run_in_executor(executor, self._open, sample_rate)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return _DeviceStream(stream, rate, executor)

    def _open(self, sample_rate: int) -> tuple[Any, int]:
        rate = pick_rate(self._sd, self.info["index"], "output", self._wanted_rate, sample_rate,
                         self.info["default_samplerate"])
        try:
            stream = self._sd.RawOutputStream(device=self.info["index"], samplerate=rate, channels=1, dtype="int16")
            stream.start()
        except Exception as exc:
            raise AudioDeviceError(f"cannot open audio output {self.info['name']!r} at {rate} Hz: {exc}") from None
        return stream, rate

    async def aclose(self) -> None:
        return None
