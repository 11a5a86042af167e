"""Token counting.

- ``TokenCounter``: the model's *real* tokens. ``ServerTokenCounter`` asks a llama.cpp
  server's ``/tokenize`` endpoint (the embedded model: replies and summaries are one model).
  It sizes the reply prompt against ``token_budget`` and the retrieved exchanges against
  ``retrieval_tokens`` (``memory/recall/prompt_budget.py``, ``memory/recall/archive.py``), and summary
  requests against the hard limit of the context window (a request over it fails).
  ``HeuristicCounter`` (characters / 3, with a safety factor: the rule of thumb undercounts
  digits, names and odd text) stands in when the server has no tokenizer, said in the log.
- ``count_tokens``: ``ceil(characters / 4)``, OpenAI's rule of thumb for English text, where
  no tokenizer is at hand (an OpenAI-compatible server: tiktoken would download its tables
  at run time, which an offline kiosk cannot), named in the log; also the quick estimate of
  the summary triggers and of the figures an event reports.
Each chat message costs 4 more tokens of framing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from typing import Protocol

from memory.core.base import Message

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4  # role and separators, per chat message


def count_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def count_message_tokens(messages: list[Message]) -> int:
    return sum(count_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages)


class TokenCounter(Protocol):
    async def __call__(self, text: str) -> int:
        """How many tokens the summarizing model makes of ``text``."""
        ...


class HeuristicCounter:
    """No tokenizer at hand: characters / 3 (measured with SmolLM2's tokenizer on two LoCoMo
    sessions: 4.2 characters a token overall, 3.4 in the densest utterance)."""

    async def __call__(self, text: str) -> int:
        return (len(text) + 2) // 3


class ServerTokenCounter:
    """Real tokens from a llama.cpp server (``POST {root}/tokenize``); falls back to the
    heuristic for good after the first failure (an OpenAI server has no such endpoint)."""

    def __init__(self, base_url: str, timeout_s: float = 5.0) -> None:
        self._url = base_url.rstrip("/").removesuffix("/v1") + "/tokenize"
        self._timeout_s = timeout_s
        self._fallback: HeuristicCounter | None = None
        self._cache: dict[str, int] = {}  # a turn is measured once per chunk plan: keep it

    async def __call__(self, text: str) -> int:
        if self._fallback is not None:
            return await self._fallback(text)
        if text in self._cache:
            return self._cache[text]
        try:
            count = await asyncio.to_thread(self._tokenize, text)  # blocking I/O: off the loop
        except Exception as exc:  # noqa: BLE001 - no tokenizer: the safe heuristic
            log.info("no /tokenize at the LLM server (%s); counting tokens as characters / 3",
                     type(exc).__name__)
            self._fallback = HeuristicCounter()
            return await self._fallback(text)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[text] = count
        return count

    def _tokenize(self, text: str) -> int:
        request = urllib.request.Request(self._url, data=json.dumps({"content": text}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310 - our server
            return len(json.loads(response.read())["tokens"])
