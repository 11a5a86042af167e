"""A persona words memory's summaries (labels, role, focus, fact words); the neutral
defaults say nothing of any use case; memory reads no configuration itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, ConfigError, load_persona, load_settings
from memory import Remark, SummaryPolicy
from memory.core.records import StoredRemark
from memory.summary.facts import FactGuard, split_marker
from memory.summary.summarizer import Summarizer

REPO = Path(__file__).resolve().parents[2]
TURNS = [StoredRemark(1, "user", "Hi, my name is Ken. I use a wheelchair.", 0.0),
         StoredRemark(2, "assistant", "Hello Ken, I will pick step-free places.", 0.0)]

# The travel persona's summary prompt as it was when it was written into prompts/ (before
# the wording moved to the persona YAML): config/personas/travel_agent.yaml must give it back.
TRAVEL_RSUM_SYSTEM = (
    "You write the memory of a travel consultant about one customer. Merge the previous memory with the new "
    "conversation: keep the old facts that are still true, add the new ones, and when a fact changed keep only "
    "the new value. Note who the customer is, their preferences, their constraints (budget, dates, companions, "
    "food, mobility), the places discussed, and the plan so far. Keep names, numbers, dates and places exactly "
    "as said. Use at most 20 plain sentences and write only the memory.")
TRAVEL_RSUM_USER = ("Previous memory: (nothing yet)\n\nNew conversation:\nCustomer: Hi, my name is Ken. I use a "
                    "wheelchair.\nConsultant: Hello Ken, I will pick step-free places.\n\n"
                    "Write the updated memory about the customer.")


def text_of(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def test_neutral_defaults_give_neutral_prompts_labels_and_marker():
    summarizer = Summarizer(SummaryPolicy(), max_tokens=500)
    for messages in (summarizer.rsum_messages("", TURNS), summarizer.swin_messages("", TURNS[:1], TURNS)):
        text = text_of(messages)
        assert "travel" not in text.lower() and "customer" not in text.lower() and "consultant" not in text.lower()
        assert "User: Hi, my name is Ken." in text and "Assistant: Hello Ken" in text
        assert "about one user" in text and "Note who the person is" in text
    summary = summarizer.finish("Ken came by.", summarizer.rsum_messages("", TURNS), "", TURNS)
    assert summary.splitlines()[-1] == 'User\'s own words: "my name is Ken." "I use a wheelchair."'


async def test_the_travel_persona_gives_the_old_wording_through_the_runtime(tmp_path):
    """Through ``robot.app.runtime._open_memory``, the one place YAML becomes memory settings."""
    from robot.app.runtime import _open_memory

    class Llm:
        def __init__(self) -> None:
            self.calls: list[list[dict[str, str]]] = []

        async def complete(self, messages, **kwargs) -> str:
            self.calls.append(messages)
            return "Ken is planning a trip."

    class Events:
        def publish(self, event) -> None:
            pass

    settings = load_settings()
    settings.memory.db_path = tmp_path / "m.sqlite3"
    persona = load_persona(DEFAULT_PERSONA)
    llm = Llm()
    memory, clock = await _open_memory(settings, persona, llm, Events(), simulated_clock=True)
    try:
        await memory.begin("card-1")  # one visitor's memory
        for turn in TURNS:
            await memory.record(Remark(turn.role, turn.text))
        assert await memory.flush()
        summary = memory.summary
    finally:
        await memory.aclose()
    [messages] = llm.calls
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == TRAVEL_RSUM_SYSTEM and messages[1]["content"] == TRAVEL_RSUM_USER
    assert summary.text.splitlines()[-1] == 'Customer\'s own words: "my name is Ken." "I use a wheelchair."'


def test_a_custom_fact_word_list_changes_what_the_guard_keeps():
    said = [StoredRemark(1, "user", "I grow tulips. I use a wheelchair. It costs $40.", 0.0)]
    assert FactGuard(SummaryPolicy().fact_words).extract(said) == ["I use a wheelchair", "It costs $40"]
    assert FactGuard(SummaryPolicy(fact_words=["tulip*"]).fact_words).extract(said) == [
        "I grow tulips", "It costs $40"]  # an amount with a currency sign is always kept
    assert FactGuard(SummaryPolicy(fact_words=[]).fact_words).extract(said) == ["It costs $40"]


def test_a_marker_line_reads_back_under_any_label():
    kept = FactGuard(["wheelchair"], "Guest").apply("Body.", "", [StoredRemark(1, "user", "I use a wheelchair.", 0.0)])
    assert kept == 'Body.\nGuest\'s own words: "I use a wheelchair."'
    assert split_marker(kept) == ("Body.", ["I use a wheelchair"])
    # Another persona (another label) still carries the facts of the previous one's line.
    again = FactGuard([], "Customer").apply("Later.", kept, [])
    assert again == 'Later.\nCustomer\'s own words: "I use a wheelchair."'


@pytest.mark.parametrize("memory_yaml, key", [
    ("  labels: {user: 'Guest: VIP'}\n", "memory.labels"),
    ("  labels: {visitor: Guest}\n", "memory.labels.visitor"),
    ("  fact_words: ['*']\n", "memory.fact_words"),
    ("  summary_focus: ''\n", "memory.summary_focus"),
])
def test_bad_wording_keys_are_rejected_at_load(tmp_path, memory_yaml, key):
    path = tmp_path / "p.yaml"
    path.write_text("name: A\nrole_prompt: hi\nmemory:\n" + memory_yaml)
    with pytest.raises(ConfigError, match=f"key '{key}"):
        load_persona(path)


def test_memory_imports_nothing_of_config_robot_or_speech():
    for path in sorted((REPO / "memory").rglob("*.py")):  # memory/recall/ too
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in {"config", "robot", "speech"}, f"{path.name} imports {name}"
