"""espeak-ng through its command line: byte-identical audio for the same text.

The robot speaks through pyttsx3 (speech.tts). A *simulated customer* speaks through this
instead, because a simulation must be reproducible: pyttsx3's wav files, written from a
callback thread, differ by a few samples from one call to the next, and Whisper tiny.en
was measured to hear other words on that difference ("go in April" / "donate rule").
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from speech.audio.resample import resample_pcm
from speech.audio.wavio import read_pcm16
from speech.tts import resolve_voice
from speech.types import SpeechAudio


class EspeakCliSynthesizer:
    def __init__(self, voice: str | None = "en-us", rate: int = 140) -> None:
        self.binary = shutil.which("espeak-ng")
        if self.binary is None:
            raise FileNotFoundError("espeak-ng is not installed; run scripts/setup.sh")
        # The CLI falls back to its default voice on an unknown name, silently: check first.
        self.voice = resolve_voice(voice or "en-us")
        self.rate = rate

    async def synthesize(self, text: str, sample_rate: int | None = None) -> SpeechAudio:
        return await asyncio.to_thread(self.synthesize_sync, text, sample_rate)

    def synthesize_sync(self, text: str, sample_rate: int | None = None) -> SpeechAudio:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "say.wav"
            run = subprocess.run(
                [self.binary, "-v", self.voice, "-s", str(self.rate), "-w", str(path), "--", text],
                capture_output=True, text=True, timeout=60,
            )
            if run.returncode != 0 or not path.is_file():
                raise ValueError(f"espeak-ng failed for voice {self.voice!r}: {run.stderr.strip()}")
            pcm, rate = read_pcm16(path)
        if sample_rate and sample_rate != rate:
            pcm, rate = resample_pcm(pcm, rate, sample_rate), sample_rate
        return SpeechAudio(pcm=pcm, sample_rate=rate, text=text)
