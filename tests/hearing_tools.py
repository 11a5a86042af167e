"""Measuring the hearing front end on real recordings: shared by tests and bench/hearing.py."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import numpy as np

from config.schema import VadSettings
from speech.audio import QueueSource, mix_under, pcm_to_float, read_wav_16k_mono, rms, silence
from speech.listen import Dropped, FrontEnd, NotSpeech, SecondStage, SpeechConfirmed, SpeechStarted
from speech.silero import SileroStream, load_session
from speech.stt import Transcriber
from speech.turn_end import EndOfTurn, UnfinishedHold
from speech.types import SAMPLE_RATE, Utterance
from speech.vad import Endpointer


def front_end(second_stage: bool = True, vad: VadSettings | None = None, turn_end: EndOfTurn | None = None,
              hold: UnfinishedHold | None = None) -> FrontEnd:
    second = SecondStage(SileroStream(load_session())) if second_stage else None
    return FrontEnd(Endpointer(vad or VadSettings()), second, turn_end=turn_end, hold=hold)


async def events_of(pcm: bytes, fe: FrontEnd, silence_after_s: float = 1.5) -> list[object]:
    """Every event the front end gives for a recording and the silence after it."""
    source = QueueSource()
    source.push(pcm)
    source.push_silence(silence_after_s)
    source.close()
    return [e async for e in fe.events(source)]


async def turns_of(pcm: bytes, turn_end: EndOfTurn | None = None, vad: VadSettings | None = None) -> list[Utterance]:
    """The utterances a recording makes, with this end-of-turn policy (None: silence alone)."""
    return [e for e in await events_of(pcm, front_end(vad=vad, turn_end=turn_end)) if isinstance(e, Utterance)]


def looped(pcm: bytes, seconds: float) -> bytes:
    samples = np.frombuffer(pcm, dtype=np.int16)
    n = int(seconds * 16000)
    return np.resize(samples, n).astype(np.int16).tobytes()


def mixed(speech: bytes, noise: bytes, snr_db: float | None) -> bytes:
    """Speech with noise under it at ``snr_db`` (None: clean), 0.5 s of the noise before and after."""
    if snr_db is None:
        return speech
    gain = rms(speech) / max(rms(noise), 1e-9) / 10 ** (snr_db / 20)
    padded = silence(0.5) + speech + silence(0.5)
    return mix_under(padded, pcm_to_float(noise), gain)


@dataclass
class Heard:
    opened: int = 0  # turns webrtcvad opened
    confirmed: int = 0  # ... that the second stage confirmed
    not_speech: int = 0  # utterances the second stage rejected
    answered: list[str] = field(default_factory=list)  # transcripts the robot would answer
    rejected: list[str] = field(default_factory=list)  # transcripts the guard dropped (why)
    stt_s: float = 0.0


async def hear(pcm: bytes, fe: FrontEnd, transcriber: Transcriber | None,
               vocabulary: tuple[str, ...] = ()) -> Heard:
    """Run a recording through the front end (and STT): what the robot would take as turns."""
    heard = Heard()
    for event in await events_of(pcm, fe):
        if isinstance(event, SpeechStarted):
            heard.opened += 1
        elif isinstance(event, SpeechConfirmed):
            heard.confirmed += 1
        elif isinstance(event, NotSpeech):
            heard.not_speech += 1
        elif isinstance(event, Utterance) and transcriber is not None:
            transcript = await transcriber.transcribe(event, vocabulary)
            heard.stt_s += transcript.stt_s
            if transcript.text:
                heard.answered.append(transcript.text)
            elif transcript.rejected:
                heard.rejected.append(f"{transcript.heard!r}: {transcript.rejected}")
    return heard


def read_clip(path) -> bytes:
    return read_wav_16k_mono(path)


def wer(reference: str, hypothesis: str) -> float:
    ref = re.findall(r"[a-z0-9']+", reference.lower())
    hyp = re.findall(r"[a-z0-9']+", hypothesis.lower())
    d = np.arange(len(hyp) + 1)
    for i, r in enumerate(ref, 1):
        prev, d[0] = d.copy(), i
        for j, h in enumerate(hyp, 1):
            d[j] = min(prev[j] + 1, d[j - 1] + 1, prev[j - 1] + (r != h))
    return float(d[len(hyp)]) / max(1, len(ref))


# --- barge-in: a speaker talking into a room, a customer talking over it -------------------------

LONG_SPEECH = ("Kyoto has more than one thousand temples and shrines. The most famous of them stand on "
               "the eastern hills, where the maple trees turn red every autumn, and in spring the cherry "
               "blossoms line the old canals of the city.")


def robot_says(*sentences: str, voice: str = "en-us", rate: int = 150) -> bytes:
    """The robot's voice saying ``sentences`` (16 kHz), one by one as its speaker renders them:
    espeak-ng's command line, the engine under the robot's pyttsx3, byte for byte the same
    each run (pyttsx3's renderings differed by a few hundred samples run to run, and the piano
    under the robot's voice cut it or not with them)."""
    from speech.espeak_cli import EspeakCliSynthesizer

    synth = EspeakCliSynthesizer(voice=voice, rate=rate)
    return b"".join(synth.synthesize_sync(sentence, sample_rate=SAMPLE_RATE).pcm for sentence in sentences)


async def barge_in_reaction(customer: bytes, *, start_after_s: float = 1.5, echo_db: float = -6.0,
                            echo_delay_ms: int = 50, level_dbfs: float | None = None) -> float | None:
    """The robot speaks into a room (its voice comes back at ``echo_db``); after
    ``start_after_s`` the customer says ``customer`` (at ``level_dbfs``, their speech level,
    when given). Seconds from the customer's voice onset to the last block the robot wrote,
    or None if it never stopped for them."""
    import asyncio

    from robot.core.events import EventBus, RecordingPublisher
    from robot.gestures.sentence import Sentence
    from robot.speaking.speaker import AudioSpeaker
    from speech.audio import NullSink
    from speech.audio.room import Room
    from speech.echo import EchoCanceller
    from speech.tts import Synthesizer

    room, sink = Room(echo_gain_db=echo_db, echo_delay_ms=echo_delay_ms), NullSink(realtime=True)
    canceller = EchoCanceller(echo_delay_ms)
    speaker = AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), room.sink(sink), "en-us", 150,
                           EventBus(RecordingPublisher()), tap=canceller.far)
    fe = FrontEnd(Endpointer(VadSettings(aggressiveness=2)), SecondStage(SileroStream(load_session())), canceller)

    async def sentences():
        for text in LONG_SPEECH.split(". "):
            yield Sentence(text)

    async def listen() -> None:
        async for event in fe.events(room, strict=lambda: speaker.speaking):
            if isinstance(event, SpeechConfirmed) and speaker.speaking:
                speaker.cancel()

    listening = asyncio.create_task(listen())
    speaking = asyncio.create_task(speaker.speak(sentences(), label="reply"))
    await until_played(sink, start_after_s)
    loop = asyncio.get_running_loop()
    pushed_at = loop.time()
    room.push(customer if level_dbfs is None else at_level(customer, level_dbfs))
    spoken = await _within(speaking, 120, "the robot's reply to end")
    room.close()
    await _within(listening, 60, "the listen loop to end")
    if not spoken.interrupted:
        return None
    onset = pushed_at + voice_onset(customer)
    return max(sink.streams[0].write_times) - onset


async def until_played(sink, seconds: float, reply: int = 0, within_s: float = 60) -> float:  # type: ignore[no-untyped-def]
    """Wait until the robot's ``reply``-th stream on ``sink`` has played ``seconds`` (a failure
    after ``within_s``); the loop time then."""
    async def played() -> None:
        while len(sink.streams) <= reply or sink.streams[reply].written_s < seconds:
            await asyncio.sleep(0.005)

    await _within(played(), within_s, f"the robot to play {seconds:g} s of reply {reply}")
    return asyncio.get_running_loop().time()


async def _within(awaitable, seconds: float, what: str):  # type: ignore[no-untyped-def]
    """``awaitable``'s result, or a failure that names what hung and where every task waits
    (on a slow machine the suite once hung here for good)."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        stacks = "\n".join(f"{t.get_name()}: {t.get_coro()!r} at {t.get_stack(limit=3)}" for t in asyncio.all_tasks())
        raise AssertionError(f"waited {seconds:g} s for {what}; tasks:\n{stacks}") from None


def echo_microphone(robot: bytes, *, echo_db: float = -6.0, delay_ms: int = 50, customer: bytes | None = None,
                    customer_at_s: float = 1.5, noise: bytes | None = None, noise_dbfs: float = -45.0) -> bytes:
    """A microphone in a room, offline: the robot's voice (16 kHz) back at ``echo_db``,
    ``delay_ms`` late; the customer from ``customer_at_s``; a noise bed looped at ``noise_dbfs``."""
    mic = np.zeros(len(robot) // 2 + 16000)
    delay = 16000 * delay_ms // 1000
    mic[delay: delay + len(robot) // 2] += np.frombuffer(robot, np.int16) * 10 ** (echo_db / 20)
    if customer is not None:
        start = int(customer_at_s * 16000)
        voice = np.frombuffer(customer, np.int16)[: len(mic) - start]
        mic[start: start + len(voice)] += voice
    if noise is not None:
        bed = np.resize(np.frombuffer(noise, np.int16).astype(np.float64), len(mic))
        mic += bed * 10 ** (noise_dbfs / 20) * 32768 / max(float(np.sqrt(np.mean(bed ** 2))), 1e-9)
    return np.clip(mic, -32768, 32767).astype(np.int16).tobytes()


def first_cut(fe: FrontEnd, robot: bytes, mic: bytes) -> float | None:
    """Stream seconds where ``fe`` (with an echo canceller), listening while the robot says
    ``robot``, first confirms speech (the barge-in), or None. Frames are fed at once, the
    loudspeaker's block for each 20 ms microphone frame just before it, as a sound card plays
    its queue. The microphone is open before the robot speaks: one silent frame first (the
    canceller's clock then starts on it; placed on the wall clock instead, the reply moved by
    however long the machine took between the two calls, and with it every figure)."""
    assert fe.echo is not None
    frame = 640
    fe.hear(bytes(frame), strict=False)
    for i in range(len(robot) // frame):
        fe.echo.far(robot[i * frame:(i + 1) * frame], 16000)
        if any(isinstance(e, SpeechConfirmed) for e in fe.hear(mic[i * frame:(i + 1) * frame], strict=True)):
            return i * frame / 2 / 16000
    return None


def warm_up(fe: FrontEnd, earlier: bytes, echo_db: float = -6.0, delay_ms: int = 50) -> bool:
    """The robot said ``earlier`` in the same room (its echo alone, on the same path) and the
    customer's turn took 1.5 s of silence: ``fe``'s echo cancellers have heard the robot's
    voice, as they have at any reply after the first. False if that reply cut itself."""
    clean = first_cut(fe, earlier, echo_microphone(earlier, echo_db=echo_db, delay_ms=delay_ms)) is None
    for _ in range(75):
        fe.hear(bytes(640), strict=False)
    return clean


def words_after_cut(fe: FrontEnd, robot: bytes, customer: bytes, stt: Transcriber) -> str:
    """What ``fe`` and ``stt`` hear of a customer who cuts the robot: the customer speaks from
    1.5 s into ``robot``'s reply (its echo back at -6 dB, 50 ms late), the robot falls silent
    at the first confirmed speech, the customer goes on; the words of the turn's first
    utterance ("" if it never came, or was not speech). The echo is ``echo_microphone``'s."""
    utterance = utterance_after_cut(fe, robot, customer)
    return stt.transcribe_sync(utterance.audio).text if utterance is not None else ""


def utterance_after_cut(fe: FrontEnd, robot: bytes, customer: bytes) -> Utterance | None:
    """The first utterance of a customer who cuts the robot, as ``words_after_cut`` makes it
    (None if it never came, or was not speech)."""
    assert fe.echo is not None
    fe.hear(bytes(640), strict=False)  # the microphone is open before the robot speaks (first_cut)
    start = int(BARGE_IN_AT_S * SAMPLE_RATE)
    length = start + len(customer) // 2 + 2 * SAMPLE_RATE
    voice, speaker, echo = np.zeros(length), np.zeros(length), np.zeros(length)
    voice[start: start + len(customer) // 2] = np.frombuffer(customer, np.int16)
    played = np.frombuffer(robot, np.int16)[:length]
    speaker[: len(played)] = played
    heard = np.frombuffer(echo_microphone(robot), np.int16)[:length]  # the room's echo of it alone
    echo[: len(heard)] = heard
    cut, frame = None, 320
    for i in range(length // frame):
        block = slice(i * frame, (i + 1) * frame)
        if cut is None:
            fe.echo.far(speaker[block].astype(np.int16).tobytes(), SAMPLE_RATE)
        mic = np.clip(voice[block] + echo[block], -32768, 32767).astype(np.int16).tobytes()
        for event in fe.hear(mic, strict=cut is None):
            if isinstance(event, SpeechConfirmed) and cut is None:
                cut = (i + 1) * frame
                echo[cut + SAMPLE_RATE * 50 // 1000:] = 0  # the loudspeaker stopped; its echo 50 ms later
            elif isinstance(event, (Utterance, NotSpeech, Dropped)) and cut is not None:
                return event if isinstance(event, Utterance) else None
    return None


BARGE_IN_AT_S = 1.5  # where the customer cuts in, as echo_microphone's customer_at_s


def at_level(pcm: bytes, dbfs: float) -> bytes:
    """``pcm`` scaled so its speech (the 20 ms frames within 20 dB of its loudest) has an RMS
    level of ``dbfs``."""
    x = _samples(pcm)
    rms = _frame_rms(x, 320)
    speech = rms[rms >= rms.max() * 0.1]
    gain = 10 ** (dbfs / 20) / max(float(np.sqrt((speech ** 2).mean())), 1e-9)
    return (np.clip(x * gain, -1, 1) * 32767).astype(np.int16).tobytes()


def _samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float64) / 32768


def _frame_rms(x: np.ndarray, size: int) -> np.ndarray:
    """The RMS level of each whole frame of ``size`` samples."""
    return np.sqrt((x[: len(x) // size * size].reshape(-1, size) ** 2).mean(axis=1))


def _loud_frames(pcm: bytes) -> np.ndarray:
    """Indices of the 10 ms frames of ``pcm`` above -40 dBFS."""
    return np.flatnonzero(_frame_rms(_samples(pcm), 160) > 0.01)


def voice_onset(pcm: bytes) -> float:
    """Seconds into ``pcm`` where the voice starts (the first 10 ms above -40 dBFS)."""
    loud = _loud_frames(pcm)
    return float(loud[0]) * 0.01 if len(loud) else 0.0


def voiced_s(pcm: bytes) -> float:
    """Seconds from the voice's first loud 10 ms to its last."""
    loud = _loud_frames(pcm)
    return float(loud[-1] - loud[0] + 1) * 0.01 if len(loud) else 0.0


def word_gap(pcm: bytes) -> int:
    """A byte offset at a word boundary in the middle of ``pcm``: the centre of its quietest
    60 ms between 30 % and 70 % of its length (where a pause can be put in)."""
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    frame = 160
    energy = np.sqrt((x[: len(x) // frame * frame].reshape(-1, frame) ** 2).mean(axis=1))
    window = np.convolve(energy, np.ones(6) / 6, mode="valid")
    lo, hi = int(len(window) * 0.3), int(len(window) * 0.7)
    return (lo + int(np.argmin(window[lo:hi])) + 3) * frame * 2
