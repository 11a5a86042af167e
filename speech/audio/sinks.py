"""Sinks that do not need a sound card: wav files (simulator, tests) and nothing at all."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from pathlib import Path

from speech.audio.wavio import write_wav


class _Playback:
    """Real-time pacing for a sink with no sound card: each block is taken as it would play.
    Paced against a running deadline, so sleeps that overshoot do not add up over a reply."""

    def __init__(self) -> None:
        self._due: float | None = None

    async def take(self, seconds: float) -> None:
        now = asyncio.get_running_loop().time()
        self._due = max(self._due or now, now) + seconds
        await asyncio.sleep(self._due - now)


def _safe_name(label: str, fallback: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("._") or fallback


class _WavStream:
    """Collects one reply; the file is written when the reply ends (drained or cut)."""

    def __init__(self, sink: WavSink, path: Path, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self._sink, self._path, self._pcm = sink, path, bytearray()
        self._playback = _Playback()

    async def write(self, pcm: bytes) -> None:
        self._pcm += pcm
        if self._sink.realtime:
            await self._playback.take(len(pcm) / 2 / self.sample_rate)

    async def drain(self) -> None:
        await self._close()

    async def abort(self) -> None:
        await self._close()  # what was written before the cut is what was "said"

    async def _close(self) -> None:
        if self._pcm and self._path not in self._sink.written:
            await asyncio.to_thread(write_wav, self._path, bytes(self._pcm), self.sample_rate)
            self._sink.written.append(self._path)


class WavSink:
    """Writes each reply to ``{label}.wav`` in ``directory``; ``realtime=True`` takes each
    block at playback speed (a simulation watched live, where "stop" must have speech to cut)."""

    def __init__(self, directory: str | Path, prefix: str = "speech", realtime: bool = False) -> None:
        self.realtime = realtime
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.written: list[Path] = []  # every file written, in order

    async def open_stream(self, sample_rate: int, label: str) -> _WavStream:
        name = _safe_name(label, f"{self.prefix}_{len(self.written) + 1:03d}")
        return _WavStream(self, self.directory / f"{name}.wav", sample_rate)

    async def aclose(self) -> None:
        return None


@dataclass
class _NullStream:
    sample_rate: int
    realtime: bool
    written_s: float = 0.0
    aborted: bool = False
    write_times: list[float] = field(default_factory=list)  # loop time each block was taken
    _playback: _Playback = field(default_factory=_Playback, repr=False)

    async def write(self, pcm: bytes) -> None:
        seconds = len(pcm) / 2 / self.sample_rate
        self.write_times.append(asyncio.get_running_loop().time())
        self.written_s += seconds
        if self.realtime:
            await self._playback.take(seconds)

    async def drain(self) -> None:
        return None

    async def abort(self) -> None:
        self.aborted = True


class NullSink:
    """Discards speech. ``realtime=True`` takes each block at playback speed, to rehearse
    barge-in timing without a sound card; ``streams`` keeps what each reply wrote."""

    def __init__(self, realtime: bool = False) -> None:
        self.realtime = realtime
        self.streams: list[_NullStream] = []

    async def open_stream(self, sample_rate: int, label: str) -> _NullStream:
        stream = _NullStream(sample_rate, self.realtime)
        self.streams.append(stream)
        return stream

    async def aclose(self) -> None:
        return None
