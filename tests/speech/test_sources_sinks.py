"""WavFileSource, QueueSource, WavSink, NullSink and the sound-device classes (no card here)."""

from __future__ import annotations

import asyncio
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from speech.audio import (
    NullSink,
    QueueSource,
    SoundDeviceSink,
    SoundDeviceSource,
    WavFileSource,
    WavSink,
    list_devices,
    write_wav,
)
from speech.types import BYTES_PER_FRAME, AudioDeviceError


def _tone(seconds: float, rate: int) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


async def _collect(source) -> list[bytes]:
    return [frame async for frame in source.frames()]


@pytest.mark.asyncio
async def test_wav_file_source_frames_and_duration(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "tone.wav", _tone(1.01, 44100), 44100)
    frames = await _collect(WavFileSource(path))
    assert all(len(f) == BYTES_PER_FRAME for f in frames)
    assert len(frames) == 51  # 1.01 s -> 50.5 frames, the last one padded


@pytest.mark.asyncio
async def test_wav_file_source_realtime_pacing(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "tone.wav", _tone(0.3, 16000), 16000)
    started = time.monotonic()
    frames = await _collect(WavFileSource(path, realtime=True))
    assert len(frames) == 15
    assert time.monotonic() - started >= 0.26


def test_wav_file_source_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.wav"):
        WavFileSource(tmp_path / "nope.wav")


@pytest.mark.asyncio
async def test_queue_source_yields_pushed_audio_then_ends() -> None:
    source = QueueSource()
    source.push(b"\x01\x00" * 500)  # 1000 bytes: one frame + a partial one
    source.push_silence(0.1)
    source.push(_tone(0.1, 22050), sample_rate=22050)  # converted to 16 kHz
    consumer = asyncio.create_task(_collect(source))
    await source.wait_empty()
    assert not consumer.done()  # still waiting for more audio
    source.close()
    frames = await asyncio.wait_for(consumer, 2)
    total = 1000 + 3200 + 3200
    assert all(len(f) == BYTES_PER_FRAME for f in frames)
    assert len(frames) == -(-total // BYTES_PER_FRAME)
    assert frames[0] == b"\x01\x00" * 320
    assert source.pending_s == 0


@pytest.mark.asyncio
async def test_queue_source_push_after_close_fails() -> None:
    source = QueueSource()
    source.close()
    with pytest.raises(RuntimeError):
        source.push(b"\x00\x00")
    assert await _collect(source) == []


@pytest.mark.asyncio
async def test_wav_sink_writes_one_file_per_stream(tmp_path: Path) -> None:
    sink = WavSink(tmp_path / "out", prefix="reply")
    one = _tone(0.5, 22050)
    stream = await sink.open_stream(22050, "turn 1: hello")
    await stream.write(one)
    await stream.write(one[: len(one) // 2])
    assert sink.written == []  # the file is written when the reply ends
    await stream.drain()
    cut = await sink.open_stream(16000, "")
    await cut.write(_tone(0.25, 16000))
    await cut.abort()  # a cut reply keeps what was written before the cut
    assert [p.name for p in sink.written] == ["turn_1_hello.wav", "reply_002.wav"]
    with wave.open(str(sink.written[0])) as w:
        assert w.getframerate() == 22050
        assert w.getnframes() / 22050 == pytest.approx(0.75, abs=0.01)
    with wave.open(str(sink.written[1])) as w:
        assert (w.getframerate(), w.getnframes()) == (16000, 4000)


@pytest.mark.asyncio
async def test_null_sink_realtime_takes_blocks_at_playback_speed() -> None:
    sink = NullSink(realtime=True)
    stream = await sink.open_stream(16000, "t1")
    started = time.monotonic()
    for _ in range(10):
        await stream.write(_tone(0.02, 16000))
    assert time.monotonic() - started >= 0.18  # paced: a busy machine only makes it later
    await stream.abort()
    assert sink.streams == [stream] and stream.aborted and stream.written_s == pytest.approx(0.2)
    fast = await NullSink().open_stream(16000, "t2")  # not realtime: returns at once
    write = fast.write(_tone(5, 16000))
    with pytest.raises(StopIteration):  # 5 s of audio taken without waiting once (not paced)
        write.send(None)
    assert fast.written_s == pytest.approx(5.0)


def _has_sound_card() -> bool:
    try:
        import sounddevice

        return len(sounddevice.query_devices()) > 0
    except Exception:
        return False


@pytest.mark.skipif(_has_sound_card(), reason="this test needs a machine without a sound card")
def test_no_sound_card_gives_one_clear_line() -> None:
    for make in (SoundDeviceSource, SoundDeviceSink):
        with pytest.raises(AudioDeviceError) as err:
            make()
        message = str(err.value)
        assert "\n" not in message and "no audio" in message and "sound card" in message
    with pytest.raises(AudioDeviceError):
        SoundDeviceSource(device="USB microphone", device_sample_rate=48000)
    assert "no audio devices" in list_devices()


@pytest.mark.asyncio
async def test_queue_source_realtime_pacing() -> None:
    source = QueueSource(realtime=True)
    source.push_silence(0.3)
    source.close()
    started = time.monotonic()
    frames = await _collect(source)
    assert len(frames) == 15
    assert time.monotonic() - started >= 0.26


@pytest.mark.asyncio
async def test_queue_source_realtime_stamps_when_a_microphone_would_have_delivered() -> None:
    # a listen loop busy for 0.2 s (awaiting a model) takes the frames late; a sound card's
    # stamps stay on its capture clock, and so do these: the wait counts what the visitor lived
    source = QueueSource(realtime=True)
    source.push_silence(0.4)
    source.close()
    stamps, taken = [], []
    async for _ in source.frames():
        assert source.capture is not None and source.capture.frame_end is not None
        stamps.append(source.capture.frame_end)
        taken.append(time.monotonic())
        if len(stamps) == 5:
            await asyncio.sleep(0.2)
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert all(abs(step - 0.02) < 0.005 for step in steps), steps
    assert taken[6] - stamps[6] > 0.1  # taken late, stamped on time
    assert QueueSource().capture is None  # faster than real time: no clock to count by
