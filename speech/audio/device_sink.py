"""The speaker: plays SpeechAudio through sounddevice, interruptible by stop()."""

from __future__ import annotations

import asyncio
import threading
from speech.audio.devices import import_sounddevice, pick_rate, resolve_device
from speech.audio.resample import resample_pcm
from speech.types import AudioDeviceError, SpeechAudio

_CHUNK_S = 0.05  # stop() takes effect within one chunk


class SoundDeviceSink:
    """``play`` returns when the audio has been played out (or cut by ``stop``).

    Writing happens in a worker thread in 50 ms chunks, checking a stop flag between them;
    one stream per play keeps the code simple (opening costs a few ms per sentence)."""

    def __init__(self, device: str | int | None = None, device_sample_rate: int | None = None) -> None:
        self._sd = import_sounddevice()
        self.info = resolve_device(device, "output")
        self._wanted_rate = device_sample_rate
        self._stop = threading.Event()
        self._lock = asyncio.Lock()  # one sentence at a time

    async def play(self, audio: SpeechAudio) -> None:
        if not audio.pcm:
            return
        async with self._lock:
            self._stop.clear()
            await asyncio.to_thread(self._play_blocking, audio)

    def _play_blocking(self, audio: SpeechAudio) -> None:
        rate = pick_rate(
            self._sd, self.info["index"], "output", self._wanted_rate, audio.sample_rate, self.info["default_samplerate"]
        )
        pcm = resample_pcm(audio.pcm, audio.sample_rate, rate)
        try:
            stream = self._sd.RawOutputStream(
                device=self.info["index"], samplerate=rate, channels=1, dtype="int16"
            )
            stream.start()
        except Exception as exc:
            raise AudioDeviceError(f"cannot open audio output {self.info['name']!r} at {rate} Hz: {exc}") from None
        chunk = 2 * int(rate * _CHUNK_S)
        try:
            for pos in range(0, len(pcm), chunk):
                if self._stop.is_set():
                    stream.abort()  # drop what is buffered: the customer is talking
                    return
                stream.write(pcm[pos : pos + chunk])
            stream.stop()  # waits until the buffered audio has been played
        finally:
            stream.close()

    async def stop(self) -> None:
        self._stop.set()

    async def aclose(self) -> None:
        self._stop.set()
