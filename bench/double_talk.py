"""Barge-in over the robot's own voice, offline: who stops the robot, and how soon.

The front end as the robot builds it (``robot.app.runtime._front_end``: the echo canceller,
webrtcvad, Silero) listens while espeak-ng says a reply whose voice comes back into the
microphone at -6 dB, 50 ms late. Frames are fed at once, each loudspeaker block just before
its microphone frame, so a run takes seconds and gives nearly the same figures every time (the
real-time part of bench/hearing.py --barge-in-only measures the same with the machine's
timing, noisily).

- customers: every shared speech clip under 20 s, said from 1.5 s into the reply at its own
  level, at -30 and at -40 dBFS (a quiet voice 12 dB under the echo): how many stop the
  robot, and how long after their voice began (the first confirmed speech, which cuts the
  speaker within one 20 ms block);
- the -40 dBFS customers' words, once the robot stopped for them (it falls silent at the cut,
  they go on): Whisper's word error rate on the turn's first utterance against their text;
- the robot alone: two voices, two replies, its echo at 0, -6 and -12 dB and 50, 150 and
  250 ms late: any cut is a false one;
- the robot in a noisy room: each shared noise clip at -45 and -35 dBFS under the reply.

Each case twice: on a fresh front end (the first reply after start-up, the greeting, which
`robot run` says with the microphone open: the cancellers have heard nothing of the robot yet),
after one earlier reply on the same echo path and 1.5 s of silence (warm: the first answer,
after the greeting), and with ``--warm long`` after three (about 25 s of the robot's voice,
every later answer: the linear filter has learnt the echo well, and Silero on its frames has
heard long near-silence). Each setting of
``barge_in.quiet_voice`` (``--settings off,on``) and of ``barge_in.linear_echo_ms`` (the
linear echo filter, ``--linear-echo-ms 0,200``) in one run.

    .venv/bin/python bench/double_talk.py [--warm cold,warm,long] [--settings on] [--linear-echo-ms 0,200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import BargeInSettings, Settings, SttSettings  # noqa: E402
from robot.app.runtime import _front_end  # noqa: E402
from speech.audio import read_wav_16k_mono  # noqa: E402
from speech.listen import FrontEnd  # noqa: E402
from speech.stt import Transcriber  # noqa: E402
from speech.types import SAMPLE_RATE  # noqa: E402
from tests.hearing_tools import (BARGE_IN_AT_S, LONG_SPEECH, at_level, echo_microphone, first_cut,  # noqa: E402
                                 robot_says, voice_onset, warm_up, wer, words_after_cut)

CUSTOMER_AT_S = BARGE_IN_AT_S  # as in the words after the cut
ECHO_DB = -6.0  # the robot's voice back in the microphone
NO_ECHO_DB = -100.0  # next to none of it
REPLIES = ("Our Kyoto temple tour costs two hundred and forty dollars a person, with a guide and lunch. "
           "It leaves every morning at nine from the station, and you will be back by five.",
           "Hello and welcome! I can help you plan a trip to Japan. Where would you like to go, and when? "
           "Tell me your budget, and I will find the best offers for you.")
# --warm: what the robot said before the reply the customers talk over, and how that is named
EARLIER = {"cold": ((), "the first reply after start-up (cold)"),
           "warm": ((REPLIES[1],), "after one earlier reply (warm)"),
           "long": ((REPLIES[1], REPLIES[0], REPLIES[1]), "after 25 s of the robot's voice (long)")}


def say(text: str, voice: str = "en-us", rate: int = 150) -> bytes:
    return robot_says(*text.split(". "), voice=voice, rate=rate)


def heard_before(settings: Settings, earlier: bytes, echo_db: float = -6.0, delay_ms: int = 50) -> FrontEnd:
    """The robot's front end after it heard the ``earlier`` reply on this echo path (none: a
    fresh one, the first reply after start-up)."""
    front_end = _front_end(settings)
    if earlier and not warm_up(front_end, earlier, echo_db, delay_ms):
        print("    (the earlier reply cut itself)")
    return front_end


def cut_at(settings: Settings, robot: bytes, mic: bytes, earlier: bytes, echo_db: float = -6.0,
           delay_ms: int = 50) -> float | None:
    """Where the robot's front end first cuts ``robot`` (heard as ``mic``), as ``heard_before``."""
    return first_cut(heard_before(settings, earlier, echo_db, delay_ms), robot, mic)


def words(settings: Settings, robot: bytes, clips: list[Path], earlier: bytes, stt: Transcriber,
          texts: dict[str, str]) -> None:
    """The -40 dBFS customers' words once the robot stopped for them, against their text."""
    errors = []
    for clip in clips:
        heard = words_after_cut(heard_before(settings, earlier), robot, at_level(read_wav_16k_mono(clip), -40.0), stt)
        errors.append(wer(texts[clip.stem], heard))
    print(f"    their words after the cut (-40 dBFS, Whisper): mean WER {statistics.mean(errors):.0%}, "
          f"{sum(e < 0.5 for e in errors)} of {len(errors)} under 50 %")


def customers(settings: Settings, robot: bytes, clips: list[Path], earlier: bytes) -> None:
    for level in (None, -30.0, -40.0):
        _reactions(settings, robot, clips, earlier, level, ECHO_DB,
                   "their own level" if level is None else f"{level:.0f} dBFS")
    # A microphone that hears next to nothing of the loudspeaker (a headset, a directional
    # microphone; the virtual sound card of tests/test_live_audio.py): the echo canceller, which
    # has found no echo path yet, takes the customer's voice in the first reply for seconds.
    _reactions(settings, robot, clips, earlier, None, NO_ECHO_DB, "own level, no echo")


def _reactions(settings: Settings, robot: bytes, clips: list[Path], earlier: bytes, level: float | None,
               echo_db: float, where: str) -> None:
    reactions: list[float | None] = []
    for clip in clips:
        pcm = read_wav_16k_mono(clip)
        pcm = pcm if level is None else at_level(pcm, level)
        onset = CUSTOMER_AT_S + voice_onset(pcm)
        mic = echo_microphone(robot, echo_db=echo_db, customer=pcm, customer_at_s=CUSTOMER_AT_S)
        cut = cut_at(settings, robot, mic, earlier, echo_db)
        # a cut before the voice began was the robot's own voice, not this customer
        reactions.append(None if cut is None or cut < onset - 0.1 else cut - onset)
    found = sorted(r for r in reactions if r is not None)
    figures = (f"p50 {statistics.median(found) * 1000:.0f} ms, p95 "
               f"{found[min(len(found) - 1, int(0.95 * len(found)))] * 1000:.0f} ms, max {found[-1] * 1000:.0f} ms"
               if found else "-")
    print(f"    customer at {where:20} stopped it {len(found):2} of {len(reactions)}; onset -> cut {figures}")


def alone(settings: Settings, noises: list[Path], earlier: bytes) -> None:
    false_cuts, runs = 0, 0
    for voice in ("en-us", "en-gb"):
        for text in REPLIES:
            robot = say(text, voice, 170)
            for echo_db in (0.0, -6.0, -12.0):
                for delay_ms in (50, 150, 250):
                    runs += 1
                    mic = echo_microphone(robot, echo_db=echo_db, delay_ms=delay_ms)
                    false_cuts += cut_at(settings, robot, mic, earlier, echo_db, delay_ms) is not None
    print(f"    the robot alone: cut {false_cuts} of {runs} replies")
    robot, cut = say(LONG_SPEECH), []
    for noise in noises:
        for dbfs in (-45.0, -35.0):
            mic = echo_microphone(robot, noise=read_wav_16k_mono(noise), noise_dbfs=dbfs)
            if cut_at(settings, robot, mic, earlier) is not None:
                cut.append(f"{noise.stem} {dbfs:.0f}")
    print(f"    the robot in a noisy room: cut {len(cut)} of {2 * len(noises)}" + (f" ({', '.join(cut)})" if cut else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data" / "audio")
    parser.add_argument("--settings", default="on", help="barge_in.quiet_voice settings to run: off, on or off,on")
    parser.add_argument("--linear-echo-ms", default="0,200", help="barge_in.linear_echo_ms settings to run (0: off)")
    parser.add_argument("--warm", default="cold,warm",
                        help="cold: each case on a fresh front end; warm: after one earlier reply; long: after "
                             "three (about 25 s of the robot's voice); comma-separated")
    args = parser.parse_args()
    speech = args.shared / "speech"
    clips = [p for p in sorted(speech.rglob("*_16k.wav"))
             if "vad_labeled" not in p.parts and "realtimestt" not in p.name and len(read_wav_16k_mono(p)) < 20 * 2 * SAMPLE_RATE]
    noises = sorted((args.shared / "noise").glob("*_16k.wav"))
    robot = say(LONG_SPEECH)
    stt = Transcriber(SttSettings())
    stt.load()
    texts = {Path(c["path"]).stem: c["transcript_or_label"] for c in json.loads((args.shared / "manifest.json").read_text())}
    print(f"== barge-in over the robot's voice (echo -6 dB, 50 ms), offline: {len(clips)} speech clips, "
          f"{len(noises)} noises")
    for warm in args.warm.split(","):
        earlier = say(" ".join(EARLIER[warm][0]), "en-us", 150) if EARLIER[warm][0] else b""
        for setting in args.settings.split(","):
            for linear_ms in (int(v) for v in args.linear_echo_ms.split(",")):
                print(f"  barge_in.quiet_voice: {setting}, linear_echo_ms: {linear_ms}; "
                      + EARLIER[warm][1])
                settings = Settings(barge_in=BargeInSettings(quiet_voice=setting == "on", linear_echo_ms=linear_ms))
                customers(settings, robot, clips, earlier)
                words(settings, robot, clips, earlier, stt, texts)
                alone(settings, noises, earlier)


if __name__ == "__main__":
    main()
