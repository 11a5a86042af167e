"""Streaming chat completions with timeouts, retries and backoff, on ``AsyncOpenAI``."""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator

import openai
from openai import AsyncOpenAI

from memory.base import Message

log = logging.getLogger(__name__)


class LLMError(RuntimeError):
    """The LLM did not answer after all retries (timeout, HTTP error, connection refused)."""


class LLMClient:
    """Talks to any OpenAI-compatible server. ``stream`` yields text deltas.

    A retry happens only while no token has been yielded yet: once the robot has started
    speaking a reply, restarting it would repeat words, so a mid-reply failure is raised.
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        temperature: float = 0.3,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        max_tokens: int = 160,
        seed: int | None = None,
        timeout_s: float = 30.0,
        first_token_timeout_s: float = 20.0,
        retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        # The openai client's own retries are off: ours know about first tokens.
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout_s
        )
        self.model = model
        self.temperature = temperature
        self.frequency_penalty = frequency_penalty
        self.presence_penalty = presence_penalty
        self.seed = seed
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self.retries = retries
        self.backoff_s = backoff_s

    async def stream(self, messages: list[Message], *, max_tokens: int | None = None,
                     **sampling: float | int | None) -> AsyncIterator[str]:
        """Text deltas of the reply. ``sampling`` overrides this client's temperature,
        frequency_penalty, presence_penalty or seed for this one request."""
        last_error: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                delay = self.backoff_s * 2 ** (attempt - 1)
                log.warning("LLM attempt %d failed (%s); retrying in %.1fs", attempt, last_error, delay)
                await asyncio.sleep(delay)
            yielded = False
            try:
                async for delta in self._stream_once(messages, max_tokens or self.max_tokens, sampling):
                    yielded = True
                    yield delta
                return
            except (openai.APIError, asyncio.TimeoutError, TimeoutError) as exc:
                last_error = exc
                if yielded:
                    raise LLMError(f"reply cut off: {_describe(exc)}") from exc
        raise LLMError(f"no answer after {self.retries + 1} attempts: {_describe(last_error)}")

    async def complete(self, messages: list[Message], *, max_tokens: int | None = None,
                       **sampling: float | int | None) -> str:
        """The whole reply as one string (summaries); same timeouts and retries."""
        parts = [delta async for delta in self.stream(messages, max_tokens=max_tokens, **sampling)]
        return "".join(parts).strip()

    async def _stream_once(self, messages: list[Message], max_tokens: int,
                           sampling: dict[str, float | int | None]) -> AsyncIterator[str]:
        options = {"temperature": self.temperature, "frequency_penalty": self.frequency_penalty,
                   "presence_penalty": self.presence_penalty, "seed": self.seed, **sampling}
        if options["seed"] is None:
            options["seed"] = openai.omit
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        async with asyncio.timeout(self.first_token_timeout_s) as timeout:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                stream=True,
                **options,  # type: ignore[arg-type]
            )
            try:
                finished = False
                async for chunk in response:
                    choice = chunk.choices[0] if chunk.choices else None
                    if choice is None:
                        continue
                    finished = finished or bool(choice.finish_reason)
                    if choice.delta.content:
                        # From the first token on, only the whole-request deadline applies.
                        timeout.reschedule(deadline)
                        yield choice.delta.content
            finally:
                # Closing the response tells the server to stop generating: a reply cut short
                # (sentence cap, stop command) must not keep the model busy in the background.
                await response.close()
        if not finished:
            # Every OpenAI-compatible server ends a reply with a finish_reason; a stream
            # that just stops is a dropped connection, not the end of the answer.
            raise openai.APIConnectionError(message="stream ended without finish_reason", request=None)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self._client.close()


def _describe(exc: Exception | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    return f"{type(exc).__name__}: {exc}"
