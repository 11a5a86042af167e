"""Stopping `robot run`: the first Ctrl-C stops the robot after the visit's forced summary and
says so; a second one stops waiting for that summary (its turns stay, memory/visitors.py)."""

from __future__ import annotations

import asyncio

from robot.app.cli_commands import _stopping, _terminated


class Memory:
    hurried = 0

    def hurry(self) -> None:
        self.hurried += 1


def test_the_second_ctrl_c_stops_waiting_for_the_summary(capsys):
    stop, memory = asyncio.Event(), Memory()
    _stopping(stop, memory, 60.0)
    assert stop.is_set() and memory.hurried == 0
    said = capsys.readouterr().err
    assert "Ctrl-C again" in said and "up to 60 s" in said  # session.exit_wait_s
    _stopping(stop, memory, 60.0)
    assert memory.hurried == 1
    assert capsys.readouterr().err == ""  # said once


def test_sigterm_stops_at_once_without_waiting_for_the_summary(capsys):
    stop, memory = asyncio.Event(), Memory()
    _terminated(stop, memory)
    assert stop.is_set() and memory.hurried == 1  # a service manager's stop waits for no LLM
    assert "every turn is kept" in capsys.readouterr().err
