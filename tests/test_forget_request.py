"""A visitor asks the robot itself to be forgotten (robot/dialogue/forget_request.py): the robot asks
to confirm; a yes deletes the visitor's memory from every file, a no keeps it, anything else
is a turn like any other; nothing of the exchange is stored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, load_persona
from memory import ManualClock, StoreSettings, SummaryPolicy, create_memory
from robot.core.events import EventBus, ForgottenEvent, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.dialogue.forget_request import Forget, ForgetRequests
from robot.llm.client import LLMClient
from robot.speaking.speaker import TextSpeaker
from tests.memory.conftest import RuleLLM
from tests.openai_stub_server import StubOpenAIServer

REPO = Path(__file__).resolve().parents[1]
PERSONA = load_persona(DEFAULT_PERSONA)


@pytest.mark.parametrize("said, then, expected", [
    ("Please forget everything I told you.", "Yes, please.", Forget.CONFIRMED),
    ("Can you delete my data?", "yeah", Forget.CONFIRMED),
    ("Forget me, please.", "Yes, please forget it.", Forget.CONFIRMED),
    ("Forget me, please.", "No, thanks.", Forget.KEPT),
    ("Delete my data.", "No, don't delete it.", Forget.KEPT),
    ("Please forget what I said.", "How far is Nara?", Forget.NONE),  # a new question: nothing deleted
    ("Please forget what I said.", "More.", Forget.NONE),  # "more" answers another offer, not this one
])
def test_a_request_is_confirmed_or_not(said, then, expected):
    requests = ForgetRequests()
    assert requests.hear(said) is Forget.ASK
    assert requests.hear(then) is expected
    assert requests.hear("Yes.") is Forget.NONE  # asked once, answered once


def test_only_the_visitor_who_was_asked_can_confirm():
    requests = ForgetRequests()
    assert requests.hear("Please forget me.", visitor="mia") is Forget.ASK
    assert requests.hear("Yes.", visitor="anonymous-20261125-1") is Forget.NONE  # she left; the next visitor says yes
    assert requests.hear("Forget me.", visitor="mia") is Forget.ASK
    assert requests.hear("Yes.", visitor="mia") is Forget.CONFIRMED


@pytest.mark.parametrize("said", ["Yes, please.", "Don't forget my name, it's Ken.", "I forgot my umbrella.",
                                  "You will never forget me!", "What should we see first?"])
def test_other_words_ask_nothing(said):
    assert ForgetRequests().hear(said) is Forget.NONE


class Kiosk:
    """The real controller, typed turns, a real SQLite memory; the LLM a stub server."""

    def __init__(self, server: StubOpenAIServer, memory) -> None:
        self.spoken: list[str] = []
        self.memory = memory
        self.recorder = RecordingPublisher()
        events = EventBus(self.recorder)
        llm = LLMClient(base_url=server.base_url, api_key=None, model="stub", retries=0)
        self.robot = DialogueController(persona=PERSONA, memory=memory, llm=llm, events=events,
                                        speaker=TextSpeaker("Sakura", events, write=self.spoken.append))

    async def say(self, text: str) -> str:
        return (await self.robot.handle_text(text)).reply_text


async def open_memory(db: Path):
    memory = await create_memory("You are a travel consultant.", SummaryPolicy(update_interval_s=300),
                                 StoreSettings(db_path=db, user="ken"), RuleLLM(), clock=ManualClock(start=0))
    await memory.start()
    return memory


async def test_a_no_keeps_everything_and_stores_nothing_of_the_question(tmp_path):
    memory = await open_memory(tmp_path / "m.sqlite3")
    async with StubOpenAIServer(reply="Nara is forty minutes away.") as server:
        kiosk = Kiosk(server, memory)
        await kiosk.say("My name is Ken Tanaka.")
        assert await kiosk.say("Please forget me.") == PERSONA.forget.confirm
        assert await kiosk.say("No, thanks.") == PERSONA.forget.kept
        assert await kiosk.say("How far is Nara?") == "Nara is forty minutes away."
    said = [t.text for t in memory.history]
    await memory.aclose()
    assert said == ["My name is Ken Tanaka.", "Nara is forty minutes away.", "How far is Nara?",
                    "Nara is forty minutes away."]  # the request, question and answer are not there
    assert len(server.requests) == 2  # neither the request nor the answer went to the LLM


async def test_another_answer_is_a_turn_and_deletes_nothing(tmp_path):
    memory = await open_memory(tmp_path / "m.sqlite3")
    async with StubOpenAIServer(reply="Nara is forty minutes away.") as server:
        kiosk = Kiosk(server, memory)
        await kiosk.say("My name is Ken Tanaka.")
        await kiosk.say("Forget what I said.")
        assert await kiosk.say("How far is Nara?") == "Nara is forty minutes away."
        assert "Tanaka" in str(await memory.build_messages("Yes."))
        assert await kiosk.say("Yes.") == "Nara is forty minutes away."  # a yes too late: an answer to the LLM
    await memory.aclose()


def test_a_visitor_who_asks_is_forgotten_from_every_file(tmp_path):
    """``robot chat`` as a visitor: the embedded LLM, the real SQLite store."""
    db = tmp_path / "memory.sqlite3"
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"memory:\n  db_path: {db}\n")
    typed = ("Hello, my name is Ken Zebulon and our budget is 2000 dollars.\n"
             "Please forget everything I told you.\nYes.\n/quit\n")
    proc = subprocess.run([sys.executable, "-m", "robot", "chat", "--settings", str(settings), "--visitor", "ken"],
                          input=typed, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert PERSONA.forget.confirm in proc.stdout.replace("\nSakura: ", " ")
    assert "Done. I have forgotten everything you told me." in proc.stdout.replace("\nSakura: ", " ")
    files = [p.name for p in tmp_path.iterdir() if p.name.startswith(db.name) and b"Zebulon" in p.read_bytes()]
    assert files == [], f"the visitor's words are still in {files}"
    shown = subprocess.run([sys.executable, "-m", "robot", "memory", "show", "--db", str(db), "--visitor", "ken"],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert "Zebulon" not in shown.stdout + shown.stderr and "2000" not in shown.stdout


async def test_a_forget_that_fails_is_an_apology_and_an_error_for_the_operator():
    from memory.full_history import FullHistoryMemory
    from robot.core.events import ErrorEvent

    class StoreAway(FullHistoryMemory):
        async def forget_user(self, user=None) -> str:
            raise ConnectionError("the memory database is away")

    memory = StoreAway("You are a travel consultant.")
    async with StubOpenAIServer(reply="Sure.") as server:
        kiosk = Kiosk(server, memory)
        recorder = RecordingPublisher()
        kiosk.robot.events = EventBus(recorder)
        await kiosk.say("Delete my data, please.")
        assert await kiosk.say("Yes.") == PERSONA.apology  # never silence
    errors = [e.message for e in recorder.of(ErrorEvent)]
    assert errors and "asked to be forgotten and it failed" in errors[0]


async def test_a_memory_kept_in_ram_only_is_forgotten_too():
    from memory.full_history import FullHistoryMemory

    memory = FullHistoryMemory("You are a travel consultant.")
    async with StubOpenAIServer(reply="Sure.") as server:
        kiosk = Kiosk(server, memory)
        await kiosk.say("My name is Ken Zebulon.")
        await kiosk.say("Please forget me.")
        assert await kiosk.say("Yes, please.") == PERSONA.forget.done
    assert memory.turns == []
    # the body is told, so a face module or card reader can delete its own data of the visitor
    assert [(e.visitor, e.by) for e in kiosk.recorder.of(ForgottenEvent)] == [("anonymous", "visitor")]


async def test_an_operators_forget_tells_the_body_too(tmp_path):
    from robot.control.actions import RobotCommands

    memory = await open_memory(tmp_path / "m.sqlite3")
    async with StubOpenAIServer(reply="Sure.") as server:
        kiosk = Kiosk(server, memory)
        await kiosk.say("My name is Ken Zebulon.")
        commands = RobotCommands(kiosk.robot, forget_user=memory.forget_user)
        assert "Zebulon" not in await commands.forget("ken")
    assert "Zebulon" not in str(await memory.build_messages("Hello"))
    await memory.aclose()
    assert [(e.visitor, e.by) for e in kiosk.recorder.of(ForgottenEvent)] == [("ken", "operator")]


def test_asked_by_voice_the_robot_forgets_the_visitor(tmp_path):
    """config/scenarios/forget_me.yaml, as `robot simulate` runs it: espeak-ng speech through
    the microphone path and Whisper; the scenario's expectations hold the robot's lines."""
    from robot.app.cli import main

    import contextlib
    import io

    out, printed = tmp_path / "forget", io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["simulate", str(REPO / "config/scenarios/forget_me.yaml"), "--out", str(out)]) == 0
    heard = printed.getvalue().split("customer (heard): ")[1].split("  (script:")[0]  # Whisper's first turn
    said = [w for w in ("Mia", "3,000", "three thousand") if w in heard]
    assert said, heard  # something of the visitor's own was heard and stored before she asked
    for word in said:
        files = [p.name for p in out.iterdir() if p.name.startswith("memory.sqlite3") and word.encode() in p.read_bytes()]
        assert files == [], f"{word!r} is still in {files}"


async def test_a_persona_brings_its_own_words_or_turns_it_off():
    from config.schema import ForgetRequest
    from memory.full_history import FullHistoryMemory

    german = PERSONA.model_copy(update={"forget": ForgetRequest(
        confirm="Soll ich alles vergessen?", done="Erledigt.", kept="Gut, ich behalte es.",
        words=["vergiss mich", "lösch meine daten"], yes=["ja", "ja bitte"], no=["nein"])})
    async with StubOpenAIServer(reply="Gern.") as server:
        memory = FullHistoryMemory("Du bist Reiseberaterin.")
        kiosk = Kiosk(server, memory)
        kiosk.robot.persona = german
        await kiosk.say("Ich heiße Ken Zebulon.")
        assert await kiosk.say("Bitte vergiss mich.") == "Soll ich alles vergessen?"
        assert await kiosk.say("Ja bitte.") == "Erledigt."
        assert memory.turns == []
        kiosk.robot.persona = PERSONA.model_copy(update={"forget": None})
        assert await kiosk.say("Please forget me.") == "Gern."  # off: the LLM answers, as before
        assert [t.text for t in memory.turns] == ["Please forget me.", "Gern."]
