"""Sinks that do not need a sound card: wav files (simulator, tests) and nothing at all."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from speech.audio.resample import resample_pcm
from speech.audio.wavio import write_wav
from speech.types import SpeechAudio


class WavSink:
    """Writes played speech to wav files in ``directory`` and returns at once.

    Without an open file each ``play`` writes ``{prefix}_{n:03d}.wav``. After
    ``new_file(name)`` every ``play`` appends to ``{name}.wav`` (rewritten each time, so it
    is always a complete file) until the next ``new_file`` or ``close_file`` -- the
    simulator opens one per robot reply, whose sentences arrive one ``play`` at a time."""

    def __init__(self, directory: str | Path, prefix: str = "speech") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.written: list[Path] = []  # every file written, in order (a turn file once)
        self.played: list[SpeechAudio] = []
        self._count = 0
        self._turn_path: Path | None = None
        self._turn_pcm = bytearray()
        self._turn_rate: int | None = None

    def new_file(self, name: str) -> Path:
        """Start a file that collects the following plays; returns its path."""
        self.close_file()
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or self.prefix
        self._turn_path = self.directory / f"{safe}.wav"
        return self._turn_path

    def close_file(self) -> Path | None:
        """Stop collecting; returns the file's path if anything was played into it."""
        path = self._turn_path if self._turn_pcm else None
        self._turn_path, self._turn_pcm, self._turn_rate = None, bytearray(), None
        return path

    async def play(self, audio: SpeechAudio) -> None:
        self.played.append(audio)
        if self._turn_path is None:
            self._count += 1
            path = self.directory / f"{self.prefix}_{self._count:03d}.wav"
            await asyncio.to_thread(write_wav, path, audio.pcm, audio.sample_rate)
            self.written.append(path)
            return
        if self._turn_rate is None:
            self._turn_rate = audio.sample_rate
        # one file has one rate: a sentence from another voice/engine is converted
        self._turn_pcm += resample_pcm(audio.pcm, audio.sample_rate, self._turn_rate)
        await asyncio.to_thread(write_wav, self._turn_path, bytes(self._turn_pcm), self._turn_rate)
        if self._turn_path not in self.written:
            self.written.append(self._turn_path)

    async def stop(self) -> None:
        """Nothing plays in real time, so there is nothing to cut."""

    async def aclose(self) -> None:
        self.close_file()


class NullSink:
    """Discards speech. ``realtime=True`` waits for the audio's duration (interruptible by
    ``stop``), to rehearse barge-in timing without a sound card."""

    def __init__(self, realtime: bool = False) -> None:
        self.realtime = realtime
        self.played: list[SpeechAudio] = []
        self._stop = asyncio.Event()

    async def play(self, audio: SpeechAudio) -> None:
        self.played.append(audio)
        if not self.realtime:
            return
        self._stop.clear()
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=audio.duration_s)
        except asyncio.TimeoutError:
            pass  # played to the end

    async def stop(self) -> None:
        self._stop.set()

    async def aclose(self) -> None:
        self._stop.set()
