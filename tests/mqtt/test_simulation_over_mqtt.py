"""`robot simulate --mqtt`: a whole spoken conversation (VAD, Whisper, the embedded LLM,
espeak-ng) published to a real mosquitto, as a body would receive it."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from config.loader import load_scenario
from robot.app.simulate import run_scenario

REPO = Path(__file__).resolve().parents[2]


async def test_simulated_conversation_reaches_the_body(mosquitto, listener, tmp_path):
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"mqtt:\n  port: {mosquitto.port}\n")
    scenario = load_scenario(REPO / "config/scenarios/travel_consultation.yaml")
    scenario.settings = settings
    scenario.persona = _without_summaries(REPO / "config/personas/travel_agent.yaml", tmp_path)
    scenario.turns = scenario.turns[:2]
    report = await run_scenario(scenario, tmp_path / "out", echo=False, mqtt=True)
    assert all(t.result and t.result.reply_text for t in report.turns)
    assert await listener.wait_for(lambda: len(listener.of("turn")) == 2, 10)

    transcripts = [m.data["text"] for m in listener.of("transcript")]
    assert transcripts == [t.result.user_text for t in report.turns]
    for turn in report.turns:
        tid = turn.result.turn_id
        kinds = [m.kind for m in listener.messages if m.data.get("turn_id") == tid and m.kind != "gesture"]
        # heard, then thinking, then the sentences, then back to idle, then the turn record
        assert kinds[0] == "state" and "transcript" in kinds and kinds[-1] == "turn"
        assert kinds.index("transcript") < kinds.index("speech")
        states = [m.data["state"] for m in listener.of("state") if m.data.get("turn_id") == tid]
        assert states == ["thinking", "speaking", "idle"]
        spoken = " ".join(m.data["text"] for m in listener.of("speech") if m.data["turn_id"] == tid)
        assert spoken == turn.result.reply_text
    assert listener.of("status")[-1].data["status"] == "offline"  # clean shutdown said so


def _without_summaries(persona: Path, folder: Path) -> Path:
    """The persona with its history kept whole: the end of the session writes no summary (the
    135M model took 46 of this test's 57 s on three of them, no part of what the body gets)."""
    data = yaml.safe_load(persona.read_text())
    data["memory"]["strategy"] = "full"
    # its files, where it names them: copied, since a symlink out of the persona's folder is refused
    shutil.copytree(persona.parent / "knowledge", folder / "knowledge")
    copy = folder / persona.name
    copy.write_text(yaml.safe_dump(data, allow_unicode=True))
    return copy
