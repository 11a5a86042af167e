"""SoundDeviceSource's thread hand-off and resampling, with a fake PortAudio.

No sound card exists here, so a stand-in for the sounddevice module calls the callback from
its own thread the way PortAudio does (48 kHz device, 10 ms blocks)."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import speech.audio.device_source as device_source
import speech.audio.devices as devices
from speech.audio import SoundDeviceSource, pcm_to_float
from speech.audio.resample import StreamResampler
from speech.types import BYTES_PER_FRAME, SAMPLE_RATE, AudioDeviceError


class FakeStream:
    latency = 0.05  # seconds of input buffering PortAudio reports
    real_time = False  # blocks as PortAudio hands them over (else 1 ms apart)
    hand_over_in_start = False  # the first block before start() returns, as a busy machine may

    def __init__(self, device, samplerate, channels, dtype, blocksize, callback, fail=False):
        if fail:
            raise RuntimeError("Device unavailable [PaErrorCode -9985]")
        self.rate, self.block, self.callback = samplerate, blocksize, callback
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.handed: list[tuple[float, float]] = []
        FakeStream.last = self

    def start(self):
        self._running.set()
        self._n = 0
        if self.hand_over_in_start:
            self._hand_over()
        self._thread.start()

    def _run(self):
        while self._running.is_set() and self._n < self.rate:  # one second of a 1 kHz tone
            self._hand_over()
            time.sleep(self.block / self.rate if self.real_time else 0.001)

    def _hand_over(self):
        t = (self._n + np.arange(self.block)) / self.rate
        block = (0.5 * np.sin(2 * np.pi * 1000 * t) * 32767).astype("<i2")
        before = time.monotonic()
        self.callback(memoryview(block.tobytes()), self.block, None, SimpleNamespace(input_overflow=False))
        self.handed.append((before, time.monotonic()))  # when PortAudio handed the block over
        self._n += self.block

    def stop(self):
        self._running.clear()
        self._thread.join()

    def close(self):
        pass


def fake_sounddevice(fail_open: bool = False) -> SimpleNamespace:
    def query_devices(device=None, kind=None):
        if device not in (None, 0, "Fake USB mic"):
            raise ValueError(f"No input device matching {device!r}")
        return {"index": 0, "name": "Fake USB mic", "default_samplerate": 48000.0, "max_input_channels": 1}

    def check_input_settings(samplerate=None, **_):
        if samplerate != 48000:
            raise RuntimeError("Invalid sample rate")

    return SimpleNamespace(
        query_devices=query_devices,
        check_input_settings=check_input_settings,
        PortAudioError=OSError,
        RawInputStream=lambda **kw: FakeStream(**kw, fail=fail_open),
    )


@pytest.fixture
def fake_sd(monkeypatch):
    def install(**options):
        sd = fake_sounddevice(**options)
        monkeypatch.setattr(device_source, "import_sounddevice", lambda: sd)
        monkeypatch.setattr(devices, "import_sounddevice", lambda: sd)

    return install


@pytest.mark.asyncio
async def test_48k_device_is_resampled_to_16k_frames(fake_sd) -> None:
    fake_sd()
    source = SoundDeviceSource(device="Fake USB mic", block_ms=10)
    assert source.rate == 48000  # the device refuses 16 kHz
    frames = []

    async def collect():
        async for frame in source.frames():
            frames.append(frame)
            if len(frames) == 45:
                await source.aclose()

    await asyncio.wait_for(collect(), 5)
    assert all(len(f) == BYTES_PER_FRAME for f in frames)
    audio = pcm_to_float(b"".join(frames[5:45]))  # 0.8 s
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(len(audio))))
    assert np.argmax(spectrum) * 16000 / len(audio) == pytest.approx(1000, abs=3)


@pytest.mark.asyncio
async def test_each_frame_is_stamped_with_when_it_was_captured(fake_sd, monkeypatch) -> None:
    """The capture clock: when PortAudio handed the block over, less the input latency, less
    what of the block comes after the frame (a 10 ms block holds half a 20 ms frame)."""
    fake_sd()
    monkeypatch.setattr(FakeStream, "real_time", True)
    source = SoundDeviceSource(device="Fake USB mic", block_ms=10)
    stamps: list[tuple[float, float]] = []  # (capture of the frame's end, when the loop got it)

    async def collect():
        async for _frame in source.frames():
            assert source.capture.frame_end is not None
            assert source.opened.is_set()  # `robot run` greets once it is
            stamps.append((source.capture.frame_end, time.monotonic()))
            if len(stamps) == 40:
                await source.aclose()

    await asyncio.wait_for(collect(), 30)  # a busy machine stretches the fake's pacing, not the arithmetic
    ends = [end for end, _ in stamps]
    assert_each_stamp_is_in_a_hand_over(ends)
    assert all(b > a for a, b in zip(ends, ends[1:]))  # in the order captured
    # captured before the loop got it, by at least the reported input latency
    assert all(got - end >= FakeStream.latency for end, got in stamps)
    assert source.input_latency_s == FakeStream.latency


def assert_each_stamp_is_in_a_hand_over(ends: list[float]) -> None:
    """Frame i ends at 16 kHz sample 320(i+1), which is the device's sample 3 times that (soxr's
    output is aligned to its input). It is stamped by the block whose hand-over let the resampler
    pass it on: that block's hand-over, less the input latency, less the audio of the block that
    was captured after the frame's end. Judged against the fake's record of that very block, so a
    busy machine's uneven pacing (and soxr's bursts: ~490 samples every third 10 ms block) moves
    the bounds with it."""
    stream = FakeStream.last
    ratio = stream.rate // SAMPLE_RATE
    released, converter, given = [], StreamResampler(stream.rate, SAMPLE_RATE), 0
    for _ in stream.handed:  # which block's hand-over released each 16 kHz sample: soxr is deterministic
        given += len(converter.process(np.zeros(stream.block, dtype=np.float32)))
        released.append(given)
    for i, end in enumerate(ends):
        last = (i + 1) * BYTES_PER_FRAME // 2
        b = next(k for k, n in enumerate(released) if n >= last)
        before, after = stream.handed[b]
        after_end = ((b + 1) * stream.block - last * ratio) / stream.rate  # captured after the frame's end
        assert before - FakeStream.latency - after_end - 1e-6 <= end <= after - FakeStream.latency - after_end + 1e-6, \
            (i, b, end - (before - FakeStream.latency - after_end))


@pytest.mark.asyncio
async def test_a_block_handed_over_while_the_stream_starts_is_stamped_with_the_latency(
        fake_sd, monkeypatch) -> None:
    """PortAudio's thread may call back before start() returns (a busy machine): that block, too,
    was captured the input latency before it was handed over."""
    fake_sd()
    monkeypatch.setattr(FakeStream, "hand_over_in_start", True)
    source = SoundDeviceSource(device="Fake USB mic", block_ms=100)  # ends frames though the resampler starts late
    ends = []
    async for _frame in source.frames():
        ends.append(source.capture.frame_end)
        if len(ends) == 10:
            break
    await source.aclose()
    assert_each_stamp_is_in_a_hand_over(ends)


def test_unknown_device_name(fake_sd) -> None:
    fake_sd()
    with pytest.raises(AudioDeviceError, match="'Headset' not found"):
        SoundDeviceSource(device="Headset")


@pytest.mark.asyncio
async def test_busy_device_fails_when_opened(fake_sd) -> None:
    fake_sd(fail_open=True)
    source = SoundDeviceSource()
    with pytest.raises(AudioDeviceError, match="cannot open audio input 'Fake USB mic' at 48000 Hz"):
        async for _ in source.frames():
            pass
    assert not source.opened.is_set()


def test_the_settings_block_size_is_what_the_device_is_read_in(fake_sd) -> None:
    from config.schema import AudioSettings

    fake_sd()
    source = SoundDeviceSource.from_settings(AudioSettings(input_device="Fake USB mic", block_ms=30))
    source._open()
    try:
        assert source._stream.block == 48000 * 30 // 1000  # 30 ms at the device's 48 kHz
    finally:
        source._stream.stop()
