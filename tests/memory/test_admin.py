"""Operator tools: show, export, forget, rollback, and the `robot memory` subcommands, each
on both stores (a SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import json

import pytest

from memory import admin
from memory.stores.location import parse_location
from memory.stores.opening import open_store
from robot.app.cli import main
from tests.memory.backends import pg_server, store_where  # noqa: F401 - fixtures: both backends
from tests.memory.conftest import PERSONA, say


@pytest.fixture
async def filled(make_memory, store_where):
    """Two summary versions for Ken, one raw turn pending, and another user."""
    memory = await make_memory()
    await say(memory, "My name is Ken.", "Hello Ken.")
    await memory.flush()
    await say(memory, "Our budget is 2000 dollars.", "Noted.")
    await memory.flush()
    await say(memory, "We love temples.")
    other = await make_memory(user="guest")
    await say(other, "Just looking.")
    return store_where


async def test_show_has_summary_versions_history_and_the_role_prompt(filled):
    text = await admin.show(filled, "default")
    assert "summary v2" in text and "2000 dollars" in text
    assert "*v1" in text and "*v2" in text and "predecessor v1" in text
    assert "current-prompt history (1 turns" in text and "We love temples." in text
    assert "role prompt as the LLM sees it" in text and PERSONA in text
    assert "no memory for user 'nobody'" in await admin.show(filled, "nobody")


async def test_export_is_json_with_every_turn_summary_and_prompt(filled):
    data = json.loads(json.dumps(await admin.export(filled)))
    assert [u["user"] for u in data["users"]] == ["default", "guest"]
    ken = data["users"][0]
    assert len(ken["turns"]) == 5 and ken["current_summary_version"] == 2
    assert [s["predecessor_version"] for s in ken["summaries"]] == [None, 1]
    assert ken["summaries"][1]["absorbed_turn_ids"] == [ken["turns"][2]["id"], ken["turns"][3]["id"]]
    assert [p["reason"] for p in ken["role_prompts"]] == ["start", "summary", "summary"]
    assert [u["user"] for u in (await admin.export(filled, "guest"))["users"]] == ["guest"]


async def test_rollback_restores_an_old_version_and_returns_its_turns_to_the_history(filled):
    message = await admin.rollback(filled, "default", 1)
    assert "current summary is now v1" in message and "3 turns" in message
    view = open_store(parse_location(filled))
    state = await view.load_user("default", now=0)
    versions = [s.version for s in await view.summaries(state.user_id)]
    await view.close()
    assert state.summary.version == 1 and versions == [1, 2]  # nothing deleted
    assert [t.text for t in state.history] == ["Our budget is 2000 dollars.", "Noted.", "We love temples."]
    assert state.role_prompt.reason == "rollback" and "2000" not in state.role_prompt.text
    with pytest.raises(ValueError):
        await admin.rollback(filled, "default", 9)


async def test_forget_deletes_one_user_and_says_what(filled):
    said = await admin.forget(filled, "default")
    assert said.startswith("deleted user 'default': 5 turns, 2 summary versions, 3 role-prompt versions, 1 sessions")
    # PostgreSQL also says what its write-ahead log still holds (tests/memory/test_forget_wal.py)
    assert said.endswith("sessions") or "write-ahead log" in said
    assert [u["user"] for u in (await admin.export(filled))["users"]] == ["guest"]
    assert "nothing deleted" in await admin.forget(filled, "default")


def test_robot_memory_cli(filled, tmp_path, capsys):
    assert main(["memory", "show", "--db", str(filled)]) == 0
    assert "summary v2" in capsys.readouterr().out
    out = tmp_path / "export.json"
    assert main(["memory", "export", "--db", str(filled), "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["users"]) == 2
    assert main(["memory", "rollback", "--db", str(filled), "--user", "default", "--to", "0"]) == 0
    assert "now v0" in capsys.readouterr().out
    assert main(["memory", "forget", "--db", str(filled), "--user", "guest"]) == 0
    assert "deleted user 'guest': 1 turns" in capsys.readouterr().out
    assert main(["memory", "list", "--db", str(filled)]) == 0
    assert "default" in capsys.readouterr().out
    assert main(["memory", "show", "--db", str(tmp_path / "missing.sqlite3")]) == 1
