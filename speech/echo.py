"""The robot's own voice, taken out of the microphone: WebRTC's acoustic echo canceller.

The robot knows exactly what it plays. Each block the speaker writes is given to the
canceller as the far end; each microphone frame goes through it before the VAD, so the
robot's voice coming back from its loudspeaker is removed and the customer's stays. The
binding is LiveKit's (`livekit` wheel, Apache-2.0) of the WebRTC audio-processing module.
Measured on espeak-ng speech played back at -6 and -20 dB with 20-80 ms delay: 29-58 dB of
echo removed, the customer's speech over it kept within about 4 dB, 0.6 % of a core.
A kiosk with a hardware echo-cancelling microphone array sets ``barge_in.echo_cancel: false``.

Beside it runs a linear echo filter (speech/echo_linear.py), which has no suppressor: once it
has learnt the echo, its frame (``linear``) lets a quiet customer be heard over the robot.

The far end and the microphone share one clock from the microphone's first frame. What the
robot plays before then (the greeting, said before ``robot run`` opens the microphone) is
placed on the wall clock, as the sound card played it, and at the first microphone frame
whatever had finished playing is dropped. Queued on the microphone's frame count instead,
the greeting was applied to the customer's first seconds, and the first words after
start-up were lost (issue 26, item 6). From then on a sound card kept open tells every block
it plays, the silence between replies too, so each reply follows the last to the sample
(speech/audio/device_sink.py); placed afresh where the listen loop was, a reply's reference
moved 4-33 ms off the echo and the robot cut its own first reply (stop 47).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Callable, Iterator

from speech import echo_linear
from speech.audio.resample import resample_pcm
from speech.types import SAMPLE_RATE

_FRAME = SAMPLE_RATE // 100  # the module works on 10 ms frames
_FRAME_BYTES = _FRAME * 2
_SILENCE = bytes(_FRAME_BYTES)


class EchoCanceller:
    """``far(pcm, rate)`` from the speaker's side (and, from a sound card kept open,
    ``far_silence(samples, rate)`` for the silence it plays between replies, ``far_restart()``
    where it ran dry unannounced); ``near(frame)`` for each microphone frame (16 kHz mono
    int16, a multiple of 10 ms) returns it cleaned; ``skip(frame)`` for a frame nobody
    listens to (the clock must still move).

    Both sides run on one clock, the microphone's: a far frame plays at the first
    microphone frame after it was written, or right after the far frame before it when the
    speaker writes ahead, as a sound card plays its queue. (On the wall clock instead, a
    block written 10 ms late left a gap on the far side but none in the air, and the
    reference slid behind the echo: in the room test the echo removed fell from 32 to
    10 dB within 1.5 s, and the robot's own voice cut it.) Before the first microphone
    frame there is no such clock: far frames are kept with when they play on the wall
    clock, and ``clock`` (when the first microphone frame was captured, time.monotonic();
    by default when it is heard, less its length) places them on the microphone's."""

    def __init__(self, delay_ms: int = 50, linear_ms: int = 200, quick_start: bool = True) -> None:
        from livekit import rtc  # heavy native library: only when echo cancelling is on

        self._rtc = rtc
        self._apm = rtc.AudioProcessingModule(echo_cancellation=True, high_pass_filter=True)
        self._apm.set_stream_delay_ms(delay_ms)
        # (plays at near frame, frame; None: silence played), 10 s
        self._far: deque[tuple[int, bytes | None]] = deque(maxlen=1000)
        self._heard = 0  # microphone frames (10 ms) seen: the clock
        self._next_far = 0  # the frame where a far frame written now would follow the queue
        self._far_rest = b""  # the part-frame written last, carried on to the next block
        self._rest_sound = False  # whether that part-frame holds the robot's voice
        # 16 kHz samples of silence owed: fractions from another rate, and what converting the
        # voice block by block rounded away
        self._silence_due = 0.0
        self._restart = False  # the loudspeaker ran dry unannounced: place the next block afresh
        self._lock = threading.Lock()  # far() may come from a sound card's thread
        self._started = False  # a microphone frame was heard or skipped: its clock runs
        self._early: deque[tuple[float, bytes | None]] = deque(maxlen=1000)  # before: (plays at, monotonic; frame)
        self._early_end = 0.0  # when the loudspeaker's queue written so far runs dry
        # When the microphone frame heard first was captured (a sound card's capture clock):
        # set by whoever knows the source; None (or None returned): when it is heard.
        self.clock: Callable[[], float | None] | None = None
        # How much of the last microphone frame's energy survived cancelling (dB; None when
        # nothing played): the customer's voice survives it, the robot's echo does not. And
        # how loud what survived is (dBFS; None when nothing played): speech/double_talk.py.
        self.kept_db: float | None = None
        self.out_dbfs: float | None = None
        # The same from a linear filter alone (speech/echo_linear.py), which keeps a quiet
        # customer whole: None unless the robot plays and that filter has learnt the echo.
        self.linear: bytes | None = None
        self.linear_kept_db: float | None = None
        self.linear_dbfs: float | None = None
        self._linear = (echo_linear.LinearEcho(linear_ms, quick_start) if linear_ms and echo_linear.available()
                        else None)

    def far(self, pcm: bytes, sample_rate: int) -> None:
        """What the loudspeaker is about to play (called as each block is written)."""
        data = resample_pcm(pcm, sample_rate, SAMPLE_RATE)
        # a block converted on its own is rounded to whole samples: the next silence makes it up
        self._silence_due += len(pcm) / 2 * SAMPLE_RATE / sample_rate - len(data) / 2
        self._place(data, sound=True)

    def far_silence(self, samples: int, sample_rate: int) -> None:
        """The loudspeaker is about to play ``samples`` (at ``sample_rate``) of silence: none of
        the robot's voice, but its clock moves on. A sound card that plays silence between
        replies says so (speech/audio/device_sink.py), and each reply is then placed where it
        follows that silence, to the sample: at the same echo delay as the reply before it."""
        self._silence_due += samples * SAMPLE_RATE / sample_rate
        whole = max(0, int(self._silence_due))
        self._silence_due -= whole
        if whole:
            self._place(bytes(2 * whole), sound=False)

    def far_restart(self) -> None:
        """The loudspeaker ran dry unannounced (it played silence nobody was told of): the next
        block is placed afresh, where the microphone is, as after a gap."""
        with self._lock:
            self._restart = True

    def _place(self, data: bytes, sound: bool) -> None:
        """Queue 16 kHz far samples; frames with none of the robot's voice are queued as None."""
        with self._lock:
            if not self._started:
                self._far_early(data, sound, time.monotonic())
                return
            if self._heard <= self._next_far and not self._restart:
                data, first = self._carry(data, sound)  # the loudspeaker plays on from where it was
            else:
                # it ran dry (a gap): the part-frame left over played before the gap, and
                # carried on it would shift everything after it against the echo
                first, self._restart = sound, False
            at = max(self._heard, self._next_far)
            for frame, has_sound in self._frames(data, sound, first):
                self._far.append((at, frame if has_sound else None))
                at += 1
            self._next_far = at

    def _carry(self, data: bytes, sound: bool) -> tuple[bytes, bool]:
        """``data`` after the part-frame left from the block before, and whether their first
        frame holds the robot's voice."""
        return self._far_rest + data, sound or (bool(self._far_rest) and self._rest_sound)

    def _frames(self, data: bytes, sound: bool, first: bool) -> Iterator[tuple[bytes, bool]]:
        """``data`` cut into whole frames, each with whether it holds the robot's voice (the
        first: ``first``); the part-frame left is kept for the next block."""
        whole = len(data) - len(data) % _FRAME_BYTES
        for i in range(0, whole, _FRAME_BYTES):
            yield data[i: i + _FRAME_BYTES], first if i == 0 else sound
        self._far_rest, self._rest_sound = data[whole:], first if whole == 0 else sound

    def _far_early(self, data: bytes, sound: bool, now: float) -> None:
        """Before the microphone opened: each frame with when it plays, on the wall clock."""
        if now <= self._early_end:
            data, first = self._carry(data, sound)  # the loudspeaker plays on from where it was
        else:
            self._early_end, first = now, sound  # it ran dry: this block starts playing now
        for frame, has_sound in self._frames(data, sound, first):
            self._early.append((self._early_end, frame if has_sound else None))
            self._early_end += _FRAME / SAMPLE_RATE

    def _start(self, frame: bytes) -> None:
        """The first microphone frame: the far frames written before it go on its clock,
        those that had played before it was captured are dropped (they were never heard)."""
        first = self.clock() if self.clock is not None else None
        if first is None:
            first = time.monotonic() - len(frame) / 2 / SAMPLE_RATE
        with self._lock:
            self._started = True
            for plays, far in self._early:
                at = math.floor((plays - first) * SAMPLE_RATE / _FRAME + 0.5)
                if at >= 0 and at >= self._next_far:
                    self._far.append((at, far))
                    self._next_far = at + 1
            if not self._far:
                self._far_rest = b""  # all of it played before: nothing to carry on
            self._early.clear()

    def near(self, frame: bytes) -> bytes:
        if not self._started:
            self._start(frame)
        out, linear = bytearray(), bytearray()
        playing = False
        for i in range(0, len(frame) - len(frame) % _FRAME_BYTES, _FRAME_BYTES):
            near = frame[i: i + _FRAME_BYTES]
            if (far := self._due()) is not None:
                playing = True
            # silence is given as silence: left without loudspeaker frames (the robot cut in
            # mid-word, its queue run dry), the module went on suppressing as if the last ones
            # still played, and a quiet customer lost 5-15 dB for seconds (12 us a frame)
            self._apm.process_reverse_stream(self._rtc.AudioFrame(bytearray(far or _SILENCE), SAMPLE_RATE, 1, _FRAME))
            if self._linear is not None and (lin := self._linear.cancel(near, far)) is not None:
                linear += lin
            chunk = self._rtc.AudioFrame(bytearray(near), SAMPLE_RATE, 1, _FRAME)
            self._apm.process_stream(chunk)  # in place
            out += bytes(chunk.data)
        cleaned = bytes(out)
        energy_in = echo_linear.energy(frame) if playing else 0.0  # once, for both filters' figures
        self.kept_db, self.out_dbfs = _kept_db(energy_in, cleaned) if playing else (None, None)
        self._hear_linear(energy_in, bytes(linear) if playing and len(linear) == len(out) else None)
        return cleaned

    def _hear_linear(self, energy_in: float, linear: bytes | None) -> None:
        """The linear filter's frame is heard only once it has learnt the echo path."""
        if linear is None or self._linear is None or not self._linear.converged:
            self.linear = self.linear_kept_db = self.linear_dbfs = None
            return
        self.linear = linear
        self.linear_kept_db, self.linear_dbfs = _kept_db(energy_in, linear)

    def skip(self, frame: bytes) -> None:
        """A microphone frame went unheard (the robot was deaf): what played meanwhile is gone."""
        if not self._started:
            self._start(frame)
        for _ in range(len(frame) // _FRAME_BYTES):
            self._due()

    def _due(self) -> bytes | None:
        """The far frame playing at this microphone frame, if any; the clock moves on."""
        with self._lock:
            while self._far and self._far[0][0] < self._heard:
                self._far.popleft()  # its microphone frame was skipped
            due = self._far.popleft()[1] if self._far and self._far[0][0] == self._heard else None
            self._heard += 1
        return due


def _kept_db(energy_in: float, after: bytes) -> tuple[float, float]:
    """How much of the microphone frame's energy (``energy_in``) ``after`` kept (dB; -99 when
    the frame was silent), and ``after``'s level (dBFS)."""
    samples, energy_out = len(after) // 2, echo_linear.energy(after)
    out_dbfs = 10 * math.log10(energy_out / samples / 32768.0 ** 2) if energy_out > 0 else -100.0
    kept = echo_linear.kept_of(energy_in, energy_out, samples)
    return (-99.0 if kept is None else kept), out_dbfs
