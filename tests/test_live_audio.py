"""``robot run`` on a sound card, for real: a PulseAudio virtual card (null sinks) stands in
for the kiosk's microphone and speaker. A customer's voice is played into the microphone;
the robot must hear it, answer, and its answer must come out of the speaker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.audio_checks import wav_rms

REPO = Path(__file__).resolve().parents[1]


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def sound_card(tmp_path):
    """A private PulseAudio server: sink ``speaker`` (default output), and a microphone fed by
    playing into sink ``mic_feed`` (default input is its monitor)."""
    assert shutil.which("pulseaudio"), "pulseaudio is missing: run `bash scripts/setup.sh --test`"
    socket = tmp_path / "native"
    env = {**os.environ, "PULSE_SERVER": f"unix:{socket}", "HOME": str(tmp_path)}
    server = subprocess.Popen(
        ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
         "-L", f"module-native-protocol-unix auth-anonymous=1 socket={socket}",
         "-L", "module-null-sink sink_name=speaker"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(socket.exists, 10), "pulseaudio did not start"
        for cmd in (["load-module", "module-null-sink", "sink_name=mic_feed", "rate=16000", "channels=1"],
                    ["set-default-source", "mic_feed.monitor"], ["set-default-sink", "speaker"]):
            subprocess.run(["pactl", *cmd], env=env, check=True, capture_output=True)
        yield env
    finally:
        server.terminate()
        server.wait(10)




def test_live_robot_hears_and_answers(sound_card, tmp_path):
    env = sound_card
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {tmp_path / 'memory.sqlite3'}\n")
    customer = tmp_path / "customer.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(customer),
                    "Hello. I would like to plan a trip with my family in April."], check=True)
    heard = tmp_path / "speaker.wav"
    recorder = subprocess.Popen(["parecord", "--device=speaker.monitor", "--file-format=wav", str(heard)], env=env)
    err = tmp_path / "robot.err"
    with err.open("w") as err_file:
        robot = subprocess.Popen([sys.executable, "-m", "robot", "run", "--settings", str(settings)],
                                 cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        # the greeting is spoken first; `robot run` starts listening after it
        assert wait_for(lambda: "recording from" in err.read_text(), 120), err.read_text()
        subprocess.run(["paplay", "--device=mic_feed", str(customer)], env=env, check=True)
        assert wait_for(lambda: '"event": "turn"' in err.read_text(), 120), err.read_text()
        robot.send_signal(2)  # Ctrl-C
        assert robot.wait(30) == 0
    finally:
        robot.kill()
        recorder.terminate()
        recorder.wait(10)
    turn = next(json.loads(line.split("robot.turn: ", 1)[1]) for line in err.read_text().splitlines()
                if "robot.turn: " in line)
    assert turn["user_chars"] >= len("trip april")  # the log holds lengths, not words (forget)
    assert turn["reply_chars"] and turn["first_audio_s"] is not None
    assert wav_rms(heard) > 100 / 32768  # greeting and reply came out of the speaker
    assert "Traceback" not in err.read_text()
