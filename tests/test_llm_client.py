"""The OpenAI-protocol client against a real local HTTP server: answers, stalls, errors."""

import time

import pytest

from robot.llm.client import LLMClient, LLMError
from tests.openai_stub_server import CUT, ERROR_500, STALL, StubOpenAIServer

MESSAGES = [{"role": "user", "content": "Where should I go?"}]


def client_for(server: StubOpenAIServer, **kw) -> LLMClient:
    opts = dict(first_token_timeout_s=0.5, timeout_s=2.0, retries=1, backoff_s=0.05)
    opts.update(kw)
    return LLMClient(base_url=server.base_url, api_key=None, model="stub", **opts)


async def test_streams_the_reply_in_pieces():
    async with StubOpenAIServer(reply="One two three.") as server:
        deltas = [d async for d in client_for(server).stream(MESSAGES)]
    assert len(deltas) == 3
    assert "".join(deltas) == "One two three."
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["messages"] == MESSAGES


async def test_a_500_is_retried_and_then_answers():
    async with StubOpenAIServer(script=[ERROR_500]) as server:
        text = await client_for(server).complete(MESSAGES)
    assert text.startswith("Kyoto")
    assert len(server.requests) == 2


async def test_a_stalled_server_times_out_after_retries():
    async with StubOpenAIServer(script=[STALL, STALL]) as server:
        started = time.monotonic()
        with pytest.raises(LLMError, match="timed out"):
            await client_for(server).complete(MESSAGES)
        elapsed = time.monotonic() - started
    assert len(server.requests) == 2  # first try + one retry
    assert elapsed < 3.0  # two 0.5 s first-token timeouts plus backoff, not the whole-request limit


async def test_persistent_500_raises_with_the_status():
    async with StubOpenAIServer(script=[ERROR_500] * 3) as server:
        with pytest.raises(LLMError, match="HTTP 500"):
            await client_for(server, retries=2).complete(MESSAGES)
    assert len(server.requests) == 3


async def test_a_reply_cut_mid_stream_is_not_restarted():
    async with StubOpenAIServer(script=[CUT]) as server:
        got = []
        with pytest.raises(LLMError, match="cut off"):
            async for delta in client_for(server).stream(MESSAGES):
                got.append(delta)
    assert got  # the first words arrived and were kept
    assert len(server.requests) == 1  # no retry once words were yielded


async def test_connection_refused_is_an_llm_error():
    client = LLMClient(base_url="http://127.0.0.1:9/v1", api_key=None, model="x", retries=0)
    with pytest.raises(LLMError, match="connection"):
        await client.complete(MESSAGES)


async def test_sampling_options_reach_the_server():
    async with StubOpenAIServer() as server:
        client = client_for(server, seed=7, frequency_penalty=0.6, presence_penalty=0.4)
        await client.complete(MESSAGES, max_tokens=33)
    sent = server.requests[0]
    assert (sent["seed"], sent["frequency_penalty"], sent["presence_penalty"], sent["max_tokens"]) == (7, 0.6, 0.4, 33)


async def test_no_seed_is_not_sent():
    async with StubOpenAIServer() as server:
        await client_for(server).complete(MESSAGES)
    assert "seed" not in server.requests[0]


async def test_one_request_can_override_sampling():
    async with StubOpenAIServer() as server:
        client = client_for(server, seed=7, frequency_penalty=0.6)
        await client.complete(MESSAGES, frequency_penalty=0.0, seed=None)
    assert server.requests[0]["frequency_penalty"] == 0.0
    assert "seed" not in server.requests[0]
