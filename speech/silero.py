"""Silero VAD (the ONNX model faster-whisper ships), run on a stream of 16 kHz frames.

webrtcvad answers "is there energy shaped like a voice" and opens turns on applause,
dishes and music; Silero answers "is this speech" and stays low on most of those
(FINDINGS.md). The front end uses it as the second stage that confirms a candidate turn
and a barge-in, and (``SpeechGate``) to say where a confirmed turn's speech stops. About
0.1 ms per 32 ms chunk on one core. A model that raises is reported once and then left out
(``failed``): the front end falls back to webrtcvad alone.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import models
from speech.types import SAMPLE_RATE

CHUNK = 512  # samples per Silero step at 16 kHz (32 ms)
_CONTEXT = 64  # samples of the previous chunk the v5/v6 models see with each chunk
CHUNK_S = CHUNK / SAMPLE_RATE

log = logging.getLogger(__name__)


def load_session(model: str = "embedded:silero-v6") -> object:
    import onnxruntime

    path: Path = models.resolve_model_path(model, "vad")
    opts = onnxruntime.SessionOptions()
    opts.inter_op_num_threads = opts.intra_op_num_threads = 1  # tiny model; leave cores to STT/LLM
    opts.log_severity_level = 4
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=opts)


class SileroStream:
    """Feed int16 PCM in any block size; speech probabilities come out per 32 ms chunk,
    each stamped with the stream time (seconds of audio fed) where its chunk ends."""

    def __init__(self, session: object, keep_s: float = 30.0) -> None:
        self._session = session
        self._pending = np.zeros(0, dtype=np.float32)
        self._samples = 0  # samples turned into chunks so far: the stream clock
        self.recent: deque[tuple[float, float]] = deque(maxlen=int(keep_s / CHUNK_S))  # (t_end, p)
        self.failed: Exception | None = None  # the model raised: no more chunks are scored
        self.reset()

    def twin(self) -> SileroStream:
        """A stream of its own on the same model (a second signal scored beside this one)."""
        return SileroStream(self._session, keep_s=(self.recent.maxlen or 0) * CHUNK_S)

    def reset(self) -> None:
        """Forget the model's state (not the clock)."""
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(_CONTEXT, dtype=np.float32)

    def feed(self, pcm: bytes) -> list[tuple[float, float]]:
        """The chunks this audio completed, (t_end, p); none once the model has failed."""
        if self.failed is not None:
            return []
        try:
            return self._feed(pcm)
        except Exception as exc:  # a broken model must not stop the listen loop: webrtcvad alone goes on
            self.failed = exc
            log.error("Silero VAD failed (%s); listening with webrtcvad alone from now on", exc)
            return []

    def _feed(self, pcm: bytes) -> list[tuple[float, float]]:
        samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
        self._pending = np.concatenate([self._pending, samples])
        out = []
        while len(self._pending) >= CHUNK:
            chunk, self._pending = self._pending[:CHUNK], self._pending[CHUNK:]
            x = np.concatenate([self._context, chunk])[None, :]
            prob, self._h, self._c = self._session.run(None, {"input": x, "h": self._h, "c": self._c})  # type: ignore[attr-defined]
            self._context = chunk[-_CONTEXT:]
            self._samples += CHUNK
            out.append((self._samples / SAMPLE_RATE, float(np.ravel(prob)[0])))
        self.recent.extend(out)
        return out

    def speech_s_since(self, t: float, threshold: float) -> float:
        """Seconds of chunks ending after ``t`` whose probability reaches ``threshold``."""
        return self.speech_since(t, threshold)[0]

    def speech_since(self, t: float, threshold: float) -> tuple[float, float | None]:
        """Seconds of chunks ending after ``t`` at ``threshold`` or above, and where the
        first of them starts (None: there is none)."""
        heard, first = 0.0, None
        for end, p in reversed(self.recent):  # called every frame of an open turn: stop at t
            if end <= t:
                break
            if p >= threshold:
                heard += CHUNK_S
                first = end - CHUNK_S
        return heard, first

    def last_speech_end(self, threshold: float) -> float | None:
        """Where the latest chunk at ``threshold`` or above ends (stream seconds), or None."""
        for end, p in reversed(self.recent):
            if p >= threshold:
                return end
        return None

    def rise_start(self, t: float, floor: float) -> float:
        """Where the run of chunks at ``floor`` or above that reaches ``t`` began: the
        soft start of a word Silero became sure of only later."""
        start = t
        for end, p in reversed(self.recent):
            if end <= t:
                if p < floor:
                    break
                start = end - CHUNK_S
        return start


@dataclass
class SpeechGate:
    """Silero's verdict with hysteresis: speech starts at ``on`` and goes on while the
    probability stays at ``off`` or above, so one soft chunk inside a word is not silence
    and a dip of the noise floor around ``on`` does not flicker."""

    on: float = 0.5
    off: float = 0.35
    speaking: bool = False

    def step(self, p: float) -> bool:
        self.speaking = p >= (self.off if self.speaking else self.on)
        return self.speaking
