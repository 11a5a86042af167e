"""The embedded LLM: a GGUF model carried by a package, served by llama.cpp in-process.

xllamacpp (prebuilt CPU wheels, no compile) runs llama.cpp's HTTP server inside this
process on a free loopback port, so the embedded model speaks the OpenAI protocol and
the robot uses one client for every backend.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from models import resolve_model_path

log = logging.getLogger(__name__)
LOOP_WAIT_S = 60.0  # for the server's task loop to answer after it listens (a busy machine: seconds)


@dataclass(frozen=True)
class ServerOptions:
    """How the in-process llama.cpp server is sized: context, threads, prompt cache."""

    context_tokens: int
    threads: int  # generating, a token at a time
    # Reading a prompt (a batch of tokens: compute-bound, so more cores help); None: ``threads``.
    batch_threads: int | None = None
    parallel: int = 2  # two slots: a background summary never blocks a reply outright
    # llama.cpp keeps the KV state of earlier prompts in RAM for reuse (`--cache-ram`); its
    # default, 8 GiB, let a long bench run grow from 0.4 to 1.7 GB. A few of our prompts'
    # states (SmolLM2: ~23 kB a token) fit in 256 MiB. 0 turns the cache off.
    prompt_cache_mib: int = 256
    poll: int = 50  # llama.cpp's busy-wait level (0-100) of idle worker threads; 50 is its default
    batch_tokens: int = 2048  # prompt tokens per decoding step (n_batch), all slots together
    # Background work (summaries) runs at this niceness (Linux), so replies get the cores
    # first; the server's threads take it, and the threads they start inherit it.
    nice: int = 0
    # Background work may go further: its threads run under SCHED_IDLE (Linux), so they get a
    # core only when nothing else wants it. A reply being generated (or STT, or TTS) takes the
    # core at once and gives it back when done: the summary pauses and goes on, losing nothing.
    # Where SCHED_IDLE cannot be set, ``nice`` still applies.
    idle: bool = False

    @property
    def reading_threads(self) -> int:
        return self.batch_threads or self.threads


@dataclass
class EmbeddedServer:
    """A running in-process llama.cpp server; ``base_url`` is its OpenAI endpoint."""

    base_url: str
    model_path: Path
    _server: object
    _lowered: frozenset[int] = frozenset()  # its threads run after everything else (ServerOptions.nice/idle)

    @classmethod
    async def start(cls, model: str, options: ServerOptions) -> "EmbeddedServer":
        path = resolve_model_path(model, "llm")  # ModelNotFound (a FileNotFoundError): exit status 2
        # Loading takes ~0.5 s and blocks: keep it off the event loop.
        server, lowered = await asyncio.to_thread(_make_server, path, options)
        address = str(server.listening_address)
        log.info("embedded LLM %s serving on %s (%d thread%s, %d reading prompts; prompt cache %d MiB)",
                 path.name, address, options.threads, "s" * (options.threads != 1),
                 options.reading_threads, options.prompt_cache_mib)
        return cls(base_url=address.rstrip("/") + "/v1", model_path=path, _server=server, _lowered=lowered)

    def close(self) -> None:
        """Stop the server: dropping the last reference runs llama.cpp's destructor, which joins
        its loop, and the loop ends only once the generation in progress has stopped. With the
        threads under SCHED_IDLE on a busy CPU that took 45-51 s (a summary being written, two
        other processes busy), so they get their normal share back first: 0.3 s then. (xllamacpp
        holds the GIL through the join: a worker thread would not free the event loop.)"""
        if self._server is not None:
            _restore(self._lowered)
            self._server = None


def _make_server(path: Path, options: ServerOptions) -> tuple[object, frozenset[int]]:
    import xllamacpp

    before = _threads()
    server = xllamacpp.Server(server_params(path, options))
    _until_looping(str(server.listening_address))
    lowered: frozenset[int] = frozenset()
    if options.nice > 0 or options.idle:
        lowered = frozenset(_threads() - before - {threading.get_native_id()})
        _lower(lowered, options.nice, options.idle)
    return server, lowered


def _until_looping(address: str) -> None:
    """Wait until the server's task loop runs. xllamacpp returns once the server listens, before
    its loop starts; a close in between is lost (the loop starts afterwards and never ends, and
    the close joins it for ever). On a busy machine with the threads under SCHED_IDLE that window
    lasted long enough for a close right after start to hang (at the 2nd and the 4th start and
    close of two runs, four busy processes on two cores). ``/slots`` is answered by the loop
    itself, so its answer means the loop runs; it is asked before the threads are lowered, on a
    loopback connection that no proxy setting of the kiosk may divert."""
    import urllib.request

    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(address.rstrip("/") + "/slots", timeout=LOOP_WAIT_S) as answer:
            answer.read()
    except OSError as exc:  # an older server without /slots: the window stays, nothing else changes
        log.debug("the embedded LLM's /slots did not answer (%s)", exc)


def server_params(path: Path, options: ServerOptions) -> object:
    """llama.cpp's server parameters for ``options`` (an ``xllamacpp.CommonParams``)."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_parallel = options.parallel
    params.n_ctx = options.context_tokens * options.parallel  # llama.cpp splits n_ctx across slots
    for cpu, threads in ((params.cpuparams, options.threads), (params.cpuparams_batch, options.reading_threads)):
        cpu.n_threads = threads
        cpu.poll = options.poll
    params.cache_ram_mib = options.prompt_cache_mib
    params.n_batch = options.batch_tokens
    params.n_ubatch = min(params.n_ubatch, options.batch_tokens)
    params.port = 0  # any free port, loopback only
    params.verbosity = -1
    return params


def _threads() -> set[int]:
    try:
        return {int(tid) for tid in os.listdir("/proc/self/task")}
    except OSError:  # not Linux: no per-thread niceness to set
        return set()


def _lower(tids: set[int], nice: int, idle: bool) -> None:
    """The server's threads run after everything else (on Linux a thread id names one thread)."""
    for tid in tids:
        try:
            if idle and _set_idle(tid):
                continue
            os.setpriority(os.PRIO_PROCESS, tid, nice)
        except OSError as exc:  # the thread ended meanwhile, or no permission: not fatal
            log.debug("could not lower the priority of thread %d: %s", tid, exc)


def _restore(tids: frozenset[int]) -> None:
    """The lowered threads run as any other again (where the system allows it), so that a
    generation in progress stops at once when the server is closed."""
    for tid in tids:
        try:
            if getattr(os, "SCHED_OTHER", None) is not None:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, tid, 0)
        except OSError as exc:  # ended, or not permitted (an unprivileged user): it still stops, later
            log.debug("could not restore the priority of thread %d: %s", tid, exc)


def _set_idle(tid: int) -> bool:
    policy = getattr(os, "SCHED_IDLE", None)
    if policy is None:  # not Linux
        return False
    try:
        os.sched_setscheduler(tid, policy, os.sched_param(0))
    except OSError as exc:  # a container that refuses it: niceness instead
        log.debug("SCHED_IDLE refused for thread %d: %s", tid, exc)
        return False
    return True
