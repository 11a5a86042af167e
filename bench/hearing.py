"""Hearing in a real room: false turns on everyday noise, barge-in reaction, own-voice cuts,
word error rate in noise, the vocabulary, and the front end's CPU cost.

Uses the recordings in ../shared/data/audio (real speech and everyday noise).

    .venv/bin/python bench/hearing.py [--noise-s 60] [--quick] [--stt-model DIR ...]
        [--vocabulary-only | --barge-in-only]

"before" is the front end as it was: webrtcvad alone, Whisper with faster-whisper's
defaults (temperature fallback, its AND rule on no_speech_prob and avg_logprob), no text
guard. "after" is webrtcvad + Silero confirmation + the hallucination guard. Figures depend
on the machine: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from config.schema import SttSettings  # noqa: E402
from speech.audio.pcm import pcm_to_float  # noqa: E402
from speech.espeak_cli import EspeakCliSynthesizer  # noqa: E402
from speech.stt import Transcriber  # noqa: E402
from speech.types import Transcript, Utterance  # noqa: E402
from tests.hearing_tools import (barge_in_reaction, front_end, hear, looped, mixed, read_clip,  # noqa: E402
                                 wer)
from tests.shared_data import shared_root  # noqa: E402

if TYPE_CHECKING:
    from robot.dialogue.knowledge import ShopKnowledge

VOCABULARY = ("Kyoto", "Nara", "Fushimi Inari")
PLACE_LINES = ["Hello. My name is Ken. I would like to plan a trip to Kyoto and Nara.",
               "What should we see first, the temples in Kyoto or the deer park in Nara?",
               "Is Fushimi Inari far from the station?"]
OTHER_LINES = ["How far is Nara from here?", "Nara sounds lovely, how do we get there?",
               "We want two nights in Kyoto and one in Nara.", "Can we feed the deer in Nara?",
               "Is the train to Nara included in the price?", "My wife would like to see Fushimi Inari at sunrise.",
               "Does the Kyoto tour stop at Fushimi Inari?", "Kyoto first, then Nara on Sunday.",
               "I heard Nara is quieter than Kyoto.", "Which bus goes from Kyoto station to the temples?",
               "Could you book us a day in Nara?", "We are three adults and we love Kyoto."]
VOICES = [("en-us", 140), ("en-us", 170), ("en-gb", 140), ("en-us-nyc", 150)]


class BeforeTranscriber:
    """Whisper as the product called it before: faster-whisper's defaults, no guard."""

    def __init__(self, t: Transcriber) -> None:
        self._t = t

    async def transcribe(self, u: Utterance, vocabulary: tuple[str, ...] = ()) -> Transcript:
        def run() -> Transcript:
            segments, _ = self._t._model.transcribe(pcm_to_float(u.audio), language="en", beam_size=1,
                                                   condition_on_previous_text=False, without_timestamps=True)
            text = " ".join(s.text.strip() for s in segments).strip()
            return Transcript(text=text, audio_s=u.duration_s, stt_s=0.0, heard=text)
        return await asyncio.to_thread(run)


async def false_turns(audio: Path, t: Transcriber, seconds: float) -> None:
    print(f"\n== false turns per minute on everyday noise, each clip looped to {seconds:.0f} s")
    print(f"{'clip':38} {'before':>7} {'after':>7}   (turns opened by webrtcvad)")
    before_total = after_total = 0
    fe_s = audio_s = 0.0
    for clip in sorted((audio / "noise").glob("*.wav")):
        pcm = looped(read_clip(clip), seconds)
        before = await hear(pcm, front_end(second_stage=False), BeforeTranscriber(t))  # type: ignore[arg-type]
        fe = front_end()
        started = time.process_time()
        after = await hear(pcm, fe, t)
        fe_s += time.process_time() - started - after.stt_s
        audio_s += seconds
        per_min = 60 / seconds
        before_total += len(before.answered)
        after_total += len(after.answered)
        print(f"{clip.stem[:38]:38} {len(before.answered) * per_min:7.2f} {len(after.answered) * per_min:7.2f}"
              f"   ({before.opened}) {after.answered[:2] if after.answered else ''}")
    minutes = audio_s / 60
    print(f"{'all clips':38} {before_total / minutes:7.2f} {after_total / minutes:7.2f}  answered false turns/min")
    print(f"front end CPU (webrtcvad + Silero, no STT): {fe_s / audio_s * 100:.2f} % of audio time")


async def barge_in(audio: Path, quick: bool) -> None:
    """The robot's own voice plays at about -21 dBFS and comes back 6 dB down (-28 dBFS at the
    microphone); each clip is said at its own level, then at -30 and -40 dBFS (a quiet
    customer 12 dB under the robot's echo: issue 26's "quiet voice")."""
    print("\n== barge-in: real speech over the robot's reply (its voice back at -6 dB, 50 ms)")
    clips = sorted((audio / "speech/ljspeech").glob("*.wav"))[:3] + sorted((audio / "speech/cmu_arctic").glob("*.wav"))
    clips = clips[:3] if quick else clips
    for level in (None, -30.0, -40.0):
        print(f"  the customer at {'their own level' if level is None else f'{level:.0f} dBFS'}:")
        reactions = []
        for clip in clips:
            r = await barge_in_reaction(read_clip(clip), level_dbfs=level)
            reactions.append(r)
            print(f"    {clip.stem:40} {'not detected' if r is None else f'{r * 1000:.0f} ms'}")
        found = sorted(r for r in reactions if r is not None)
        if found:
            p95 = found[min(len(found) - 1, int(0.95 * len(found)))]
            print(f"  detected {len(found)} of {len(reactions)}; onset -> last output block: "
                  f"p50 {statistics.median(found) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms (target 300 / 600 ms)")


async def word_errors(audio: Path, t: Transcriber, quick: bool) -> None:
    print(f"\n== word error rate, clean and with office babble mixed in ({t.settings.model}, the new front end)")
    manifest = json.loads((audio / "manifest.json").read_text())
    clips = [c for c in manifest if c["kind"] == "speech" and "vad_labeled" not in c["path"] and c["duration_s"] < 20]
    clips = clips[:4] if quick else clips
    babble = read_clip(audio / "noise/office-ambience-24000-mono_16k.wav")
    for snr in (None, 10, 0):
        errors, stt_s, audio_s = [], 0.0, 0.0
        for c in clips:
            h = await hear(mixed(read_clip(audio / c["path"]), babble, snr), front_end(), t)
            errors.append(wer(c["transcript_or_label"], " ".join(h.answered)))
            stt_s, audio_s = stt_s + h.stt_s, audio_s + c["duration_s"]
        print(f"  {'clean' if snr is None else f'{snr} dB SNR':>9}: mean WER {statistics.mean(errors):.3f} over "
              f"{len(clips)} clips; STT real-time factor {stt_s / audio_s:.3f}")


async def vocabulary(t: Transcriber) -> None:
    """Place names heard, each voice speaking the lines in order as one visitor.

    Two sets: the sample scenario's lines (PLACE_LINES, what issue 27 counts) and OTHER_LINES,
    never tuned on, with the names in other places of a sentence. without: no names.
    fixed list: the persona's list given to Whisper as the product did before the per-turn
    list ("Kyoto, Nara, Fushimi Inari" as hotwords, greedy). greedy: the per-turn list
    (robot/dialogue/knowledge.py: the persona's names, then the places the visitor named and
    the topic's), decoded greedily (beam 1, the default before). now: the per-turn list with
    the settings' beam (stt.beam_size)."""
    from config.loader import DEFAULT_PERSONA, load_persona
    from robot.dialogue.knowledge import ShopKnowledge

    knowledge = ShopKnowledge.of_persona(load_persona(DEFAULT_PERSONA), 300)
    greedy = Transcriber(t.settings.model_copy(update={"beam_size": 1}))
    await greedy.aload()
    for title, lines in (("the sample scenario's lines", PLACE_LINES), ("other lines (never tuned on)", OTHER_LINES)):
        print(f"\n== place names heard, {title}: espeak-ng voices x lines (each voice one visitor, lines in order)")
        for mode, heard_by in (("without", t), ("fixed list", t), ("greedy", greedy),
                               (f"now (beam {t.settings.beam_size})", t)):
            hits, lists, stt_s = await _names_heard(heard_by, knowledge, lines, mode)
            shown = f" (lists: {'; '.join(sorted(lists))})" if lists else ""
            print(f"  {mode:12} " + ", ".join(f"{w} {a}/{b}" for w, (a, b) in hits.items() if b)
                  + f"; speech to text {stt_s * 1000:.0f} ms per line{shown}")
    greedy.close()


async def _names_heard(t: Transcriber, knowledge: ShopKnowledge | None, lines: list[str],
                       mode: str) -> tuple[dict[str, list[int]], set[str], float]:
    hits = {w: [0, 0] for w in VOCABULARY}
    lists: set[str] = set()
    stt_s, n = 0.0, 0
    for voice, rate in VOICES:
        places: list[str] = []
        for line in lines:
            pcm = (await EspeakCliSynthesizer(voice=voice, rate=rate).synthesize(line, sample_rate=16000)).pcm
            started = time.perf_counter()
            if mode == "fixed list":
                text = await _fixed_list(t, pcm, VOCABULARY)
            elif mode == "without":
                text = (await t.transcribe(pcm, ())).text
            else:
                names = knowledge.turn_vocabulary(places) if knowledge else ()
                lists.add(", ".join(names))
                text = (await t.transcribe(pcm, names)).text
            stt_s, n = stt_s + time.perf_counter() - started, n + 1
            places += knowledge.topic_names(text) if knowledge else []  # the profile's places, as heard
            for w in VOCABULARY:
                if w in line:
                    hits[w][1] += 1
                    hits[w][0] += w.lower() in text.lower()
    return hits, lists, stt_s / n


async def _fixed_list(t: Transcriber, pcm: bytes, names: tuple[str, ...]) -> str:
    """Whisper with the names as the product gave them before: comma-joined hotwords, greedy."""
    def run() -> str:
        segments, _ = t._model.transcribe(pcm_to_float(pcm), language="en", beam_size=1, temperature=0.0,
                                          vad_filter=False, condition_on_previous_text=False,
                                          without_timestamps=True, hotwords=", ".join(names))
        return " ".join(s.text.strip() for s in segments)
    return await asyncio.to_thread(run)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise-s", type=float, default=60.0, help="each noise clip looped to this long")
    parser.add_argument("--quick", action="store_true", help="fewer clips (a smoke run)")
    parser.add_argument("--stt-model", action="append", default=[], metavar="DIR",
                        help="also measure the word error rate of this CTranslate2 Whisper model directory")
    parser.add_argument("--vocabulary-only", action="store_true", help="only the place-name trials")
    parser.add_argument("--barge-in-only", action="store_true", help="only the barge-in reactions")
    args = parser.parse_args()
    if args.vocabulary_only:
        t = Transcriber(SttSettings())
        await t.aload()
        await vocabulary(t)
        return
    audio = shared_root() / "data" / "audio"
    if not (audio / "manifest.json").is_file():
        sys.exit(f"bench/hearing.py needs the recordings in {audio} (../shared/data/audio beside the clone)")
    if args.barge_in_only:
        await barge_in(audio, args.quick)
        return
    t = Transcriber(SttSettings())
    await t.aload()
    await false_turns(audio, t, args.noise_s)
    await barge_in(audio, args.quick)
    await word_errors(audio, t, args.quick)
    for model in args.stt_model:
        other = Transcriber(SttSettings(model=model))
        await other.aload()
        await word_errors(audio, other, args.quick)
    await vocabulary(t)


if __name__ == "__main__":
    asyncio.run(main())
