"""Endpointing: where a customer's utterance starts and ends, with webrtcvad.

States: *idle* (keeping a pre-roll of recent audio) -> *speech* once ``start_ms`` of voiced
audio falls within a short window -> back to idle after ``hangover_ms`` of unvoiced audio,
returning the Utterance. Inside a turn the caller may add a speech model's verdict
(``feed(..., speech=...)``): a frame then counts as voiced only if webrtcvad and the model
both say voice, so steady sound that webrtcvad takes for voice (rain, music) cannot hold a
turn open, while webrtcvad still marks word ends to the frame in quiet rooms. Turns whose voiced extent is below ``min_speech_ms`` (clicks,
taps, a cough) are dropped; a turn reaching ``max_utterance_s`` is cut and marked truncated.
All times are on the stream clock: samples fed so far / 16000."""

from __future__ import annotations

import time
from collections import deque
from math import ceil

import webrtcvad

from config.schema import VadSettings
from speech.types import SAMPLE_RATE, Utterance

_START_SLACK = 1.5  # start window = start_ms * this: one unvoiced frame must not block a start
# With a speech model's verdict: when webrtcvad hears voice again after this much silence, a
# word is starting and the model (Silero needs 3-6 chunks to be sure again) gets this long
# to agree before the hangover may end the turn. Without it a 900 ms mid-sentence pause
# ended 4 more of 14 read sentences than webrtcvad alone (bench/turn_end.py's clips);
# steady noise that webrtcvad calls voice throughout never shows such a silence.
_RESUME_SILENCE_MS = 200
_MODEL_LAG_MS = 240


class Endpointer:
    """Feed 16 kHz mono int16 audio (20 ms frames, or any length); get an Utterance back
    from the ``feed`` call that ends a turn. Cheap (microseconds a frame): call it inline.

    ``tail_ms`` of audio after the last voiced frame is kept in the utterance, because the
    VAD calls a word's fading end silence before the recogniser is done with it."""

    def __init__(self, settings: VadSettings | None = None, tail_ms: int = 200) -> None:
        self.settings = settings = settings or VadSettings()
        self._vad = webrtcvad.Vad(settings.aggressiveness)
        self._frame_ms = settings.frame_ms
        self._frame_bytes = SAMPLE_RATE * settings.frame_ms // 1000 * 2
        self._start_frames = ceil(settings.start_ms / self._frame_ms)
        self._window = ceil(self._start_frames * _START_SLACK)
        self._hangover_frames = ceil(settings.hangover_ms / self._frame_ms)
        self._preroll_frames = ceil(settings.preroll_ms / self._frame_ms)
        self._tail_frames = ceil(tail_ms / self._frame_ms)
        self._resume_silence = ceil(_RESUME_SILENCE_MS / self._frame_ms)
        self._model_lag = ceil(_MODEL_LAG_MS / self._frame_ms)
        self._max_frames = int(settings.max_utterance_s * 1000 / self._frame_ms)
        self._pending = bytearray()
        self._frames_seen = 0  # the stream clock, in VAD frames
        self.reset()

    @property
    def tail_s(self) -> float:
        """Seconds of audio an utterance keeps after its last voiced frame."""
        return self._tail_frames * self._frame_ms / 1000

    def reset(self) -> None:
        """Forget any turn in progress (e.g. while the robot itself is speaking); the stream
        clock keeps running so later times still match the source."""
        self._history: deque[tuple[bytes, bool]] = deque(maxlen=self._preroll_frames + self._window)
        self._turn: list[bytes] = []  # frames of the open turn, pre-roll included
        self._turn_first = 0  # stream frame index of _turn[0]
        self._onset = 0  # frame index where voiced audio began
        self._last_voiced = 0  # frame index of the last voiced frame
        self._in_speech = False
        self._vad_silent = 0  # webrtcvad's unvoiced frames in a row, in the open turn
        self._word_start = -self._model_lag  # where webrtcvad last heard voice after a silence
        self._turn_hangover = self._hangover_frames  # this turn's; hold_open() lengthens it
        self._pause_hold: tuple[int, int] | None = None  # (a pause's last voiced frame, its hangover): hold_pause()

    @property
    def in_speech(self) -> bool:
        """True from the moment a turn opens until it ends (barge-in, 'listening' state)."""
        return self._in_speech

    @property
    def speech_started_at(self) -> float | None:
        """Stream time where the open turn's speech began, or None when idle."""
        return self._onset * self._frame_ms / 1000 if self._in_speech else None

    @property
    def stream_time(self) -> float:
        return self._frames_seen * self._frame_ms / 1000

    def feed(self, frame: bytes, now: float | None = None, speech: bool | None = None) -> Utterance | None:
        """Take audio; return the Utterance this audio ended, if it ended one.

        ``speech`` is a speech model's verdict on this audio (None: no verdict, webrtcvad
        alone); it only matters inside a turn (opening one is webrtcvad's job).

        ``now`` stamps Utterance.ended_at (default time.monotonic()), so a simulation with
        its own clock can measure latency from the end of speech. Feed frames, not long
        recordings: should one call end two turns, only the last would be returned."""
        self._pending += frame
        result = None
        while len(self._pending) >= self._frame_bytes:
            chunk = bytes(self._pending[: self._frame_bytes])
            del self._pending[: self._frame_bytes]
            result = self._step(chunk, now, speech) or result
        return result

    def flush(self, now: float | None = None) -> Utterance | None:
        """The source ended: close a turn in progress as if silence followed."""
        self._pending.clear()
        if not self._in_speech:
            return None
        return self._finish(now, truncated=False, ended_by="flush")

    def _step(self, frame: bytes, now: float | None, speech: bool | None = None) -> Utterance | None:
        vad_voiced = voiced = self._vad.is_speech(frame, SAMPLE_RATE)
        if speech is not None and self._in_speech:
            voiced = vad_voiced and speech
        index = self._frames_seen
        self._frames_seen += 1
        if not self._in_speech:
            self._history.append((frame, voiced))
            if voiced:
                self._maybe_open(index)
            return None
        self._turn.append(frame)
        if vad_voiced and self._vad_silent >= self._resume_silence:
            self._word_start = index
        self._vad_silent = 0 if vad_voiced else self._vad_silent + 1
        if voiced:
            self._last_voiced = index
        if len(self._turn) >= self._max_frames:  # pre-roll included: the audio Whisper gets
            return self._finish(now, truncated=True, ended_by="cut")
        if index - self._last_voiced >= self._hangover() and not self._model_catching_up(index, speech, vad_voiced):
            return self._finish(now, truncated=False)
        return None

    def _hangover(self) -> int:
        """Frames of silence that end the turn now: this pause's hold, if any, else the turn's."""
        held = self._pause_hold
        return max(self._turn_hangover, held[1]) if held is not None and held[0] == self._last_voiced \
            else self._turn_hangover

    def _model_catching_up(self, index: int, speech: bool | None, vad_voiced: bool) -> bool:
        """webrtcvad hears a word start after a silence and the speech model has not said yes yet."""
        return speech is not None and vad_voiced and index - self._word_start < self._model_lag

    def _maybe_open(self, index: int) -> None:
        recent = list(self._history)[-self._window :]
        flags = [voiced for _, voiced in recent]
        if sum(flags) < self._start_frames:
            return
        onset = index - (len(recent) - 1 - flags.index(True))  # first voiced frame in the window
        keep = min(len(self._history), index - onset + 1 + self._preroll_frames)
        self._turn = [frame for frame, _ in list(self._history)[-keep:]]
        self._turn_first = index - keep + 1
        self._onset, self._last_voiced, self._in_speech = onset, index, True

    @property
    def pause(self) -> tuple[int, float] | None:
        """The open turn's current pause: (its last voiced frame, milliseconds of silence
        since), or None outside a turn. The frame names the pause: a new word starts another."""
        if not self._in_speech:
            return None
        return self._last_voiced, (self._frames_seen - self._last_voiced - 1) * self._frame_ms

    @property
    def held_open(self) -> bool:  # hold_open() lengthened this turn's hangover (a barge-in)
        return self._in_speech and self._turn_hangover > self._hangover_frames

    def audio_if_ended_now(self) -> bytes | None:
        """The utterance's audio if the turn ended at this frame (the last word and the
        usual tail); None while the tail is not all heard, or outside a turn. If no word
        follows, the utterance that ends later has exactly this audio."""
        if not self._in_speech or self._turn_first + len(self._turn) < self._ended_at():
            return None
        return self._audio_until(self._ended_at())

    def turn_audio(self) -> bytes:
        """The open turn's audio so far (pre-roll included)."""
        return b"".join(self._turn)

    def end_now(self, now: float | None = None) -> Utterance | None:
        """End the open turn here, as if its hangover had run out (the customer finished:
        robot/speech's end-of-turn policy said so)."""
        return self._finish(now, truncated=False, ended_by="policy") if self._in_speech else None

    def restart(self, now: float | None = None) -> Utterance | None:
        """End the open turn here (it was noise) and keep its last frames as the next
        turn's pre-roll, so words that begin just now keep their onset. The kept frames
        count as unvoiced: only new voiced audio opens the next turn."""
        kept = self._turn[-self._preroll_frames:] if self._preroll_frames else []
        utterance = self.end_now(now)
        self._history.extend((frame, False) for frame in kept)
        return utterance

    def hold_open(self, hangover_ms: int) -> None:
        """This turn ends only after ``hangover_ms`` of silence (at least the usual)."""
        self._turn_hangover = max(self._hangover_frames, ceil(hangover_ms / self._frame_ms))

    def hold_pause(self, hangover_ms: int) -> None:
        """The current pause ends the turn only after ``hangover_ms`` of silence (at least the
        turn's); a word after it starts a pause with the usual hangover."""
        if self._in_speech:
            self._pause_hold = (self._last_voiced, ceil(hangover_ms / self._frame_ms))

    def move_onset(self, t: float) -> None:
        """The open turn's speech really began at stream time ``t`` (later than where
        webrtcvad opened it): what came before, less the pre-roll, is not part of it."""
        onset = int(t * 1000 / self._frame_ms)
        if not self._in_speech or onset <= self._onset:
            return
        first = max(self._turn_first, onset - self._preroll_frames)
        del self._turn[: first - self._turn_first]
        self._turn_first, self._onset = first, onset
        self._last_voiced = max(self._last_voiced, onset)

    def _ended_at(self) -> int:
        """Where an utterance that ends now stops (exclusive frame index): the tail after the last word."""
        return self._last_voiced + 1 + self._tail_frames

    def _audio_until(self, end: int) -> bytes:
        return b"".join(self._turn[: end - self._turn_first])

    def _finish(self, now: float | None, truncated: bool, ended_by: str = "silence") -> Utterance | None:
        onset, last = self._onset, self._last_voiced
        turn_end = self._turn_first + len(self._turn)  # exclusive frame index
        # a cut turn keeps everything; an ended one keeps a short tail after the last word
        end = turn_end if truncated else min(self._ended_at(), turn_end)
        audio = self._audio_until(end)
        audio_from = self._turn_first * self._frame_ms / 1000
        self.reset()
        t_start = onset * self._frame_ms / 1000
        t_end = (end if truncated else last + 1) * self._frame_ms / 1000
        if not truncated and (t_end - t_start) * 1000 < self.settings.min_speech_ms:
            return None  # a click, a tap, a cough: not a turn
        ended_at = time.monotonic() if now is None else now
        waited = 0.0 if truncated else (self._frames_seen - last - 1) * self._frame_ms / 1000
        return Utterance(audio=audio, t_start=t_start, t_end=t_end, ended_at=ended_at, truncated=truncated,
                         hangover_s=round(waited, 3), ended_by=ended_by, audio_from=audio_from)
