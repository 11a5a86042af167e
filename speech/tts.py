"""Text to speech with pyttsx3 driving espeak-ng, off the event loop.

espeak-ng is one C library per process (pyttsx3 initialises it once and ``pyttsx3.init()``
hands every caller the same engine), so all synthesis goes through one dedicated worker
thread shared by every Synthesizer: no two threads ever touch the engine, and each call
sets its own voice and rate before speaking."""

from __future__ import annotations

import asyncio
import atexit
import gc
import os
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from config.schema import TtsSettings
from speech.audio.resample import resample_speech
from speech.audio.wavio import read_pcm16
from speech.types import SpeechAudio

_FILE_WAIT_S = 5.0  # the wav is written by espeak's callback, possibly just after runAndWait returns
_POLL_S = 0.005
_EMPTY_WAIT_S = 0.1  # a bare header this long after runAndWait: the synthesis came out empty
_EMPTY_TRIES = 3

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tts-espeak")
_engine: Any = None  # created in, and only used from, the executor's thread
_voices: list[tuple[str, str, list[str]]] = []  # (id, name, languages)


@atexit.register
def _forget_engine() -> None:
    """Let pyttsx3's engine go at exit, while the modules are whole (the executor's thread has
    ended by then). Left to the interpreter's teardown, its driver proxy's ``__del__`` ran after
    ``contextlib`` was gone and printed an AttributeError at the end of every test run."""
    global _engine
    _engine = None
    gc.collect()


class Synthesizer:
    """``await synthesize(text)`` -> SpeechAudio at espeak's native 22050 Hz, or at
    ``sample_rate`` when given (16 kHz to feed the microphone path in a simulation).

    ``voice`` is an espeak-ng voice id ("gmw/en-us"), its short form ("en-us"), or its name
    ("English (America)"); None keeps espeak's default. An unknown voice raises ValueError
    at construction, listing some that exist. ``rate`` is words per minute."""

    def __init__(self, voice: str | None = None, rate: int = 150) -> None:
        if not 60 <= rate <= 400:
            raise ValueError(f"speech rate must be 60..400 words per minute, got {rate}")
        self.rate = rate
        self.voice_id = _executor.submit(resolve_voice, voice).result() if voice else None

    @classmethod
    def from_settings(cls, settings: TtsSettings, voice: str | None = None, rate: int | None = None) -> Synthesizer:
        """The configured default voice and rate, with a persona's voice/rate taking precedence."""
        return cls(voice or settings.voice, rate or settings.rate)

    async def synthesize(self, text: str, sample_rate: int | None = None) -> SpeechAudio:
        loop = asyncio.get_running_loop()
        audio = await loop.run_in_executor(_executor, _synthesize, text, self.voice_id, self.rate)
        if sample_rate is not None and sample_rate != audio.sample_rate:
            audio = await asyncio.to_thread(resample_speech, audio, sample_rate)
        return audio

    def synthesize_sync(self, text: str, sample_rate: int | None = None) -> SpeechAudio:
        """For scripts and benchmarks outside an event loop."""
        audio = _executor.submit(_synthesize, text, self.voice_id, self.rate).result()
        return resample_speech(audio, sample_rate) if sample_rate else audio


def available_voices() -> list[tuple[str, str, list[str]]]:
    """(id, name, languages) of every espeak-ng voice."""
    return list(_executor.submit(_list_voices).result())


# --- below runs only on the executor's thread ----------------------------------------


def _get_engine() -> Any:
    global _engine
    if _engine is None:
        import pyttsx3

        _engine = pyttsx3.init()
        # pyttsx3's espeak driver print()s "Audio saved to ..." for every file; silence
        # that one module rather than redirecting stdout for the whole process
        driver = sys.modules.get("pyttsx3.drivers.espeak")
        if driver is not None:
            driver.print = lambda *args, **kwargs: None
    return _engine


def _list_voices() -> list[tuple[str, str, list[str]]]:
    if not _voices:
        for v in _get_engine().getProperty("voices"):
            _voices.append((v.id, v.name, [str(lang) for lang in (v.languages or [])]))
    return _voices


def resolve_voice(wanted: str) -> str:
    """An espeak-ng voice id (e.g. ``gmw/en-us``) for an id, a name or a language; ValueError if none."""
    key = wanted.strip().lower()
    voices = _list_voices()
    for vid, name, _langs in voices:
        if key in (vid.lower(), vid.lower().rsplit("/", 1)[-1], name.lower()):
            return vid
    for vid, _, langs in voices:
        if key in (lang.lower() for lang in langs):
            return vid
    english = [vid.rsplit("/", 1)[-1] for vid, _, _ in voices if vid.rsplit("/", 1)[-1].startswith("en")]
    some = ", ".join(english[:10])
    raise ValueError(f"unknown TTS voice {wanted!r}; available include: {some} ({len(voices)} voices in all)")


def _synthesize(text: str, voice_id: str | None, rate: int) -> SpeechAudio:
    if not text.strip():
        return SpeechAudio(b"", 22050, text)  # pyttsx3 asserts on empty text
    engine = _get_engine()
    _apply_settings(engine, voice_id, rate)
    for _ in range(_EMPTY_TRIES):
        pcm, sample_rate = _render_once(engine, text)
        if pcm:
            return SpeechAudio(pcm, sample_rate, text)
    raise RuntimeError(f"espeak-ng gave no audio for {text[:40]!r} in {_EMPTY_TRIES} tries")


def _render_once(engine: Any, text: str) -> tuple[bytes, int]:
    """One pass through pyttsx3's espeak driver, which sometimes ends a synthesis before its
    audio arrives and writes an empty file (2 of 4 fresh processes, on their second
    sentence, in the barge-in room test): the caller tries again at once."""
    path = Path(tempfile.gettempdir()) / f"tts-{os.getpid()}-{uuid.uuid4().hex}.wav"
    try:
        engine.save_to_file(text, str(path))
        engine.runAndWait()
        if not _wait_for_wav(path):
            return b"", 22050
        return read_pcm16(path)
    finally:
        path.unlink(missing_ok=True)


def _apply_settings(engine: Any, voice_id: str | None, rate: int) -> None:
    """Set voice and rate so that they hold for the next synthesis.

    espeak-ng runs its own synthesis thread and queues parameter changes behind it; without
    waiting for that queue to drain, about half of all rate changes were lost (measured: 21
    of 40 alternating-rate calls came out at the previous rate; 0 of 40 with Synchronize)."""
    from pyttsx3.drivers import _espeak

    _espeak.Synchronize()
    if voice_id is not None:
        engine.setProperty("voice", voice_id)
    engine.setProperty("rate", rate)
    _espeak.Synchronize()


def _wait_for_wav(path: Path) -> bool:
    """Until the file exists and its header's data size matches the bytes on disk: True
    when it holds audio, False when it stayed empty (a bare header) for ``_EMPTY_WAIT_S``."""
    start = time.monotonic()
    while (waited := time.monotonic() - start) < _FILE_WAIT_S:
        size = _complete_wav_size(path)
        if size is not None and size > 0:
            return True
        if size == 0 and waited >= _EMPTY_WAIT_S:
            return False
        time.sleep(_POLL_S)
    raise RuntimeError(f"espeak-ng did not write {path} within {_FILE_WAIT_S:.0f} s")


def _complete_wav_size(path: Path) -> int | None:
    """Bytes of audio in a finished wav file, None while it is missing or being written."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    # pyttsx3 writes a plain 44-byte header; the RIFF size is patched when the file closes.
    # A bare header also "matches" (size 36): the file just opened, or closed with nothing.
    if len(data) < 44 or int.from_bytes(data[4:8], "little") != len(data) - 8:
        return None
    return len(data) - 44
