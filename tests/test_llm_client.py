"""The OpenAI-protocol client against a real local HTTP server: answers, stalls, errors."""

import logging
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


async def test_a_500_is_retried_and_then_answers(caplog):
    caplog.set_level(logging.WARNING, logger="robot.llm.client")
    async with StubOpenAIServer(script=[ERROR_500]) as server:
        text = await client_for(server).complete(MESSAGES)
    assert text == "Kyoto is lovely in spring. Nara has friendly deer."
    assert len(server.requests) == 2
    assert [r.getMessage() for r in caplog.records] == [
        "LLM attempt 1 of 2 failed (InternalServerError: Error code: 500 - boom); retrying in 0.05s"]


async def test_a_stalled_server_times_out_after_retries(caplog):
    caplog.set_level(logging.WARNING, logger="robot.llm.client")
    async with StubOpenAIServer(script=[STALL, STALL]) as server:
        with pytest.raises(LLMError) as failed:
            await client_for(server).complete(MESSAGES)
    assert str(failed.value) == "no answer after 2 attempts: TimeoutError: no first token within 0.5s"
    # the log says what went wrong, not "attempt 1 failed ()"
    assert [r.getMessage() for r in caplog.records] == [
        "LLM attempt 1 of 2 failed (TimeoutError: no first token within 0.5s); retrying in 0.05s"]
    assert len(server.requests) == 2  # first try + one retry, each ended by its first-token timeout


async def test_persistent_500_raises_with_the_status(caplog):
    caplog.set_level(logging.WARNING, logger="robot.llm.client")
    async with StubOpenAIServer(script=[ERROR_500] * 3) as server:
        started = time.monotonic()
        with pytest.raises(LLMError) as failed:
            await client_for(server, retries=2, backoff_s=0.2).complete(MESSAGES)
        elapsed = time.monotonic() - started
    assert str(failed.value) == "no answer after 3 attempts: InternalServerError: Error code: 500 - boom"
    assert len(server.requests) == 3
    # the backoff doubles: 0.2 s after the first failure, 0.4 s after the second
    assert [r.getMessage().rsplit(" ", 1)[-1] for r in caplog.records] == ["0.20s", "0.40s"]
    assert elapsed >= 0.6


async def test_no_retries_means_one_request():
    async with StubOpenAIServer(script=[ERROR_500, ERROR_500]) as server:
        with pytest.raises(LLMError, match="^no answer after 1 attempt: InternalServerError"):
            await client_for(server, retries=0).complete(MESSAGES)
    assert len(server.requests) == 1


async def test_a_reply_cut_mid_stream_is_not_restarted(caplog):
    caplog.set_level(logging.WARNING, logger="robot.llm.client")
    async with StubOpenAIServer(script=[CUT]) as server:
        got = []
        with pytest.raises(LLMError) as failed:
            async for delta in client_for(server).stream(MESSAGES):
                got.append(delta)
    assert str(failed.value) == "reply cut off: APIConnectionError: stream ended without finish_reason"
    assert got == ["Kyoto ", "is "]  # the first words arrived and were kept
    assert len(server.requests) == 1  # no retry once words were yielded
    assert not caplog.records  # and no "retrying" in the log


async def test_a_reply_closed_early_is_not_retried():
    async with StubOpenAIServer() as server:
        stream = client_for(server, retries=2).stream(MESSAGES)
        assert await anext(stream) == "Kyoto "
        await stream.aclose()  # the speaker had enough (sentence cap, stop command)
    assert len(server.requests) == 1


async def test_connection_refused_is_an_llm_error():
    client = LLMClient(base_url="http://127.0.0.1:9/v1", api_key=None, model="x", retries=0)
    with pytest.raises(LLMError) as failed:
        await client.complete(MESSAGES)
    assert str(failed.value).startswith("no answer after 1 attempt: APIConnectionError: Connection error.")


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
