"""``robot run`` on a sound card, for real: a PulseAudio virtual card (null sinks,
speech/audio/virtual_card.py) stands in for the kiosk's microphone and speaker. A customer's
voice is played into the microphone; the robot must hear it, answer, and its answer must
come out of the speaker; a customer who speaks right after the greeting is heard whole."""

from __future__ import annotations

import json
import shutil
import subprocess
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from speech.audio.virtual_card import MonitorRecording, VirtualCard
from tests.audio_checks import wav_rms
from tests.quick_exit import SETTINGS as QUICK_EXIT

REPO = Path(__file__).resolve().parents[1]
# A sound card in real time: scripts/test.sh runs these alone, after the rest (two xdist workers'
# models and servers beside them took the cores the echo canceller and the capture need).
pytestmark = pytest.mark.realtime
# After Ctrl-C `robot run` folds the visit into a summary before it exits: the 135M model's
# answer may be refused and asked again (about 10 s a try here; 30-35 s seen)
EXIT_WAIT_S = 90


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
    playing into sink ``mic_feed`` (default input is its monitor). Yields the card's
    environment, which a client (`robot run`, paplay) needs to use it."""
    assert shutil.which("pulseaudio"), "pulseaudio is missing: run `bash scripts/setup.sh --test`"
    with VirtualCard(tmp_path) as card:
        yield card.env


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
        # the microphone opens, the greeting is spoken, then `robot run` says it is listening
        assert wait_for(lambda: "is listening" in err.read_text(), 120), err.read_text()
        subprocess.run(["paplay", "--device=mic_feed", str(customer)], env=env, check=True)
        assert wait_for(lambda: '"event": "turn"' in err.read_text(), 120), err.read_text()
        robot.send_signal(2)  # Ctrl-C
        assert robot.wait(EXIT_WAIT_S) == 0
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


def _voiced_onset(feed: MonitorRecording) -> float:
    """When the first sound louder than -40 dBFS went into the microphone (time.monotonic())."""
    audio = feed.samples()
    return feed.time_of(int(np.flatnonzero(np.abs(audio) > 0.01)[0]))


def _first_visitor(env: dict, tmp_path: Path, words: str, *, over_greeting: bool) -> tuple[str, float | None, str]:
    """`robot run` (defaults, DEBUG log: the utterance's capture times) and a customer who says
    ``words`` once the robot is listening (after its greeting), or over the greeting. Returns
    the robot's log, where it heard the first word from (s, against the feed; None over the
    greeting, where the feed holds the robot's echo too), and what the customer's turns in
    memory say."""
    settings = tmp_path / "settings.yaml"  # the defaults (echo canceller on); the visitor kept
    # the exit does not wait for the visit's summary (tests/quick_exit.py); the turns stay,
    # unsummarized, for the export below
    settings.write_text(f"memory:\n  db_path: {tmp_path / 'memory.sqlite3'}\n  anonymous_retention_days: 1\n"
                        f"{QUICK_EXIT}logging:\n  level: DEBUG\n")
    customer = tmp_path / "customer.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(customer), words], check=True)
    feed = MonitorRecording(env, "mic_feed.monitor")
    speaker = MonitorRecording(env, "speaker.monitor")
    err = tmp_path / "robot.err"
    with err.open("w") as err_file:
        robot = subprocess.Popen([sys.executable, "-m", "robot", "run", "--settings", str(settings)],
                                 cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        ready = "recording from" if over_greeting else "is listening"
        assert wait_for(lambda: ready in err.read_text(), 120), err.read_text()
        if over_greeting:
            time.sleep(1.0)  # the greeting (about 5 s) plays
        subprocess.run(["paplay", "--device=mic_feed", str(customer)], env=env, check=True)
        assert wait_for(lambda: '"event": "turn"' in err.read_text(), 120), err.read_text()
        robot.send_signal(2)  # Ctrl-C
        stopped = time.monotonic()
        assert robot.wait(EXIT_WAIT_S) == 0
        assert time.monotonic() - stopped < 20, "the exit waited for the summary"
    finally:
        robot.kill()
        for name, recording in (("feed", feed), ("speaker", speaker)):  # kept for a run that fails
            recording.stop()
            np.savez_compressed(tmp_path / f"{name}.npz", samples=recording.samples(), sample_0_at=recording.time_of(0))
    log = err.read_text()
    assert "Traceback" not in log
    heard_from = float(re.search(r"utterance captured from ([\d.]+)", log).group(1))
    onset = None if over_greeting else heard_from - _voiced_onset(feed)
    exported = subprocess.run([sys.executable, "-m", "robot", "memory", "export", "--db", str(tmp_path / "memory.sqlite3")],
                              cwd=REPO, env=env, check=True, capture_output=True, text=True).stdout
    said = " ".join(turn["text"] for user in json.loads(exported)["users"] for turn in user["turns"]
                    if turn["role"] == "user").lower()
    return log, onset, said


def test_live_first_words_after_the_greeting_are_heard_whole(sound_card, tmp_path):
    """Issue 26, item 6: the greeting, played before the microphone opened, was taken for
    echo in the customer's first seconds ("I would like to go to April"): Ken's name was lost."""
    _, onset, said = _first_visitor(sound_card, tmp_path, "Hello, my name is Ken and I would like to visit Kyoto in April.",
                                    over_greeting=False)
    assert abs(onset) <= 0.15, f"heard from {onset * 1000:+.0f} ms of the customer's first word"
    for word in ("hello", "name", "ken"):  # the opening words, which were lost
        assert word in said, said


@pytest.fixture
def echoing_sound_card(tmp_path):
    """``sound_card``, and the loudspeaker heard by the microphone 6 dB down, as in a room."""
    with VirtualCard(tmp_path) as card:
        card.echo(-6.0)
        yield card.env


def test_live_a_visitor_who_speaks_over_the_greeting_is_heard(echoing_sound_card, tmp_path):
    """The microphone is open while the robot greets (before, it opened after the greeting and
    a visitor's words over it were lost): the greeting stops and the visitor is answered."""
    log, _, said = _first_visitor(echoing_sound_card, tmp_path, "Excuse me, my name is Ken. I want to visit Kyoto.",
                                  over_greeting=True)
    assert "barge-in: speech" in log  # the greeting was cut
    # what the robot made of it, should a word be missing (it was, 2 runs in 38 at stop 39)
    heard = "\n".join(line for line in log.splitlines() if re.search(r"hearing|barge_in|ignored|captured|turn\b|echo_linear", line))
    for word in ("name", "ken", "kyoto"):
        assert word in said, f"{said!r}\n{heard}"


def test_live_the_robot_does_not_take_its_own_voice_for_the_customer(echoing_sound_card, tmp_path):
    """The loudspeaker heard by the microphone: the robot greets, the customer speaks after it,
    the robot answers, and nothing it says is taken for the customer. When each reply had an output stream of
    its own, the echo canceller's reference moved 5-33 ms against the echo from the greeting
    to the reply, and the robot took its own first words for the customer going on (8 of 15
    runs at stop 46): it stopped, and the echo was merged into the customer's words.

    Judged by what the robot made of it, not by whether it paused: on a busy machine (two cores
    under stress-ng) the reply may start while the canceller still learns the room, echo is
    confirmed as speech, and the robot stops to read it (a cut). Its words decide: its own voice
    is a false alarm and the reply goes on. What must never happen is the echo taken for the
    customer: its words in theirs (a yield merges them), or a cut's words read as theirs."""
    line = "Hello, my name is Ken and I would like to visit Kyoto in April."
    log, _, said = _first_visitor(echoing_sound_card, tmp_path, line, over_greeting=False)
    stops = [row for row in log.splitlines() if "barge-in: speech" in row or "yield: speech" in row]
    taken = [row for row in log.splitlines() if "were the customer's" in row]  # a cut's second reading taken
    assert not taken, "\n".join(stops + taken)
    assert re.findall(r"[a-z]+", said) == re.findall(r"[a-z]+", line.lower()), (said, stops)


def test_live_sigterm_stops_the_robot_at_once_with_an_llm_that_never_answers(sound_card, tmp_path):
    """A kiosk's service manager stops it with SIGTERM (systemd kills it 90 s later) while a turn
    is in flight: the LLM server never answers and the turn's yield window is still open, so the
    customer's words are not stored yet. The robot still stops at once, waits for no summary, and
    the words said are in the memory file. Before: two summary tries of about 22 s each; and the
    store closed under the turn in flight lost its words (a busy machine's suite, run 30)."""
    import asyncio
    import threading

    from memory.stores.sqlite_store import SqliteStore
    from tests.openai_stub_server import STALL, StubOpenAIServer

    ready, done, servers = threading.Event(), threading.Event(), []

    def serve() -> None:  # an OpenAI-compatible server whose every answer stalls
        async def main() -> None:
            async with StubOpenAIServer(reply="never", script=[STALL] * 1000) as server:
                servers.append(server)
                ready.set()
                while not done.is_set():
                    await asyncio.sleep(0.1)
        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(30)
    env = {**sound_card, "ROBOT_LLM_BACKEND": "openai", "OPENAI_BASE_URL": servers[0].base_url,
           "ROBOT_LLM_MODEL": "stub"}
    db = tmp_path / "memory.sqlite3"
    settings = tmp_path / "settings.yaml"
    # The reply's request only once the turn is under way (not at the pause), no filler to close
    # the yield window early, and a window of 10 s: the words wait for it when SIGTERM comes.
    settings.write_text(f"memory:\n  db_path: {db}\n  anonymous_retention_days: 1\n"
                        "llm:\n  give_up_after_s: 60\n  filler_after_s: 30\n  start_at_pause: false\n"
                        "barge_in:\n  yield_window_ms: 10000\n")
    # a persona with no knowledge and no profile: the robot says nothing of its own, every turn
    # asks the LLM
    persona = tmp_path / "persona.yaml"
    persona.write_text("name: Sakura\nvoice: en-us\ngreeting: Welcome.\nfiller: null\n"
                       "role_prompt: You are Sakura, a travel consultant at a kiosk.\n")
    customer = tmp_path / "customer.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(customer),
                    "Tell me something nice about the mountains in spring."], check=True)
    err = tmp_path / "robot.err"
    with err.open("w") as err_file:
        robot = subprocess.Popen([sys.executable, "-m", "robot", "run", "--settings", str(settings),
                                  "--persona", str(persona)],
                                 cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        assert wait_for(lambda: "is listening" in err.read_text(), 120), err.read_text()
        subprocess.run(["paplay", "--device=mic_feed", str(customer)], env=env, check=True)
        # the turn's reply is asked for: it is in flight, and stays so (the server stalls)
        assert wait_for(lambda: any("mountain" in str(r) for r in servers[0].requests), 120), err.read_text()
        robot.terminate()  # SIGTERM
        try:
            code = robot.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail("no exit 60 s after SIGTERM:\n" + err.read_text()[-3000:])
        assert code == 0, err.read_text()[-2000:]
    finally:
        robot.kill()
        done.set()
    log = err.read_text()
    assert "Stopping (SIGTERM)" in log and "Traceback" not in log
    assert "the exit was hurried" in log or "summary" not in log.split("Stopping (SIGTERM)")[1]

    async def said() -> list[str]:
        store = SqliteStore(db)
        await store.connect()
        try:
            users = await store.user_names()
            return [t.text for u in users for t in await store.turns(await store.user_id(u)) if t.role == "user"]
        finally:
            await store.close()
    kept = asyncio.run(said())
    assert any("mountain" in t.lower() for t in kept), log[-3000:]  # the turn said is in the memory file
    assert "still in flight" in log  # the turn was cut by the stop, not ended by itself
