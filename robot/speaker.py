"""The robot's mouth: render a sentence (TTS), then play it. Audio or plain text."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Protocol

from speech.types import AudioSink, SpeechAudio


@dataclass(frozen=True)
class Rendered:
    text: str
    duration_s: float
    audio: SpeechAudio | None = None


class Speaker(Protocol):
    async def render(self, text: str) -> Rendered: ...

    async def play(self, rendered: Rendered) -> None: ...

    async def stop(self) -> None: ...

    def set_voice(self, voice: str | None, rate: int | None) -> None: ...

    def begin(self, label: str) -> None:
        """A reply (or a said text) named ``label`` starts: a wav sink opens a file for it."""
        ...

    def end(self) -> None: ...


class AudioSpeaker:
    """TTS into an audio sink (sound card, wav files, nothing)."""

    def __init__(self, make_synthesizer: Callable[[str | None, int], object], sink: AudioSink,
                 voice: str | None, rate: int) -> None:
        self._make = make_synthesizer
        self._sink = sink
        self._synth = make_synthesizer(voice, rate)
        self._rate = rate

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        self._synth = self._make(voice, rate or self._rate)

    # A WavSink collects each reply into one file; other sinks have no files to open.
    def begin(self, label: str) -> None:
        if hasattr(self._sink, "new_file"):
            self._sink.new_file(label)

    def end(self) -> None:
        if hasattr(self._sink, "close_file"):
            self._sink.close_file()

    async def render(self, text: str) -> Rendered:
        audio: SpeechAudio = await self._synth.synthesize(text)  # type: ignore[attr-defined]
        return Rendered(text=text, duration_s=audio.duration_s, audio=audio)

    async def play(self, rendered: Rendered) -> None:
        if rendered.audio is not None:
            await self._sink.play(rendered.audio)

    async def stop(self) -> None:
        await self._sink.stop()


class TextSpeaker:
    """``robot chat``: sentences are printed, at once; duration is a reading-speed estimate."""

    def __init__(self, name: str, write: Callable[[str], None] = print, words_per_minute: int = 150) -> None:
        self._name = name
        self._write = write
        self._wpm = words_per_minute

    def set_voice(self, voice: str | None, rate: int | None) -> None:
        self._wpm = rate or self._wpm

    def begin(self, label: str) -> None:
        return None

    def end(self) -> None:
        return None

    async def render(self, text: str) -> Rendered:
        return Rendered(text=text, duration_s=len(text.split()) * 60 / self._wpm)

    async def play(self, rendered: Rendered) -> None:
        self._write(f"{self._name}: {rendered.text}")
        await asyncio.sleep(0)

    async def stop(self) -> None:
        return None
