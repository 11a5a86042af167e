"""The embedded server's client opens a connection per request: on a reused connection the
server now and then answered nothing ("Server disconnected without sending a response": 6 of
450 requests in a row in bench/llm_connections.py, 0 of 450 with one connection per
request). The robot's retries hid it, at the cost of a retry's backoff on that reply."""

import contextlib

import pytest

from config.schema import LlmSettings

pytest.importorskip("xllamacpp")
from robot.llm import open_llm, open_llms  # noqa: E402
from robot.llm.client import LLMError  # noqa: E402

REQUESTS = 100  # on reused connections 1.3 % of requests failed: 1 of 3 runs of this test failed


async def test_the_embedded_server_answers_every_request_in_a_row_without_retries():
    failed: list[int] = []
    async with open_llm(LlmSettings(max_tokens=8, temperature=0, retries=0, threads=2,
                                    # a busy machine is slow, not broken: only an unanswered request fails here
                                    first_token_timeout_s=120, timeout_s=240), parallel=1) as llm:
        for k in range(REQUESTS):
            try:
                await llm.complete([{"role": "user", "content": f"Question {k}: name a colour."}])
            except LLMError:
                failed.append(k)
    assert failed == [], f"requests without an answer: {failed}"


async def test_a_request_right_after_one_was_closed_finds_its_prompt_in_the_cache():
    # A sentence the grounding guard held back closes the reply's request, and the request
    # made again follows at once. With a second slot on the reply server it went to the other,
    # cold slot and read the whole prompt again (bench/reply_slots.py: 1.3 s to its first token, not 0.37).
    role = ("You are Sakura, a consultant at a travel agency kiosk in Tokyo. You help customers plan "
            "trips in Japan: trains, hotels, temples, food and seasons. Answer in one or two short "
            "sentences, warmly, and ask one question at a time.")
    messages = [{"role": "system", "content": role}, {"role": "user", "content": "Which temples should I see?"}]
    async with open_llms(LlmSettings(temperature=0, threads=1, summary_threads=1)) as llms:
        llm = llms.reply
        async with contextlib.aclosing(llm.stream(messages)) as deltas:
            async for _ in deltas:
                break  # closed at its first token, generating on
        again = [*messages, {"role": "user", "content": "Answer again, in one sentence."}]
        response = await llm._client.chat.completions.create(model=llm.model, messages=again, max_tokens=1)
        usage = response.usage
        assert usage.prompt_tokens_details.cached_tokens >= usage.prompt_tokens - 20
