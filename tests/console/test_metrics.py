"""/metrics read by prometheus-client's own parser, before and after a real turn (embedded
LLM, typed), and the console's refusal to serve other machines without a token."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from config.loader import load_persona, load_settings
from robot.app.runtime import open_runtime
from robot.console.metrics import RobotMetrics
from robot.core.events import IgnoredEvent, InterruptionEvent, TranscriptEvent

HERE = Path(__file__).resolve().parent


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(url: str) -> dict[tuple[str, tuple], float]:
    def get() -> str:
        with urllib.request.urlopen(url + "metrics", timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return response.read().decode()
    return samples(await asyncio.to_thread(get))  # the server runs on this very loop


async def test_counters_move_after_a_turn(tmp_path):
    settings = load_settings()
    settings.memory.db_path = tmp_path / "memory.sqlite3"
    settings.console.enabled, settings.console.port = True, 0
    persona_path = HERE / "persona.yaml"
    async with open_runtime(settings, load_persona(persona_path), persona_path, audio_out="none",
                            listen=False) as rt:
        before = await scrape(rt.console.url)
        assert before[("robot_turns_total", ())] == 0
        assert before[("robot_barge_ins_total", (("verdict", "cut"),))] == 0
        assert before[("robot_turn_stage_seconds_count", (("stage", "first_audio"),))] == 0
        result = await rt.controller.handle_text("Which temple should I see in Kyoto?")
        assert result.reply_text
        after = await scrape(rt.console.url)
    assert after[("robot_turns_total", ())] == 1
    for stage in ("transcript", "first_token", "first_audio"):
        assert after[("robot_turn_stage_seconds_count", (("stage", stage),))] == 1
    first_audio = after[("robot_turn_stage_seconds_sum", (("stage", "first_audio"),))]
    assert first_audio == result.timings.relative()["first_audio_s"]
    assert after[("robot_errors_total", (("source", "llm"),))] == 0


def test_ignored_sounds_and_barge_ins_are_counted():
    metrics = RobotMetrics()
    for event in [IgnoredEvent(reason="not speech (second stage)", audio_s=1.0),
                  IgnoredEvent(reason="known hallucination 'Thank you.'", audio_s=0.8),
                  TranscriptEvent(text="hi", turn_id="t2"),
                  InterruptionEvent(verdict="cut", detect_s=0.2), InterruptionEvent(verdict="false_alarm")]:
        metrics.publish(event)
    counted = samples(metrics.render().decode())
    assert counted[("robot_false_turns_rejected_total", ())] == 2
    assert counted[("robot_barge_ins_total", (("verdict", "cut"),))] == 1
    assert counted[("robot_barge_ins_total", (("verdict", "false_alarm"),))] == 1
    assert counted[("robot_barge_ins_total", (("verdict", "customer"),))] == 0


def test_another_address_without_a_token_is_refused_before_anything_starts():
    env = {k: v for k, v in os.environ.items() if k != "ROBOT_CONSOLE_TOKEN"}
    done = subprocess.run([sys.executable, "-m", "robot", "chat", "--console", "0.0.0.0:8089"],
                          input=b"", capture_output=True, env=env, timeout=60, cwd=HERE.parents[1])
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "ROBOT_CONSOLE_TOKEN" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) <= 3, err
