"""``llm.threads``, ``llm.prompt_threads`` and ``stt.cpu_threads``: a number, or ``auto`` decided
by the cores this process may use (one each on two cores for generating and speech to text, every
core for reading a reply's prompt: measured with bench/threads.py)."""

import asyncio
import os
import subprocess
import sys
import time

import pytest

from config.schema import LlmSettings, SttSettings


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 1), (4, 2), (16, 8), (64, 8)])
def test_auto_follows_the_cores(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert LlmSettings(threads="auto").threads == expected
    assert SttSettings(cpu_threads="auto").cpu_threads == expected


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 2), (4, 4), (16, 8)])
def test_a_prompt_is_read_with_every_core(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert LlmSettings().prompt_threads == expected
    assert LlmSettings(prompt_threads=1).prompt_threads == 1


def test_the_server_reads_prompts_and_writes_replies_with_their_own_threads():
    from models import resolve_model_path
    from robot.llm.embedded import ServerOptions, server_params

    path = resolve_model_path("embedded:smollm2-135m", "llm")
    params = server_params(path, ServerOptions(context_tokens=512, threads=1, batch_threads=2))
    assert (params.cpuparams.n_threads, params.cpuparams_batch.n_threads) == (1, 2)
    params = server_params(path, ServerOptions(context_tokens=512, threads=3))
    assert (params.cpuparams.n_threads, params.cpuparams_batch.n_threads) == (3, 3)


async def test_replies_read_with_prompt_threads_and_summaries_with_their_own(monkeypatch):
    from robot.llm import embedded, open_llms

    started: list[embedded.ServerOptions] = []
    real_start = embedded.EmbeddedServer.start.__func__

    async def start(cls, model, options):  # the real server, its options noted
        started.append(options)
        return await real_start(cls, model, options)

    monkeypatch.setattr(embedded.EmbeddedServer, "start", classmethod(start))
    settings = LlmSettings(max_tokens=4, temperature=0, threads=1, prompt_threads=2, summary_threads=1)
    async with open_llms(settings) as llms:
        assert await llms.reply.complete([{"role": "user", "content": "Say hello."}])
    reply, summary = started
    assert (reply.threads, reply.batch_threads) == (1, 2)
    assert (summary.threads, summary.reading_threads) == (1, 1)


def test_auto_is_the_default_and_a_number_overrides_it(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert LlmSettings().threads == 1 and SttSettings().cpu_threads == 1
    assert LlmSettings(threads=2).threads == 2
    with pytest.raises(ValueError):
        LlmSettings(threads="many")


async def test_summaries_get_an_embedded_server_of_their_own(monkeypatch):
    """Both servers answer. The summary server's threads at a normal share here: under SCHED_IDLE
    (the product's, tested below) they get no core while other processes keep both busy, and this
    test judges the second server, not a free core."""
    import robot.llm.factory as factory
    from robot.llm import open_llms

    monkeypatch.setattr(factory, "SUMMARY_IDLE", False)
    monkeypatch.setattr(factory, "SUMMARY_NICE", 0)
    settings = LlmSettings(max_tokens=8, temperature=0, seed=1)
    async with open_llms(settings) as llms:
        assert llms.summary is not llms.reply
        assert llms.summary._client.base_url != llms.reply._client.base_url
        # both answer, each on its own server
        assert await llms.reply.complete([{"role": "user", "content": "Say hello."}])
        assert await llms.summary.complete([{"role": "user", "content": "Say hello."}])
    async with open_llms(settings.model_copy(update={"summary_threads": None})) as llms:
        assert llms.summary is llms.reply


def _threads_by_policy() -> dict[int, int]:
    policies = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            policies[int(tid)] = os.sched_getscheduler(int(tid))
        except OSError:  # the thread ended meanwhile
            pass
    return policies


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
async def test_the_summary_server_runs_after_everything_else():
    """Its threads run under SCHED_IDLE (a core only when nothing else wants it: a reply being
    generated pauses a summary); the reply server's and this process's other threads do not."""
    from robot.llm import open_llms

    before = _threads_by_policy()
    async with open_llms(LlmSettings(max_tokens=8, temperature=0, seed=1)):
        # (that it answers is the test above's: on a machine kept busy, these threads wait for good)
        new = {tid: policy for tid, policy in _threads_by_policy().items() if tid not in before}
    idle = [tid for tid, policy in new.items() if policy == os.SCHED_IDLE]
    assert idle and len(idle) < len(new)  # the reply server's threads are new and not idle
    assert all(policy != os.SCHED_IDLE for policy in before.values())


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
async def test_the_summary_server_closes_at_once_while_it_writes_on_a_busy_machine():
    """Closing waits for the generation in progress to stop; with the server's threads under
    SCHED_IDLE and every core taken by other processes they never ran, and the robot's
    shutdown waited for as long as the machine was busy (51 s in this test, on the event loop). Its
    threads get their normal share back before the close."""
    from robot.llm import open_llms

    llms_open = open_llms(LlmSettings(max_tokens=2000, temperature=0, seed=1, retries=0))
    llms = await llms_open.__aenter__()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        writing = asyncio.create_task(llms.summary.complete([{"role": "user", "content": "Tell a long story."}]))
        await asyncio.sleep(1.0)  # every core is taken, and the summary server has begun
        started = time.monotonic()
        await llms_open.__aexit__(None, None, None)
        took = time.monotonic() - started
    finally:
        for process in busy:
            process.kill()
            process.wait()
    writing.cancel()
    assert took < 10.0, f"closing the summary server took {took:.1f} s on a busy machine"


START_AND_CLOSE = """
import asyncio, subprocess, sys
from robot.llm.embedded import EmbeddedServer, ServerOptions
busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
async def main():
    for n in range(8):
        server = await EmbeddedServer.start("embedded:smollm2-135m", ServerOptions(context_tokens=512, threads=1, idle=True))
        server.close()
        print("closed", n, flush=True)
try:
    asyncio.run(main())
finally:
    for process in busy:
        process.kill()
"""


def test_a_server_closed_right_after_it_starts_on_a_busy_machine_closes():
    """xllamacpp returns once its server listens, before the server's task loop starts; a close in
    that window was lost, the loop started afterwards and the close waited for it for ever (with
    the threads under SCHED_IDLE and four busy processes on two cores: at the 2nd and the 4th
    start-and-close of two runs). The server now answers from its loop before ``start`` returns.
    Run in a process group of its own: a hung close holds the interpreter, and its busy processes
    must not outlive it."""
    import signal

    child = subprocess.Popen([sys.executable, "-c", START_AND_CLOSE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        out, err = child.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"a close never returned: {out!r}")
    assert child.returncode == 0, err[-2000:]
    assert out.split().count("closed") == 8, out
