"""Build the LLM client the settings ask for."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator

from config.schema import LlmSettings
from robot.llm.client import LLMClient, LLMUnreachable
from robot.llm.embedded import EmbeddedServer, ServerOptions

log = logging.getLogger(__name__)

# Replies before background work: the summary server's threads run under SCHED_IDLE (a core
# only when nothing else wants it), or at this niceness where that cannot be set, so on a busy
# machine a reply's tokens come first (bench/sessions.py measures what each buys).
SUMMARY_NICE = 10
SUMMARY_IDLE = True


@dataclass(frozen=True)
class LLMs:
    """The client replies use, and the one summaries use (the same one unless summaries have
    an embedded server of their own, ``llm.summary_threads``)."""

    reply: LLMClient
    summary: LLMClient


@asynccontextmanager
async def open_llms(settings: LlmSettings, *, summaries: bool = True) -> AsyncIterator[LLMs]:
    """Measured on two busy cores (bench/threads.py): a summary sharing the reply's llama.cpp
    server delays the reply's first token by its whole prompt (5-8 s); on a server of its
    own, with a thread of its own, the reply starts in 0.4-0.5 s."""
    shared = summaries and settings.summary_threads is None
    async with AsyncExitStack() as stack:
        # One slot for replies when no summary shares their server. With two, a request made
        # right after one was closed (a sentence the grounding guard held back, a customer who
        # went on) found the closed one still holding its slot and went to the other, whose
        # cache lacked the prompt: 1.3 s to its first token instead of 0.37 (bench/reply_slots.py;
        # docs/speech.md, "The last exchange read ahead, and one slot for replies"). With one it
        # waits the few ms the server takes to let the closed one go. The requests it serves
        # are one at a time anyway: a reply waits for the prompt read ahead, an early request
        # is closed before the next.
        reply = await stack.enter_async_context(open_llm(settings, parallel=2 if shared else 1,
                                                         batch_threads=settings.prompt_threads))
        summary = reply
        if summaries and settings.backend == "embedded" and settings.summary_threads is not None:
            summary = await stack.enter_async_context(
                open_llm(settings, threads=settings.summary_threads, parallel=1, purpose="summaries",
                         nice=SUMMARY_NICE, idle=SUMMARY_IDLE))
        yield LLMs(reply, summary)


@asynccontextmanager
async def open_llm(settings: LlmSettings, *, threads: int | None = None, parallel: int = 2,
                   purpose: str = "replies", nice: int = 0, idle: bool = False,
                   batch_threads: int | None = None) -> AsyncIterator[LLMClient]:
    """An ``LLMClient``; for the embedded backend, with its in-process server running
    (``threads`` and ``parallel`` slots: defaults ``llm.threads`` and 2; ``batch_threads``
    read prompts, default ``threads``)."""
    server: EmbeddedServer | None = None
    base_url, model = settings.base_url, settings.model
    if settings.backend == "embedded":
        server = await EmbeddedServer.start(settings.model, ServerOptions(
            context_tokens=settings.context_tokens, threads=threads or settings.threads, parallel=parallel,
            batch_threads=batch_threads,
            prompt_cache_mib=settings.prompt_cache_mib, nice=nice, idle=idle,
        ))
        base_url, model = server.base_url, server.model_path.name
    client = LLMClient(
        base_url=base_url,
        api_key=settings.api_key,
        model=model,
        temperature=settings.temperature,
        frequency_penalty=settings.frequency_penalty,
        presence_penalty=settings.presence_penalty,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        timeout_s=settings.timeout_s,
        first_token_timeout_s=settings.first_token_timeout_s,
        retries=settings.retries,
        backoff_s=settings.backoff_s,
        reuse_connections=server is None,  # the embedded server drops requests on reused connections
    )
    # neither the api_key nor the URL (it may carry credentials)
    log.info("LLM for %s: %s (%s backend); retries: %s", purpose, model, settings.backend, client.retry.describe())
    try:
        if server is None:  # a server elsewhere: unreachable is one clear line now, not an apology per turn
            try:
                await client.check_reachable()
            except LLMUnreachable as exc:
                raise LLMUnreachable(f"{exc} ({settings.backend} backend, model {model})") from None
        yield client
    finally:
        await client.aclose()
        if server is not None:
            server.close()
