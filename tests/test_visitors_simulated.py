"""Two visitors in a row through the whole robot (espeak-ng -> VAD -> Whisper -> LLM ->
espeak-ng), as `robot simulate` runs them; the LLM is a local OpenAI-protocol server that
keeps every request, so what was sent for the second visitor can be read back."""

from __future__ import annotations

from pathlib import Path

from config.loader import load_scenario, load_settings
from memory.admin import export
from prompts import load_prompt
from robot.app.simulate import run_scenario
from tests.openai_stub_server import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]


async def test_the_second_visitor_is_sent_nothing_of_the_first(tmp_path):
    scenario_file = tmp_path / "two_visitors.yaml"
    scenario_file.write_text(f"""
name: two visitors
persona: {REPO / "config/personas/travel_agent.yaml"}
visitor: card-1
turns:
  - text: "Hello. My name is Ken. Our budget is two thousand dollars."
    expect_transcript: [ken]
  - text: "Good morning. I would like to see Kyoto."
    new_visitor: true
    expect_transcript: [kyoto]
  - text: "We would like to go there by train."  # a statement: the LLM answers (a question, the knowledge)
""")
    async with StubOpenAIServer(reply="Happy to help with your trip.") as server:
        settings = load_settings(None)
        settings.llm.backend, settings.llm.base_url, settings.llm.model = "openai", server.base_url, "stub"
        report = await run_scenario(load_scenario(scenario_file), tmp_path / "out", echo=False, settings=settings)
        requests = list(server.requests)
    assert report.ok, report.failures
    # The second visitor's turns: what they said is the request's last customer words (or the one
    # before the request to go on, after the robot said back what it noted).
    go_on = load_prompt("more_continue").strip()
    said = [next(m["content"] for m in reversed(r["messages"]) if m["role"] == "user" and m["content"] != go_on)
            for r in requests]
    replies = [r for r, s in zip(requests, said) if any(w in s.lower() for w in ("kyoto", "train"))]
    # the second visitor's turns that asked the LLM: "I would like to see Kyoto" is noted and the
    # robot asks its own question (the persona's slot questions), the train statement goes to the LLM
    assert len(replies) >= 1
    for request in replies:
        sent = " ".join(m["content"] for m in request["messages"])
        for fact in ("Ken", "thousand", "2,000"):  # ("budget" is in the persona itself)
            assert fact not in sent, f"the second visitor's request carries {fact!r}"
    # Ken (a card) is remembered; the anonymous second visitor is not kept after the run
    users = (await export(tmp_path / "out" / "memory.sqlite3"))["users"]
    assert [u["user"] for u in users] == ["card-1"]
    assert any("Ken" in t["text"] for t in users[0]["turns"])
