"""A persona words its own summaries: its template replaces prompts/rsum_update.txt, and a
template that cannot be filled is refused when the persona loads (file, key, line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.loader import ConfigError, load_persona
from tests.memory.conftest import say

OWN = """[system]
You keep the notebook of {role} about a {person}: {focus} At most {max_sentences} sentences.
[user]
Notebook so far: {previous_summary}

Dialogue:
{dialogue}

Notes about the {person}:"""


async def test_the_personas_template_is_what_the_summarizer_sends(make_memory, llm):
    memory = await make_memory(summary_prompts={"rsum_update": OWN}, summary_role="a concierge")
    await say(memory, "My name is Ken.", "Welcome, Ken.")
    assert await memory.flush()
    system, user = llm.calls[0]
    assert system["content"].startswith("You keep the notebook of a concierge about a user:")
    assert user["content"].startswith("Notebook so far: (nothing yet") and "User: My name is Ken." in user["content"]
    assert "Ken" in memory.summary.text


def test_a_template_that_cannot_be_filled_is_refused_at_its_line(tmp_path: Path):
    persona = tmp_path / "p.yaml"
    persona.write_text("name: Hiro\nrole_prompt: You are Hiro.\nmemory:\n  summary_prompts:\n"
                       "    rsum_update: \"Summarize {dialog}\"\n")
    with pytest.raises(ConfigError) as err:
        load_persona(persona)
    message = str(err.value)
    assert "key 'memory.summary_prompts'" in message and "rsum_update" in message and "{dialogue}" in message
    assert "line 4" in message
