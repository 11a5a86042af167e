"""The speaker: one sounddevice output stream for the whole session, never left to run dry.

The stream opens at the first reply and stays open; a writer thread keeps it fed, with the
robot's voice when a reply is queued and with silence between replies. So the loudspeaker's
clock never restarts, and every block the card plays, voice or silence, is told to the echo
canceller (``reference``) in the order it plays: the robot's echo comes back at the same
delay against that reference in every reply. With one stream per reply (until stop 47) each
reply's reference was placed afresh where the listen loop was when its first block was
written; on the PulseAudio virtual card that place moved 5-33 ms between the greeting and
the first reply, both echo filters lost the echo path, and the robot took its own first
words for a customer going on (live, it cut itself in 8 of 15 runs; the same recordings
replayed with each reply's reference put back at the greeting's delay: none).

Where the card ran dry all the same (the writer starved of CPU for longer than the card's
buffer), what it played meanwhile was never told: the reference is told to start afresh.

A reply's ``write`` queues its block and returns once under ``AHEAD_S`` is queued, pacing
the writer at the speed of playback as a blocking write did; ``abort`` drops the queue (a cut
lands within the card's own buffer); ``drain`` waits until the queue has played.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from typing import Any, Protocol

from speech.audio.devices import import_sounddevice, pick_rate, resolve_device
from speech.types import SAMPLE_RATE, AudioDeviceError

log = logging.getLogger(__name__)

# The writer's block, about. Silence in 5 ms blocks (a reply's first block waits behind one)
# woke the writer 200 times a second, and the LLM's line in the live bench took 1.2-1.4 s where
# it took 0.9 s with 20 ms blocks (its thread and the writer's take turns at Python's lock).
BLOCK_S = 0.02
AHEAD_S = 0.04  # a reply's write returns once less than this is queued ahead of the card
_POLL_S = 0.01  # a reply's writer looks again this often (half a block)


class PlaybackReference(Protocol):
    """What the loudspeaker plays, in order, as it is handed to the card (the echo canceller)."""

    def far(self, pcm: bytes, sample_rate: int) -> None: ...

    def far_silence(self, samples: int, sample_rate: int) -> None: ...

    def far_restart(self) -> None: ...


class _Player:
    """The open output stream, its queue and the thread that writes it."""

    def __init__(self, stream: Any, rate: int, reference: PlaybackReference | None) -> None:
        self.rate, self._stream, self._reference = rate, stream, reference
        self.latency_s = float(stream.latency)
        self._queue = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.underflows = 0
        self._thread = threading.Thread(target=self._run, name="speaker", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        wanted = 2 * block_samples(self.rate)
        while not self._stop.is_set():
            with self._lock:
                block = bytes(self._queue[:wanted])
                del self._queue[:wanted]
            self._tell(block, wanted)
            try:
                underflowed = self._stream.write(block + bytes(wanted - len(block)))
            except Exception as exc:  # noqa: BLE001 - a device gone: the reply's writer learns it (check)
                log.error("the audio output failed: %s", exc)
                return
            if underflowed:
                self.underflows += 1
                if self._reference is not None:
                    self._reference.far_restart()  # the card played silence nobody told it of

    def _tell(self, block: bytes, wanted: int) -> None:
        if self._reference is None:
            return
        if block:
            self._reference.far(block, self.rate)
        if len(block) < wanted:
            self._reference.far_silence((wanted - len(block)) // 2, self.rate)

    def queue(self, pcm: bytes) -> None:
        self.check()
        with self._lock:
            self._queue += pcm

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def check(self) -> None:
        """AudioDeviceError once the writer has stopped (the device failed, or it was closed)."""
        if not self.alive:
            raise AudioDeviceError("the audio output stopped")

    def queued_s(self) -> float:
        with self._lock:
            return len(self._queue) / 2 / self.rate

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        try:
            self._stream.abort()
            self._stream.close()
        except Exception as exc:  # noqa: BLE001 - a device already gone
            log.warning("closing the audio output: %s", exc)
        if self.underflows:  # each placed the echo canceller's reference afresh
            log.info("the audio output ran dry %d times", self.underflows)


def block_samples(rate: int) -> int:
    """About ``BLOCK_S`` of samples at ``rate``, and a whole number of samples at 16 kHz (the
    echo canceller's rate, to which each block is converted on its own): 441 at 22,050 Hz.
    With 10 ms blocks espeak-ng's 22,050 Hz gave 220 samples, 159.6 at 16 kHz; rounded block by
    block, the reference slid 4 ms a second off the echo."""
    unit = rate // math.gcd(rate, SAMPLE_RATE)
    return unit * max(1, round(rate * BLOCK_S / unit))


class _DeviceStream:
    """One reply's view of the open output stream."""

    def __init__(self, player: _Player) -> None:
        self.sample_rate = player.rate  # the device's rate: the writer converts whole sentences to it
        self._player = player
        self._closed = False

    async def write(self, pcm: bytes) -> None:
        if self._closed:
            return
        self._player.queue(pcm)
        await self._played_down_to(AHEAD_S)

    async def drain(self) -> None:
        """Until the queue has played, and the card's own buffer after it."""
        if self._closed:
            return
        self._closed = True
        await self._played_down_to(0.0)
        await asyncio.sleep(self._player.latency_s)

    async def _played_down_to(self, seconds: float) -> None:
        """Until the queue holds ``seconds`` or less (AudioDeviceError if the writer stopped);
        at once when the reply is cut meanwhile (``abort`` emptied it)."""
        while self._player.queued_s() > seconds:
            self._player.check()
            await asyncio.sleep(_POLL_S)

    async def abort(self) -> None:
        self._closed = True
        self._player.clear()


class SoundDeviceSink:
    """Opens the output stream at the first reply (at its sample rate if the device takes it,
    else at a rate it does: ``stream.sample_rate``) and keeps it open until ``aclose``.
    ``reference`` hears every block the card plays (the echo canceller's far end). An output
    that failed (a device unplugged) is opened again at the next reply."""

    def __init__(self, device: str | int | None = None, device_sample_rate: int | None = None,
                 reference: PlaybackReference | None = None) -> None:
        self._sd = import_sounddevice()
        self.info = resolve_device(device, "output")
        self._wanted_rate = device_sample_rate
        self.reference = reference
        self._player: _Player | None = None
        self._opening = threading.Lock()
        self._closed = False

    async def open_stream(self, sample_rate: int, label: str) -> _DeviceStream:
        if self._player is not None and not self._player.alive:  # the device failed: open it again
            failed, self._player = self._player, None
            await asyncio.to_thread(failed.close)
        if self._player is None:  # (once closed, _open refuses: a reply still going says nothing more)
            self._player = await asyncio.to_thread(self._open, sample_rate)
        return _DeviceStream(self._player)

    def _open(self, sample_rate: int) -> _Player:
        with self._opening:  # two replies opening at once get the one stream
            if self._closed:
                raise AudioDeviceError("the audio output is closed")
            if self._player is not None:
                return self._player
            rate = pick_rate(self._sd, self.info["index"], "output", self._wanted_rate, sample_rate,
                             self.info["default_samplerate"])
            try:
                stream = self._sd.RawOutputStream(device=self.info["index"], samplerate=rate, channels=1,
                                                  dtype="int16")
                stream.start()
            except Exception as exc:
                raise AudioDeviceError(f"cannot open audio output {self.info['name']!r} at {rate} Hz: {exc}") from None
            return _Player(stream, rate, self.reference)

    def output_delay_s(self) -> float:
        """How long after it is written a block is heard: the card's buffer and the queue ahead
        of it. The stream stays open, full of silence between replies, so a reply's first
        sample waits behind the card's buffer (35 ms on the PulseAudio virtual card): counted
        from the write, the printed voice to voice was 36 ms short of the true one at the median
        and 52 ms at most (`bench/live_latency.py`)."""
        player = self._player
        return 0.0 if player is None else player.latency_s + player.queued_s()

    async def aclose(self) -> None:
        self._closed = True
        player, self._player = self._player, None
        if player is not None:
            await asyncio.to_thread(player.close)

