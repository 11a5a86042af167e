"""The shop's knowledge: its files (config/knowledge.py), the search (memory/recall/knowledge.py),
the grounding guard (robot/reply/grounding.py), what a turn does with them
(robot/dialogue/knowledge.py and the controller), the CLI, and the bench's path to a server."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

from config.knowledge import MAX_KNOWLEDGE_BYTES, KnowledgeFileSpec, load_knowledge
from config.loader import DEFAULT_PERSONA, ConfigError, load_persona
from memory.recall.knowledge import KnowledgeIndex
from robot.app.cli import EXIT_CONFIG, main
from robot.dialogue.knowledge import ShopKnowledge
from robot.reply.stream import Reply, ReplyRules
from robot.reply.grounding import GroundingGuard

REPO = Path(__file__).resolve().parents[1]
PERSONA = load_persona(DEFAULT_PERSONA)


def persona_with_files(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    listed = "\n".join(f"    - {name}" for name in files)
    path = tmp_path / "shop.yaml"
    path.write_text(f"name: Shop\nrole_prompt: You help visitors.\nknowledge:\n  files:\n{listed}\n", encoding="utf-8")
    return path


# --- files -------------------------------------------------------------------------------


def test_the_three_kinds_of_file_are_read_with_names_aliases_and_their_own_sentences(tmp_path):
    path = persona_with_files(tmp_path, {
        "a.md": "# Group\n\n## Tea house\nAliases: tea, matcha\nOpen from 9:00. Closed on Mondays.\n",
        "b.yaml": "say: 'The {name} costs {price}. It meets at {meeting_point}.'\nentries:\n"
                  "  - {name: River Walk, aliases: [river tour], price: 500 yen}\n",
        "c.csv": "name,aliases,fare\nBus 7,city bus|bus seven,\"1,200 yen\"\n",
    })
    entries = load_persona(path).knowledge.entries
    assert [e.title for e in entries] == ["Tea house", "River Walk", "Bus 7"]
    assert entries[0].aliases == ("tea", "matcha") and entries[0].sentences == ("Open from 9:00.", "Closed on Mondays.")
    assert entries[1].sentences == ("The River Walk costs 500 yen.",)  # the meeting point it lacks is left out
    assert entries[2].aliases == ("city bus", "bus seven") and entries[2].sentences == ("Bus 7.", "Fare: 1,200 yen.")
    assert entries[2].source == "c.csv:2"


@pytest.mark.parametrize("name, text, line, says", [
    ("k.md", "## Tea house\n\n## Next\nText.\n", 1, "no text under it"),
    ("k.md", "Loose text before any heading.\n", 1, "text outside an entry"),
    ("k.yaml", "- name: A\n  price: 1\n- name: B\n price: 2\n", 4, "broken YAML"),
    ("k.yaml", "- name: A\n- price: 3\n", 2, "a row needs a name"),
    ("k.csv", "name,fare\nA,1\nB,2,3\n", 3, "3 values for 2 columns"),
    ("k.csv", "title,fare\nA,1\n", 1, "needs a name column"),
    ("k.txt", "hello\n", 0, "unknown kind of knowledge file"),
])
def test_a_malformed_file_is_one_line_naming_the_file_and_line_and_exit_2(tmp_path, capsys, name, text, line, says):
    path = persona_with_files(tmp_path, {name: text})
    assert main(["knowledge", "check", "--persona", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "configuration error:" and len(err) == 2
    assert err[1].startswith(str(tmp_path / name)) and says in err[1]
    assert (f"line {line}:" in err[1]) == bool(line)
    assert main(["config", "check", str(path)]) == EXIT_CONFIG  # config check reads the files too


def test_an_empty_file_is_allowed_and_a_missing_one_is_named(tmp_path, capsys):
    path = persona_with_files(tmp_path, {"empty.md": "", "empty.csv": "", "empty.yaml": ""})
    assert load_persona(path).knowledge.entries == ()
    path.write_text(path.read_text() + "    - gone.md\n")
    with pytest.raises(ConfigError, match="gone.md.*does not exist"):
        load_persona(path)


def test_a_file_over_the_limit_is_refused_with_the_limit(tmp_path):
    big = tmp_path / "big.md"
    with big.open("wb") as f:
        f.truncate(MAX_KNOWLEDGE_BYTES + 1)  # sparse: no 8 MB written
    with pytest.raises(Exception, match=f"at most {MAX_KNOWLEDGE_BYTES}"):
        load_knowledge([KnowledgeFileSpec(big)])


def test_the_sample_persona_has_its_knowledge():
    assert len(PERSONA.knowledge.entries) >= 38
    assert "FICTIONAL" in (DEFAULT_PERSONA.parent / "knowledge/travel/tours.yaml").read_text()


# --- search ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shop() -> ShopKnowledge:
    knowledge = ShopKnowledge.of_persona(PERSONA, 300)
    assert knowledge is not None
    return knowledge


def test_the_search_finds_an_entry_by_other_words_and_says_the_sentence_asked(shop):
    plan = shop.plan("How long does it take to get to Nara by train?", ["Kyoto", "Nara"])
    assert plan.finding.best.entry.title == "Kyoto to Nara by train"
    assert "45 minutes" in plan.opening[0] and plan.handover is None
    plan = shop.plan("Where do we meet for the cooking class?")
    assert plan.opening[0].startswith("For the Kyoto Cooking Class, we meet at our Sanjo studio")


def test_a_question_the_knowledge_cannot_answer_is_handed_over_and_a_statement_is_not(shop):
    assert shop.plan("Do you have tours to Hiroshima?").handover == PERSONA.knowledge.no_answer
    assert shop.plan("Is there a good ramen shop near the station?").handover is not None
    statement = shop.plan("My name is Ken and we love ramen.")
    assert statement.handover is None and not statement.opening


def test_the_names_of_a_turn_are_the_personas_and_a_few_of_the_knowledges(shop):
    vocabulary = tuple(PERSONA.vocabulary)  # the shop's own short list: always
    assert shop.turn_vocabulary([]) == vocabulary
    assert shop.turn_vocabulary(["Kyoto", "Nara", "April"]) == vocabulary  # nothing it lacks; no dates
    shop.topic = "Arashiyama has a bamboo grove, and Kinkaku-ji is north of it."
    names = shop.turn_vocabulary(["Kyoto", "Gion", "Nara"])
    assert names[:len(vocabulary)] == vocabulary and 0 < len(names) - len(vocabulary) <= PERSONA.knowledge.max_names
    assert names[-1] == "Kinkaku-ji" or names[-1] in shop.topic_names(shop.topic)  # the most recent last
    shop.topic = ""


def test_five_thousand_entries_are_searched_in_milliseconds():
    entries = [e for _ in range(132) for e in PERSONA.knowledge.entries][:5000]
    index = KnowledgeIndex(entries)
    index.search("How long is the train to Nara?", ["Kyoto"])  # its word lists, loaded once
    import time

    started = time.perf_counter()
    for _ in range(20):
        index.search("How much is the Nara deer park tour?", ["Kyoto"])
    assert (time.perf_counter() - started) / 20 < 0.2  # the figure is bench/knowledge.py --entries'; this is a bound


# --- the guard ---------------------------------------------------------------------------


def test_the_guard_rejects_numbers_and_names_no_source_holds():
    guard = GroundingGuard.of(["The Nara tour costs 6,500 yen and takes 4 hours.", "We meet at Kyoto Station."])
    assert guard.unsupported("It costs 6500 yen and takes four hours, from Kyoto Station.") == ()
    assert guard.unsupported("It costs 7,000 yen.") == ("7000", "7000 yen")
    assert guard.unsupported("It takes 4 days.") == ("4 day",)  # the number is there, not with this unit
    assert guard.unsupported("You will love the Golden Pavilion.") == ("Golden", "Pavilion")
    assert guard.unsupported("Hiroshima is lovely too.") == ("Hiroshima",)
    assert guard.unsupported("Absolutely, you will enjoy it!") == ()
    # greetings the 1934 dictionary lacks: the robot's goodbye was held back as a name
    assert guard.unsupported("Goodbye, and safe travels.") == guard.unsupported("Cheers, enjoy!") == ()


class ScriptedLLM:
    """Stands in for an LLM that invents: each request gets the next reply of the script (a
    real model cannot be made to invent on cue)."""

    def __init__(self, *replies: str) -> None:
        self.replies, self.requests = list(replies), []

    async def stream(self, messages):
        self.requests.append(messages)
        for word in self.replies.pop(0).split(" "):
            yield word + " "


async def spoken(reply: Reply) -> list[str]:
    return [s.text async for s in reply.sentences()]


async def test_a_sentence_failing_the_guard_is_asked_again_then_the_entry_is_said():
    rules = ReplyRules(gestures={}, max_sentences=4, apology="Sorry.")
    guard = GroundingGuard.of(["The walk costs 500 yen."])
    llm = ScriptedLLM("Lovely choice. It costs 900 yen.", "It costs 800 yen.")
    reply = Reply(llm, [{"role": "user", "content": "How much?"}], rules, guard=guard,
                  fallback=["The walk costs 500 yen."])
    assert await spoken(reply) == ["Lovely choice.", "The walk costs 500 yen."]
    assert reply.regrounded == 1 and reply.fell_back and len(llm.requests) == 2
    assert llm.requests[1][-2] == {"role": "assistant", "content": "Lovely choice."}  # it goes on after what was said
    llm = ScriptedLLM("It costs 900 yen.", "It costs 500 yen, a bargain.")
    assert await spoken(Reply(llm, [], rules, guard=guard, fallback=["x"])) == ["It costs 500 yen, a bargain."]


# --- a turn ------------------------------------------------------------------------------


async def test_a_turn_answers_from_the_knowledge_or_hands_over_with_an_event(tmp_path):
    """The real embedded LLM behind the controller: an answered question is the entry's own
    sentence; a question it cannot answer is the no_answer line and a handover event, counted
    in /metrics."""
    from config.loader import load_settings
    from robot.console.metrics import RobotMetrics
    from robot.core.events import HandoverEvent
    from robot.app.runtime import open_runtime

    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "m.sqlite3"
    settings.llm.seed = 1
    async with open_runtime(settings, PERSONA, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
        metrics = RobotMetrics()
        rt.events.add(metrics)
        answered = await rt.controller.handle_text("How much is the Nara deer park tour?")
        assert "6,500 yen" in answered.reply_text
        handed = await rt.controller.handle_text("Do you have tours to Hiroshima?")
        assert handed.reply_text.startswith(PERSONA.knowledge.no_answer)
        events = rt.recorder.of(HandoverEvent)
        assert [e.question for e in events] == ["Do you have tours to Hiroshima?"] and events[0].turn_id == handed.turn_id
        assert b"robot_handovers_total 1.0" in metrics.render()
        history = rt.memory.history  # both turns remembered, the no_answer line as said
        assert history[-1].text.startswith(PERSONA.knowledge.no_answer)


async def test_a_persona_switch_reads_the_other_shops_knowledge(tmp_path):
    from robot.control.actions import RobotCommands
    from robot.dialogue.controller import DialogueController
    from robot.core.events import RecordingPublisher
    from memory.full_history import FullHistoryMemory
    from robot.speaking.speaker import TextSpeaker

    controller = DialogueController(persona=PERSONA, memory=FullHistoryMemory("x"), llm=ScriptedLLM(),
                                    speaker=TextSpeaker("S", RecordingPublisher()), events=RecordingPublisher())
    controller.knowledge = ShopKnowledge.of_persona(PERSONA, 300)
    museum = REPO / "config/personas/museum_guide.yaml"
    commands = RobotCommands(controller, DEFAULT_PERSONA)
    # the museum's memory section differs from the travel persona's: the switch is refused whole
    with pytest.raises(ValueError):
        await commands.switch_persona(museum)
    assert controller.knowledge.index.entries[0].title == "Kyoto Temples Day Tour"
    copy = tmp_path / "museum.yaml"
    shutil.copytree(museum.parent / "knowledge", tmp_path / "knowledge")
    # (the travel persona's slots ask their questions after a noted line: the museum needs one too)
    copy.write_text(museum.read_text().split("memory:")[0] + 'noted: "Noted: {profile}."\nmemory:\n' +
                    DEFAULT_PERSONA.read_text().split("\nmemory:\n")[1])
    await commands.switch_persona(copy)
    assert controller.knowledge.plan("Where is the Dinosaur Wing?").opening[0].startswith(
        "The Dinosaur Wing is on the first floor")


# --- the CLI and the bench ---------------------------------------------------------------


def test_knowledge_search_shows_the_entries_with_scores(capsys):
    assert main(["knowledge", "search", "how long is the train to Nara?", "--places", "Kyoto,Nara"]) == 0
    out = capsys.readouterr().out
    assert "Kyoto to Nara by train  (transport.csv:2)" in out and "the robot says:" in out and "45 minutes" in out


async def test_the_bench_runs_against_an_openai_compatible_server(tmp_path):
    from tests.openai_stub_server import StubOpenAIServer

    async with StubOpenAIServer(reply="Nice to meet you. The Nara tour costs 9,999 yen.") as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(REPO / "bench/knowledge.py"), "--full", "--base-url", server.base_url,
            "--model", "stub", "--sets", str(REPO / "bench/questions/museum.yaml"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, cwd=tmp_path)
        out = (await asyncio.wait_for(proc.communicate(), 240))[0].decode()
    assert proc.returncode == 0, out
    assert "now, dev: museum.yaml: 10 questions" in out and "answered with the gold fact" in out
    assert "invented numbers or names: 0" in out  # the stub's 9,999 yen was never said
    assert "unanswerable handed over: 2/2" in out


def test_the_linker_s_word_cache_forgets_rather_than_grows(monkeypatch):
    """The sound search asks "is this an ordinary word?" of every word a visitor says; a kiosk that
    runs for weeks hears numbers and names without end, so the cache is bounded."""
    from memory.recall.knowledge.linking import _Dictionary

    monkeypatch.setattr(_Dictionary, "KEPT", 3)
    words = _Dictionary(lambda w: w == "cat")
    for word in ("question 1", "question 2", "question 3", "question 4", "zzyzx"):
        assert word not in words
    assert len(words._known) <= 3
    assert "cat" in words and "137" in words  # answers stay right after forgetting
