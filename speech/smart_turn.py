"""Has the customer finished their turn? Smart Turn v3 (Pipecat's turn-completion model,
BSD-2) hears the turn's audio so far and says how likely it is complete: "I'd like to go
to Kyoto." is, "and our budget is ..." is not, however long the pause.

The model and its Whisper-style feature extractor (numpy only) come inside the pipecat-ai
wheel, installed without its dependencies (scripts/setup.sh); both are loaded by path,
never through Pipecat's own package (which would import its whole framework).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

import models
from speech.types import SAMPLE_RATE

WINDOW_S = 8  # the model hears the last 8 s of the turn (left-padded with silence)
FEATURES = "audio/turn/smart_turn/_whisper_features.py"  # beside the model in the same wheel


class SmartTurn:
    """``probability(pcm)``: that the turn in ``pcm`` (16 kHz mono int16) is complete.
    About 40 ms on one core; call it off the event loop."""

    def __init__(self, model: str = "embedded:smart-turn-v3.2", threads: int = 1) -> None:
        import onnxruntime as ort

        path = models.resolve_model_path(model, "turn")
        options = ort.SessionOptions()
        options.inter_op_num_threads, options.intra_op_num_threads = 1, threads
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self._features = _feature_module(path)

    def probability(self, pcm: bytes) -> float:
        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
        window = WINDOW_S * SAMPLE_RATE
        audio = audio[-window:] if len(audio) >= window else np.pad(audio, (window - len(audio), 0))
        features = self._features.compute_whisper_log_mel_features(audio, do_normalize=True)
        outputs = self._session.run(None, {"input_features": features[np.newaxis].astype(np.float32)})
        return float(np.asarray(outputs[0]).reshape(-1)[0])


def _feature_module(model_path: Path) -> ModuleType:
    """Pipecat's numpy feature extractor, from the wheel that carries the model."""
    package_root = model_path.parents[4]  # .../pipecat/audio/turn/smart_turn/data/x.onnx -> .../pipecat
    source = package_root / FEATURES
    if not source.is_file():
        raise models.ModelNotFound(f"Turn-completion features: {source} is missing; run scripts/setup.sh")
    spec = importlib.util.spec_from_file_location("smart_turn_features", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
