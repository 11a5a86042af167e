"""Streaming chat completions with timeouts, and retries with backoff (``robot.core.retry``), on
``AsyncOpenAI``."""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import openai
import tenacity
from openai import AsyncOpenAI

from memory.core.base import Message
from robot.core.retry import RetryPolicy, describe_exception

log = logging.getLogger(__name__)


# What a plain web server answers where the API would be: no such page, no such method.
NOT_AN_API = frozenset({404, 405, 501})

class LLMError(RuntimeError):
    """The LLM did not answer after all retries (timeout, HTTP error, connection refused)."""


# What a retry may cure: timeouts (ours and httpx's), HTTP errors, refused or dropped connections.
RETRYABLE: tuple[type[BaseException], ...] = (openai.APIError, asyncio.TimeoutError, TimeoutError)


def llm_retry_policy(retries: int, backoff_s: float) -> RetryPolicy:
    """``retries`` tries after the first, waiting backoff_s, 2 x backoff_s, 4 x ... between them."""
    return RetryPolicy(attempts=retries + 1, first_delay_s=backoff_s, multiplier=2.0)


class LLMUnreachable(ConnectionError):
    """The LLM server does not answer at start: the robot stops before its greeting."""


def shown_url(url: str) -> str:
    """The URL without any user or password in it (a URL may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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
        reuse_connections: bool = True,
    ) -> None:
        # The openai client's own retries are off: ours know about first tokens.
        # reuse_connections=False: one connection per request ("Connection: close"). The
        # embedded llama.cpp server now and then drops a request sent on a kept-alive
        # connection unanswered ("Server disconnected without sending a response": 6 of 450
        # requests in a row, bench/llm_connections.py; 0 of 450 with one per request, and no
        # slower: on loopback a connection costs a fraction of a millisecond).
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", max_retries=0, timeout=timeout_s,
            default_headers=None if reuse_connections else {"Connection": "close"},
        )
        self.model = model
        self.temperature = temperature
        self.frequency_penalty = frequency_penalty
        self.presence_penalty = presence_penalty
        self.seed = seed
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.first_token_timeout_s = first_token_timeout_s
        self.retry = llm_retry_policy(retries, backoff_s)

    async def check_reachable(self, timeout_s: float = 5.0) -> None:
        """One ``GET /models``: a model list, or an error the API itself wrote (a JSON body,
        even 401 or 404), means an OpenAI-compatible server is there. No answer raises
        ``LLMUnreachable`` naming the URL, and so does an answer that is not the API's: an
        ordinary web server's page, or its 404 or 501 in HTML. A server without the /models
        route is asked once more, where a reply is made (an empty request that costs no
        tokens: the API says what is wrong with it, a plain web server says 404 or 501)."""
        url = shown_url(str(self._client.base_url))
        client = self._client.with_options(timeout=timeout_s)
        try:
            await client.models.list()
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise LLMUnreachable(f"cannot reach the LLM server at {url}: {describe_exception(exc)}") from None
        except openai.APIStatusError as exc:
            if isinstance(exc.body, dict):
                return
            models = exc.status_code
        except Exception as exc:  # noqa: BLE001 - whatever the answer was, it is not the API
            raise LLMUnreachable(f"the server at {url} does not answer as an OpenAI-compatible API (its GET "
                                 f"/models gave no model list: {type(exc).__name__}); is llm.base_url right? "
                                 "It usually ends in /v1") from None
        else:
            return
        await self._check_completions(client, url, models)

    async def _check_completions(self, client: openai.AsyncOpenAI, url: str, models_status: int) -> None:
        try:
            await client.chat.completions.create(model=self.model, messages=[], max_tokens=1)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise LLMUnreachable(f"cannot reach the LLM server at {url}: {describe_exception(exc)}") from None
        except openai.APIStatusError as exc:
            if isinstance(exc.body, dict) or exc.status_code not in NOT_AN_API:
                return  # the API's own complaint about the empty request (or a server in trouble)
            raise LLMUnreachable(
                f"the server at {url} is not an OpenAI-compatible API: GET /models answered {models_status} "
                f"and POST /chat/completions {exc.status_code}, neither in the API's JSON; is llm.base_url "
                "right? It usually ends in /v1") from None
        except Exception:  # noqa: BLE001 - a 200 of some shape: something answers where replies are made
            return

    async def stream(self, messages: list[Message], *, max_tokens: int | None = None,
                     **sampling: float | int | None) -> AsyncIterator[str]:
        """Text deltas of the reply. ``sampling`` overrides this client's temperature,
        frequency_penalty, presence_penalty or seed for this one request."""
        retrying = self.retry.retrying(retry_on=RETRYABLE, before_sleep=self._log_retry)
        try:
            async for attempt in retrying:
                with attempt:
                    yielded = False
                    try:
                        async for delta in self._stream_once(messages, max_tokens or self.max_tokens, sampling):
                            yielded = True
                            yield delta
                    except RETRYABLE as exc:
                        if yielded:  # LLMError is not retried: the robot has spoken these words
                            raise LLMError(f"reply cut off: {describe_exception(exc)}") from exc
                        raise
        except tenacity.RetryError as failed:
            exc = failed.last_attempt.exception()
            tries = failed.last_attempt.attempt_number
            raise LLMError(f"no answer after {tries} attempt{'s' * (tries != 1)}: "
                           f"{describe_exception(exc)}") from exc

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        log.warning("LLM attempt %d of %d failed (%s); retrying in %.2fs", state.attempt_number,
                    self.retry.attempts, describe_exception(exc), delay)

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
        got_token = False
        timeout: asyncio.Timeout | None = None
        try:
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
                            got_token = True
                            yield choice.delta.content
                finally:
                    # Closing the response tells the server to stop generating: a reply cut short
                    # (sentence cap, stop command) must not keep the model busy in the background.
                    await response.close()
        except TimeoutError:
            if timeout is None or not timeout.expired():
                raise
            # asyncio.timeout's TimeoutError has no text: say which limit ran out
            if got_token:
                raise TimeoutError(f"reply not finished within {self.timeout_s:g}s") from None
            raise TimeoutError(f"no first token within {self.first_token_timeout_s:g}s") from None
        if not finished:
            # Every OpenAI-compatible server ends a reply with a finish_reason; a stream
            # that just stops is a dropped connection, not the end of the answer.
            raise openai.APIConnectionError(message="stream ended without finish_reason", request=None)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self._client.close()
