"""Yield and merge: a customer who pauses mid-sentence long enough that the turn ends, and goes on.

A robot in a simulated room, in real time (speech/audio/room.py: its own voice comes back 6 dB
down), with the robot's default settings, real webrtcvad + Silero, the echo canceller, Whisper
tiny.en and espeak-ng; the LLM is a local OpenAI-protocol stub with a long reply, so what is
measured is the listen loop and the turn logic, not a model. Each case is a sentence cut in
two (the first part, then the rest), said two ways:
  thinking: the rest follows a 1.3 s pause (``--pause-s``; with espeak-ng's own silences the
            endpointer hears about 2 s: the old 1.0 s hangover ended the turn before the customer
            went on, the robot thinking or just begun to speak; the default's 500 ms end has it
            speaking 1.5-1.8 s by then);
  speaking: the rest begins once the robot has spoken 0.3 s of its answer.
Per case it prints what the robot did: the replies it finished, the customer entries and cut
replies in its memory, the share of each part's words in the customer entry (when there is
one), and the time
from the rest's voice onset to its confirmation by Silero (audio time), and from the moment the
robot was told to stop (barge-in or yield) to the end of its last output block.

    .venv/bin/python bench/yield_merge.py [--compare REV] [--repeat N] [--pause-s 1.3]
    .venv/bin/python bench/yield_merge.py --read-speech [600,900] [--verbose]

``--read-speech``: instead of the synthetic cases, issue 26's set (b) (bench/pause_sets.py:
read human speech with a pause of 600 or 900 ms put in after a word that cannot end a
sentence), each recording said whole into the room. Per case: where the turns the endpointer
ended lie in the recording, whether one ended at the put-in pause, and if so whether the
customer was still answered once with all their words (issue 26: "every one that does is
merged"); turns ended at a recording's own pauses are counted apart.

``--compare REV`` runs the same cases on git revision REV (a temporary worktree, a subprocess),
alternating with this tree so both see the same machine load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.revision import checked_out  # noqa: E402

CASES = [("We would like to visit", "Kyoto in April, the two of us."),
         ("We are two adults and our budget is about", "two thousand dollars for the whole week."),
         ("I am looking for a hotel near", "the station, with breakfast included.")]
MODES = ("thinking", "speaking")

# Run inside a checkout (this one or an older one): one JSON line per case. Only names that
# exist in both revisions are used; what this tree adds (yields) is read where it exists.
_COLLECT = r"""
import asyncio, json, logging, re, sys
sys.path.insert(0, ".")
logging.basicConfig(level=logging.ERROR)
from config.schema import BargeInSettings, Persona, Settings
from memory.full_history import FullHistoryMemory
from robot.core.events import EventBus, RecordingPublisher
from robot.dialogue.controller import DialogueController
from robot.app.runtime import _front_end
from robot.llm.client import LLMClient
from robot.speaking.speaker import AudioSpeaker
from speech.audio import NullSink, silence
from speech.audio.room import Room
from speech.espeak_cli import EspeakCliSynthesizer
from speech.stt import Transcriber
from speech.tts import Synthesizer
from tests.openai_stub_server import StubOpenAIServer

REPLY = ("Kyoto has more than one thousand temples and shrines. The most famous of them stand on the "
         "eastern hills, where the maple trees turn red every autumn. In spring the cherry blossoms "
         "line the old canals. Nara is only forty minutes away by train.")
PERSONA = Persona(name="Sakura", role_prompt="You are a travel consultant.", max_sentences=4, max_reply_s=60,
                  apology="Sorry, I lost my thought.")

def words(text):
    return set(re.findall(r"[a-z]+", text.lower()))

async def speech(text):
    return (await EspeakCliSynthesizer(voice="en-us", rate=140).synthesize(text, sample_rate=16000)).pcm

async def case(transcriber, server, first, rest, mode, pause_s, pcm=None):
    loop = asyncio.get_running_loop()
    room, sink = Room(echo_gain_db=-6.0, echo_delay_ms=50), NullSink(realtime=True)
    events_seen = RecordingPublisher()
    events = EventBus(events_seen)
    front_end = _front_end(Settings())  # the robot's own, from its defaults: echo canceller, Silero, holds
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), room.sink(sink), "en-us", 150, events,
                           tap=front_end.echo.far)
    memory = FullHistoryMemory(PERSONA.role_prompt)
    llm = LLMClient(base_url=server.base_url, api_key=None, model="stub", retries=0)
    robot = DialogueController(persona=PERSONA, memory=memory, llm=llm, speaker=speaker, events=events,
                               front_end=front_end, transcriber=transcriber, barge_in=BargeInSettings())
    cancels = []
    cancel = speaker.cancel
    def cancelled():  # when the robot was told to stop (barge-in, yield): both revisions call this
        if speaker.speaking and not cancels:
            cancels.append(loop.time())
        cancel()
    speaker.cancel = cancelled
    turns = []  # (start, end) stream seconds of each turn the endpointer ended, yielded ones too
    start_turn = robot.start_turn
    def started(utterance, *args, **kwargs):
        turns.append((utterance.t_start, utterance.t_end))
        return start_turn(utterance, *args, **kwargs)
    robot.start_turn = started
    listening = asyncio.create_task(robot.listen(room))
    offset = 0.0
    if mode == "read":  # a recorded sentence with its pause already in it (set b): ``pcm`` is its file
        b = open(pcm, "rb").read()
        room.push(b)
        offset = room.voice_positions[-1][0] / 16000  # the recording's start on the stream's clock
    else:
        a, b = await speech(first), await speech(rest)
    if mode == "thinking":
        room.push(a + silence(pause_s) + b)
    elif mode == "speaking":
        room.push(a)
        waited = loop.time()
        while (not sink.streams or sink.streams[0].written_s < 0.3) and loop.time() - waited < 60:
            await asyncio.sleep(0.005)
        room.push(b)
    await asyncio.sleep(len(b) / 32000 + 12.0)  # the rest (or the recording) said, and time to answer it
    room.close()
    await asyncio.wait_for(listening, 120)
    results = []
    while not robot.results.empty():
        results.append(robot.results.get_nowait())
    answered = [r for r in results if r.reply_text]
    cut = next((s for s in sink.streams if s.aborted), None)
    detect = [e.detect_s for e in events_seen.events if getattr(e, "detect_s", None) is not None]
    said = [t for t in memory.turns]
    entries = [t.text for t in said if t.role == "user"]
    one = words(entries[0]) if len(entries) == 1 else set()
    return {"mode": mode, "first": first,
            "replies_finished": sum(1 for r in answered if not r.interrupted),
            "user_entries": sum(t.role == "user" for t in said),
            "cut_remembered": sum(t.role == "assistant" and t.text.endswith("[interrupted]") for t in said),
            "first_words": round(len(words(first) & one) / len(words(first)), 2),
            "rest_words": round(len(words(rest) & one) / len(words(rest)), 2),
            "detect_ms": round(detect[0] * 1000) if detect else None,
            "stop_ms": None if cut is None or not cancels else round((max(cut.write_times) + 0.02 - cancels[0]) * 1000),
            "yields": sum(getattr(r, "yields", 0) for r in results), "entries": entries,
            "turns": [[round(start - offset, 2), round(end - offset, 2)] for start, end in turns],
            "verdicts": [e.verdict for e in events_seen.events if hasattr(e, "verdict")]}

async def main():
    cases, pause_s = json.loads(sys.argv[1]), float(sys.argv[2])
    transcriber = Transcriber()
    transcriber.load()
    async with StubOpenAIServer(reply=REPLY) as server:
        for first, rest, mode, *pcm in cases:
            try:
                row = await asyncio.wait_for(case(transcriber, server, first, rest, mode, pause_s, *pcm), 240)
            except asyncio.TimeoutError:
                row = {"mode": mode, "first": first, "hung": True}
            print("CASE " + json.dumps(row), flush=True)

asyncio.run(main())
"""


def run_once(tree: Path, cases: list[tuple[str, ...]], pause_s: float) -> list[dict]:
    done = subprocess.run(["nice", "-n", "5", sys.executable, "-c", _COLLECT, json.dumps(cases), str(pause_s)], cwd=tree,
                          capture_output=True, text=True, timeout=300 * len(cases))
    rows = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    if done.returncode or not rows:
        sys.exit(f"the run in {tree} failed:\n{done.stderr[-3000:]}")
    return rows


def print_report(label: str, rows: list[dict]) -> None:
    print(f"\n{label}")
    print("| mode | first part | replies finished | customer entries | cut replies remembered | its words in "
          "the one entry | the rest's | onset -> confirmed ms | told to stop -> silent ms | yields |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r.get("hung"):
            print(f"| {r['mode']} | {r['first']} | did not finish in 240 s ||||||||")
            continue
        print(f"| {r['mode']} | {r['first']} | {r['replies_finished']} | {r['user_entries']} | {r['cut_remembered']} "
              f"| {r['first_words']:.0%} | {r['rest_words']:.0%} | {_ms(r['detect_ms'])} | {_ms(r['stop_ms'])} | {r['yields']} |")
        if VERBOSE:
            print(f"|   | customer entries: {' / '.join(r.get('entries', []))} |||||||||")
    for mode in MODES:
        of = [r for r in rows if r["mode"] == mode and not r.get("hung")]
        if not of:
            continue
        one = sum(_one_turn(r) for r in of)
        stops = [r["stop_ms"] for r in of if r["stop_ms"] is not None]
        stop = f"; told to stop -> silent median {statistics.median(stops):.0f} ms, max {max(stops)} ms" if stops else ""
        print(f"{mode}: answered as one turn (one reply; one customer entry, with words of both parts; no cut "
              f"reply remembered) {one} of {len(of)}; the rest's words in it {statistics.mean(r['rest_words'] for r in of):.0%}"
              f" on average{stop}")


VERBOSE = False  # --verbose: the customer entries in memory, under each case


def _ms(value: int | None) -> str:
    return "-" if value is None else str(value)



def read_speech(pauses_ms: tuple[int, ...], folder: Path) -> tuple[list[tuple[str, ...]], list[tuple[str, float, float]]]:
    """Set (b)'s mid-clause pauses (bench/pause_sets.py: read human speech, a pause put in
    after a word that cannot end a sentence) as cases: each recording written to ``folder``
    for the run to push whole. Returns the cases, and for each its name and where its pause
    lies in the recording (seconds: from, how long)."""
    from bench.pause_sets import read_speech_cases

    cases, labels = [], []
    for n, c in enumerate(c for c in read_speech_cases(pauses_ms=pauses_ms) if c.kind == "pause"):
        path = folder / f"{n}.pcm"
        path.write_bytes(c.pcm)
        cases.append((c.before, c.after, "read", str(path)))
        labels.append((f"{c.source} ({c.pause_ms} ms)", c.at_s, c.pause_ms / 1000))
    return cases, labels


def print_read_report(label: str, rows: list[dict], labels: list[tuple[str, float, float]]) -> None:
    """Did the put-in pause end a turn, and was the customer then answered once, all their
    words in one entry? A turn may also end at a recording's own pause (JFK's after "fellow
    Americans", a full stop in mid-clip): counted apart."""
    print(f"\n{label}: set (b), read speech with a pause in mid-clause")
    print("| case | turns heard (s in the recording) | ended at the pause | yields | customer entries "
          "| cut replies remembered | words before the pause in the entry | after it | interruptions |")
    print("|---|---|---|---|---|---|---|---|---|")
    at_pause = merged = elsewhere = lost = 0
    for (name, at_s, pause_s), r in zip(labels, rows):
        if r.get("hung"):
            print(f"| {name} | did not finish in 240 s ||||||||")
            continue
        ends = [end for _, end in r["turns"]]
        ended = any(at_s - 0.1 <= end <= at_s + pause_s for end in ends)
        at_pause += ended
        merged += ended and _one_turn(r)
        elsewhere += not ended and len(ends) > 1
        lost += not ended and len(ends) == 1 and r["rest_words"] < 0.5
        spans = ", ".join(f"{a:.1f}-{b:.1f}" for a, b in r["turns"])
        print(f"| {name} | {spans} | {'yes' if ended else 'no'} | {r['yields']} | {r['user_entries']} "
              f"| {r['cut_remembered']} | {r['first_words']:.0%} | {r['rest_words']:.0%} "
              f"| {' '.join(r['verdicts']) or '-'} |")
        if VERBOSE:
            print(f"|   | customer entries: {' / '.join(r.get('entries', []))} ||||||||")
    print(f"read speech: the put-in pause ended a turn in {at_pause} of {len(rows)} cases; of them answered as one "
          f"turn (one reply, one customer entry with words of both parts, no cut reply remembered): {merged}; "
          f"a turn ended elsewhere (the recording's own pauses) in {elsewhere}; heard as one turn without half the "
          f"words after the pause in {lost}")


def _one_turn(r: dict) -> bool:
    return (r["replies_finished"] == 1 and r["user_entries"] == 1 and r["cut_remembered"] == 0
            and r["first_words"] >= 0.5 and r["rest_words"] > 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="REV", help="also run git revision REV, alternating with this tree")
    parser.add_argument("--repeat", type=int, default=1, help="run every case N times")
    parser.add_argument("--verbose", action="store_true", help="print the customer entries of each case")
    parser.add_argument("--pause-s", type=float, default=1.3, help="the thinking cases' pause between the parts")
    parser.add_argument("--read-speech", metavar="MS", nargs="?", const="600,900",
                        help="instead: set (b)'s recorded sentences with a pause of MS (default 600,900) "
                             "in mid-clause (bench/pause_sets.py)")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    with tempfile.TemporaryDirectory() as folder:
        labels: list[tuple[str, float, float]] = []
        if args.read_speech:
            cases, labels = read_speech(tuple(int(ms) for ms in args.read_speech.split(",")), Path(folder))
        else:
            cases = [(first, rest, mode) for mode in MODES for first, rest in CASES]
        new: list[dict] = []
        old: list[dict] = []
        with checked_out(args.compare) as old_tree:
            for _ in range(args.repeat):
                if old_tree is not None:
                    old += run_once(old_tree, cases, args.pause_s)
                new += run_once(REPO, cases, args.pause_s)
    for name, rows in ((f"revision {args.compare}", old), ("this tree", new)):
        if rows and labels:
            print_read_report(name, rows, labels * args.repeat)
        elif rows:
            print_report(name, rows)


if __name__ == "__main__":
    main()
