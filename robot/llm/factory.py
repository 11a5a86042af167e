"""Build the LLM client the settings ask for."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

from config.schema import LlmSettings
from robot.llm.client import LLMClient
from robot.llm.embedded import EmbeddedServer


@asynccontextmanager
async def open_llm(settings: LlmSettings) -> AsyncIterator[LLMClient]:
    """An ``LLMClient``; for the embedded backend, with its in-process server running."""
    server: EmbeddedServer | None = None
    base_url, model = settings.base_url, settings.model
    if settings.backend == "embedded":
        server = await EmbeddedServer.start(
            settings.model, context_tokens=settings.context_tokens, threads=settings.threads
        )
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
    )
    try:
        yield client
    finally:
        await client.aclose()
        if server is not None:
            server.close()
