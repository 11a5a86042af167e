"""The swin strategy: windows of w exchanges, stride s, overlap shown as context; flush."""

from __future__ import annotations

from memory.core.base import Remark
from memory.core.records import StoredRemark
from memory.summary.strategies import SwinStrategy, exchanges
from tests.memory.conftest import say


def turns(n_exchanges: int, start: int = 1) -> list[StoredRemark]:
    out = []
    for i in range(start, start + n_exchanges):
        out += [StoredRemark(2 * i - 1, "user", f"q{i}", 0.0), StoredRemark(2 * i, "assistant", f"a{i}", 0.0)]
    return out


def test_exchanges_group_a_customer_line_with_its_replies():
    groups = exchanges([StoredRemark(1, "assistant", "hi", 0), *turns(2)])
    assert [[t.text for t in g] for g in groups] == [["hi"], ["q1", "a1"], ["q2", "a2"]]


def test_first_window_then_stride_with_overlap_as_context():
    swin = SwinStrategy(window=4, stride=2)
    history = turns(3)
    assert not swin.due(history, []) and swin.plan(history, [], flush=False) is None
    history = turns(4)
    plan = swin.plan(history, [], flush=False)
    assert [t.text for t in plan.turns] == ["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"] and plan.context == []
    # After the first window: every 2 new exchanges make a window with the last 2 as context.
    recent, pending = turns(4), turns(2, start=5)
    plan = swin.plan(pending, recent, flush=False)
    assert [t.text for t in plan.context] == ["q3", "a3", "q4", "a4"]
    assert [t.text for t in plan.turns] == ["q5", "a5", "q6", "a6"]


def test_an_open_exchange_waits_but_a_flush_takes_the_partial_window():
    swin = SwinStrategy(window=4, stride=2)
    pending = turns(1, start=5) + [StoredRemark(99, "user", "q6", 0.0)]
    assert swin.plan(pending, turns(4), flush=False) is None
    plan = swin.plan(pending, turns(4), flush=True)
    assert [t.text for t in plan.turns] == ["q5", "a5", "q6"]
    assert [t.text for t in plan.context] == ["q3", "a3", "q4", "a4"]  # window - 2 exchanges taken


async def test_swin_memory_folds_windows_as_the_conversation_goes(make_memory, llm):
    memory = await make_memory(strategy="swin", swin_window=2, swin_stride=1)
    await say(memory, "I am Ken.", "Hi Ken.", "We like temples.")
    await memory.wait_idle()
    assert llm.calls == []  # one complete exchange and an open one: no window yet
    await memory.record(Remark("assistant", "Kyoto has many."))
    await memory.wait_idle()
    assert len(llm.calls) == 1 and memory.history == [] and memory.summary.strategy == "swin"
    await say(memory, "Budget 2000 dollars.", "Noted.")
    await memory.wait_idle()
    assert len(llm.calls) == 2
    assert "Earlier exchanges" in llm.calls[1][-1]["content"] and "Kyoto has many." in llm.calls[1][-1]["content"]
    await say(memory, "And deer?")
    await memory.wait_idle()
    assert len(llm.calls) == 2  # an open exchange alone is no window
    assert await memory.flush()  # the partial window at session end
    assert "deer" in memory.role_prompt and "Ken" in memory.role_prompt
