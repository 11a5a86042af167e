"""``llm.threads`` and ``stt.cpu_threads``: a number, or ``auto`` decided by the cores this
process may use (one each on two cores: measured with bench/threads.py)."""

import os

import pytest

from config.schema import LlmSettings, SttSettings


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 1), (4, 2), (16, 8), (64, 8)])
def test_auto_follows_the_cores(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert LlmSettings(threads="auto").threads == expected
    assert SttSettings(cpu_threads="auto").cpu_threads == expected


def test_auto_is_the_default_and_a_number_overrides_it(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert LlmSettings().threads == 1 and SttSettings().cpu_threads == 1
    assert LlmSettings(threads=2).threads == 2
    with pytest.raises(ValueError):
        LlmSettings(threads="many")


async def test_summaries_get_an_embedded_server_of_their_own():
    from robot.llm import open_llms

    settings = LlmSettings(max_tokens=8, temperature=0, seed=1)
    async with open_llms(settings) as llms:
        assert llms.summary is not llms.reply
        assert llms.summary._client.base_url != llms.reply._client.base_url
        # both answer, each on its own server
        assert await llms.reply.complete([{"role": "user", "content": "Say hello."}])
        assert await llms.summary.complete([{"role": "user", "content": "Say hello."}])
    async with open_llms(settings.model_copy(update={"summary_threads": None})) as llms:
        assert llms.summary is llms.reply
