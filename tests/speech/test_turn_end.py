"""The end-of-turn policy with the real turn-completion model (Smart Turn v3.2) on real
recorded speech: a finished sentence ends the turn at the short pause, an unfinished one
waits through a pause longer than that and is heard whole; the reference stays the last
voiced frame. (On espeak-ng's flat prosody the model is no better than chance: measured
"I would like to visit Kyoto in April." at 0.1, "We want to go in April and" at 0.96.)"""

from __future__ import annotations

import dataclasses

import pytest

from speech.audio import read_wav_16k_mono, silence
from speech.listen import Paused
from speech.smart_turn import SmartTurn
from speech.turn_end import EndOfTurn, UnfinishedHold
from speech.types import Transcript, Utterance
from tests.hearing_tools import events_of, front_end, turns_of, word_gap
from tests.shared_data import shared_data

FINISHED = ("speech", "ljspeech", "LJ001-0002_16k.wav")  # "in being comparatively modern."
# "For the twentieth time that evening | the two men shook hands."
UNFINISHED = ("speech", "cmu_arctic", "cmu_arctic_us_aew_a0003_16k.wav")


@pytest.fixture(scope="module")
def model() -> SmartTurn:
    return SmartTurn()


def clip(parts: tuple[str, ...]) -> bytes:
    return read_wav_16k_mono(shared_data("audio", *parts))


async def test_a_finished_sentence_ends_the_turn_at_the_short_pause(model):
    policy = EndOfTurn(model, pause_ms=250)
    [turn] = await turns_of(clip(FINISHED), policy)
    assert policy.last_probability is not None and policy.last_probability >= 0.5
    assert 0.25 <= turn.hangover_s - turn.overhang_s < 0.3  # the endpointer waited the pause; silence alone: 0.7 s
    [plain] = await turns_of(clip(FINISHED), None)
    assert plain.hangover_s >= 0.7
    assert abs(turn.t_end - plain.t_end) < 0.03  # the reference is the last voiced frame either way
    assert turn.audio == plain.audio  # the same words reach speech recognition


async def test_an_unfinished_sentence_waits_through_its_pause(model):
    pcm = clip(UNFINISHED)
    at = word_gap(pcm)  # a word boundary in the middle
    policy = EndOfTurn(model, pause_ms=250)
    turns = await turns_of(pcm[:at] + silence(0.6) + pcm[at:], policy)
    assert len(turns) == 1, [(t.t_start, t.t_end) for t in turns]  # not cut at the 600 ms pause
    assert turns[0].t_end - turns[0].t_start > 2.5


async def test_a_broken_model_leaves_the_pause_to_decide():
    class Broken:
        def probability(self, pcm: bytes) -> float:
            raise RuntimeError("onnxruntime failed")  # no real model can be made to fail on cue

    [turn] = await turns_of(clip(FINISHED), EndOfTurn(Broken()))
    assert turn.hangover_s >= 0.7


async def test_a_pause_gives_the_utterances_audio_before_the_hangover_ends():
    events = await events_of(clip(FINISHED), front_end())
    [paused] = [e for e in events if isinstance(e, Paused)]
    [turn] = [e for e in events if isinstance(e, Utterance)]
    assert paused.audio == turn.audio  # speech to text may start 0.5 s before the turn ends
    assert events.index(paused) < events.index(turn) and abs(paused.t - turn.t_end) < 0.03


# --- the policy with the words at the pause (Smart Turn, the transcript, the silence bound) ----

LEOPARD = ("speech", "librispeech", "leopard_test_1272-128104-0000_16k.wav")
# "Mr. Quilter is the apostle of the | middle classes ...": the words file times "the" at
# 2.30-2.34 s and "middle" from 2.40 s.
AFTER_THE_S = 2.37


STT_S = 0.2  # tiny.en on 5 s of audio, two idle cores


def at_idle_speed(transcript: Transcript) -> Transcript:
    """The words known as an idle two-core machine knows them. A policy given ``transcribe`` maps
    the seconds speech to text took onto the stream (the robot's words come that late); on a busy
    machine they came after the voice went on, and a turn was kept open for want of them, not by
    the rule a test judges (the control of the "review of" test, under stress-ng)."""
    return dataclasses.replace(transcript, stt_s=STT_S)


@pytest.fixture(scope="module")
def words():
    from speech.stt import Transcriber

    stt = Transcriber()
    stt.load()  # not in the first pause's time

    def transcribe(pcm: bytes) -> Transcript:
        # as the early transcript: its last word placed, known as an idle machine knows it
        return at_idle_speed(stt.transcribe_sync(pcm, words_end=True))

    yield transcribe
    stt.close()


def paused_in_mid_clause(seconds: float) -> bytes:
    pcm = clip(LEOPARD)
    at = int(AFTER_THE_S * 16000) * 2
    return pcm[:at] + silence(seconds) + pcm[at:]


async def test_a_mid_clause_pause_is_heard_whole(model, words):
    from speech.stt import Transcriber

    policy = EndOfTurn(model, pause_ms=500, transcribe=words, wait_for_words=True)
    turns = await turns_of(paused_in_mid_clause(0.9), policy)
    assert len(turns) == 1, [(t.t_start, t.t_end, t.ended_by) for t in turns]
    text = (await Transcriber().transcribe(turns[0])).text.lower()
    assert "apostle" in text and "middle" in text  # the words on both sides of the pause, in one turn
    # what held it: the model alone calls "... the apostle of the" complete and cuts it there
    alone = await turns_of(paused_in_mid_clause(0.9), EndOfTurn(model, pause_ms=500))
    assert len(alone) == 2 and alone[0].ended_by == "policy"


async def test_a_finished_sentence_ends_at_the_short_bound_with_its_words(model, words):
    # the robot hands in the early transcript it made at the Paused event (robot/dialogue/
    # hearing.py); here it is made before the run, so the check does not hang on this
    # machine's load (the bench measures the wait with speech to text's real time)
    events = await events_of(clip(FINISHED), front_end())
    [paused] = [e for e in events if isinstance(e, Paused)]
    policy = EndOfTurn(model, pause_ms=500, wait_for_words=True)
    policy.heard(paused.t, words(paused.audio).text)
    [turn] = await turns_of(clip(FINISHED), policy)
    assert turn.ended_by == "policy" and "modern" in (policy.last_text or "").lower()
    assert 0.5 <= turn.hangover_s - turn.overhang_s < 0.55  # the endpointer waited; silence alone: the whole second
    [plain] = await turns_of(clip(FINISHED), None)
    assert plain.ended_by == "silence" and plain.hangover_s >= 1.0


async def test_words_that_settle_the_pause_do_not_wait_for_the_model(model, words):
    # the loop waits on the model (40-120 ms): with the words alone due at the short bound,
    # finished-looking words end the turn and unfinished ones wait, whatever it would say
    class Asked:
        calls = 0

        def probability(self, audio: bytes) -> float | None:
            Asked.calls += 1
            return model.probability(audio)

    events = await events_of(clip(FINISHED), front_end())
    [paused] = [e for e in events if isinstance(e, Paused)]
    policy = EndOfTurn(Asked(), pause_ms=500, wait_for_words=True, words_ms=500)
    policy.heard(paused.t, words(paused.audio).text)
    [turn] = await turns_of(clip(FINISHED), policy)
    assert turn.ended_by == "policy" and Asked.calls == 0
    policy = EndOfTurn(Asked(), pause_ms=500, wait_for_words=True, words_ms=500)
    policy.heard(paused.t, "and we would like to go to the")
    [turn] = await turns_of(clip(FINISHED), policy)
    assert turn.ended_by == "silence" and Asked.calls == 0
    policy = EndOfTurn(Asked(), pause_ms=500, wait_for_words=True, words_ms=800)  # not due yet: asked
    policy.heard(paused.t, words(paused.audio).text)
    await turns_of(clip(FINISHED), policy)
    assert Asked.calls == 1


async def test_no_words_at_the_pause_are_no_agreement(model):
    # Whisper may hear nothing in a short fragment ("And so my" came back empty): the model
    # alone calls the clip complete, but without words it must not end the turn early
    events = await events_of(clip(FINISHED), front_end())
    [paused] = [e for e in events if isinstance(e, Paused)]
    policy = EndOfTurn(model, pause_ms=500, wait_for_words=True, words_ms=600)
    policy.heard(paused.t, " ")
    [turn] = await turns_of(clip(FINISHED), policy)
    assert turn.ended_by == "silence" and turn.hangover_s >= 1.0
    assert policy.last_probability is not None and policy.last_probability >= 0.5


async def test_failing_models_leave_the_silence_bound_in_charge():
    class Broken:
        def probability(self, pcm: bytes) -> float:
            raise RuntimeError("onnxruntime failed")  # no real model can be made to fail on cue

    def deaf(pcm: bytes) -> Transcript:
        raise RuntimeError("whisper failed")

    for policy in (EndOfTurn(Broken(), 500, transcribe=deaf, wait_for_words=True),
                   EndOfTurn(Broken(), 500, transcribe=deaf), EndOfTurn(None, 500)):
        [turn] = await turns_of(clip(FINISHED), policy)
        assert turn.ended_by == "silence" and turn.hangover_s >= 1.0


async def test_without_its_words_a_complete_turn_waits_when_it_must_wait_for_them(model):
    # the model says complete, but no transcript ever comes: the silence decides
    [turn] = await turns_of(clip(FINISHED), EndOfTurn(model, 500, wait_for_words=True))
    assert turn.ended_by == "silence" and turn.hangover_s >= 1.0


async def test_the_defaults_answer_a_finished_sentence_early_and_wait_through_a_mid_clause_pause(model):
    # the default settings: the policy as robot/app/runtime.py builds it, its words from Whisper
    # with the settings' short window, known as late as they take on an idle machine
    from config.loader import load_settings
    from speech.stt import Transcriber

    settings = load_settings([])
    assert settings.vad.end_of_turn == "smart_turn" and settings.stt.window_s < 30
    v, stt = settings.vad, Transcriber(settings.stt)
    stt.load()

    def transcribe(pcm: bytes) -> Transcript:
        return at_idle_speed(stt.transcribe_sync(pcm, words_end=True))

    def policy() -> EndOfTurn:
        return EndOfTurn(model, v.pause_ms, v.turn_complete_threshold, transcribe=transcribe,
                         wait_for_words=v.end_of_turn_words, words_ms=v.words_alone_ms or None)

    try:
        [finished] = await turns_of(clip(FINISHED), policy(), vad=v)
        assert finished.ended_by == "policy"  # at the short bound, or once the words came: not the hangover
        paused = await turns_of(paused_in_mid_clause(0.9), policy(), vad=v)
        assert len(paused) == 1, [(t.t_start, t.t_end, t.ended_by) for t in paused]  # "... of the" waits
    finally:
        stt.close()



# "... unless a system is established for the frequent formal review of | activities there
# under.": Whisper's words (bench/pause_sets.py) end "of" at 4.69 s in the clip
REVIEW_OF = ("speech", "ljspeech", "LJ050-0131_16k.wav")
AFTER_OF_S = 4.69


async def test_words_that_lost_their_last_word_do_not_end_the_turn(model):
    # at the pause tiny.en hears "... for the frequent formal review" (no "of"): words that look
    # finished, and the defaults ended the turn there. Its last word ends 0.5 s before the voice
    # does: they vouch for nothing, and the model (which hears an unfinished turn) decides.
    from config.loader import load_settings
    from speech.stt import Transcriber

    v, stt = load_settings([]).vad, Transcriber()
    stt.load()
    pcm = clip(REVIEW_OF)
    at = int(AFTER_OF_S * 16000) * 2
    pcm = pcm[:at] + silence(0.6) + pcm[at:]

    heard: list[str] = []  # what the policy's early transcripts said

    def policy(words_end: bool) -> EndOfTurn:
        def transcribe(audio: bytes) -> Transcript:
            transcript = stt.transcribe_sync(audio, words_end=words_end)
            heard.append(transcript.text)
            return at_idle_speed(transcript)
        return EndOfTurn(model, v.pause_ms, v.turn_complete_threshold, transcribe=transcribe,
                         wait_for_words=v.end_of_turn_words, words_ms=v.words_alone_ms or None)

    try:
        resumed = AFTER_OF_S + 0.6  # "activities" (a sentence end follows at "there under.")
        turns = await turns_of(pcm, policy(True), vad=v)
        assert turns[0].t_end > resumed + 0.5, [(t.t_start, t.t_end, t.ended_by) for t in turns]
        heard.clear()
        blind = policy(False)  # the words taken as whole, as before: cut after "review"
        cut = await turns_of(pcm, blind, vad=v)
        # The control holds where tiny.en drops the "of" at the pause: on one two-core EPYC it
        # heard "... review of" there (CTranslate2's numbers differ a little from CPU to CPU),
        # and the words alone kept the turn open. Only the fix above is this test's claim.
        if heard and not heard[0].rstrip(" .").endswith(" of"):
            assert cut[0].t_end < resumed and cut[0].ended_by == "policy", [(t.t_start, t.t_end) for t in cut]
    finally:
        stt.close()


# --- unfinished words hold the pause open (vad.unfinished_hold_ms, any end of turn) -----------

async def words_at_the_pause(pcm: bytes, words) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    """Where the first pause's last word ends, and what Whisper hears up to it: what the robot
    hands in from its early transcript (made before the run here, so the check does not
    depend on this machine's speed; the bench measures it in time)."""
    paused = next(e for e in await events_of(pcm, front_end()) if isinstance(e, Paused))
    return paused.t, words(paused.audio).text


async def test_unfinished_words_hold_a_pause_longer_than_the_hangover_open(words):
    pcm = paused_in_mid_clause(1.2)  # "Mr. Quilter is the apostle of the | middle classes"
    t, text = await words_at_the_pause(pcm, words)
    hold = UnfinishedHold(2000)
    hold.heard(t, text)
    turns = [e for e in await events_of(pcm, front_end(hold=hold), silence_after_s=2.5) if isinstance(e, Utterance)]
    assert len(turns) == 1, (text, [(u.t_start, u.t_end, u.ended_by) for u in turns])
    assert turns[0].t_end - turns[0].t_start > 4.0  # the words after the pause are in it
    cut = await turns_of(pcm, None)  # silence alone: the second ran out in the pause
    assert len(cut) == 2 and cut[0].ended_by == "silence"


async def test_finished_words_end_the_turn_at_the_hangover_as_before(words):
    pcm = clip(FINISHED)
    t, text = await words_at_the_pause(pcm, words)
    hold = UnfinishedHold(2000)
    hold.heard(t, text)
    [turn] = [e for e in await events_of(pcm, front_end(hold=hold), silence_after_s=2.5) if isinstance(e, Utterance)]
    assert turn.ended_by == "silence" and 0.99 <= turn.hangover_s - turn.overhang_s < 1.1, text


async def test_the_robot_holds_unfinished_words_by_default_and_a_word_after_the_pause_ends_the_hold():
    from config.schema import BargeInSettings, Settings, VadSettings
    from robot.app.runtime import _front_end

    fe = _front_end(Settings(barge_in=BargeInSettings(echo_cancel=False)))
    assert fe.hold is not None and fe.hold.hold_ms == 2000
    assert _front_end(Settings(vad=VadSettings(unfinished_hold_ms=0))).hold is None
    # the words reach the hold through the front end (robot/dialogue/hearing.py hands them in)
    pcm = paused_in_mid_clause(1.2)
    paused = next(e for e in await events_of(pcm, front_end()) if isinstance(e, Paused))
    fe.heard_words(paused.t, "Mr. Quilter is the apostle of the")
    turns = [e for e in await events_of(pcm, fe, silence_after_s=2.5) if isinstance(e, Utterance)]
    assert len(turns) == 1
    assert 0.99 <= turns[0].hangover_s - turns[0].overhang_s < 1.1  # after the last word: the usual hangover
