"""The robot's echo taken out by a linear filter alone: Speex's adaptive echo canceller.

WebRTC's canceller (speech/echo.py) ends in a suppressor that removes what its linear stage
left, and with it about 18 dB of a quiet customer talking over the robot: a voice at
-40 dBFS under the robot's echo at -28 dBFS comes out at -58 dBFS, as quiet as the residue,
and is told apart only where the robot pauses between words (issue 26, item 5). A linear
filter keeps the customer's voice whole; once it has learnt the echo path (a few seconds of
the robot's voice: 40 dB of a -6 dB echo removed after 5 s) the echo is left at about
-65 dBFS and the customer stands 20 dB over it. So this filter runs beside WebRTC's and is
only *listened to* while the robot plays: the double-talk test reads it, and where that test
finds a quiet voice over the echo the front end hears this filter's frame (speech/listen.py);
everywhere else it hears WebRTC's.

The filter is Speex's MDF (libspeexdsp, Xiph, BSD; Debian's ``libspeexdsp1``) through ctypes:
no build step, 10 ms frames, the far end given with its microphone frame. Without the
library the robot works as before (``available()`` is False).

Speex learns from speech slowly (20 dB after about 5 s), so in the first reply after start-up
the echo path is also solved for directly from its first 0.6 s (speech/echo_path.py); from
then on that estimate takes its echo out first, and Speex learns what it missed."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import statistics
import weakref
from collections import deque

import numpy as np

from speech import echo_path
from speech.echo_path import kept_of
from speech.types import SAMPLE_RATE

FRAME = SAMPLE_RATE // 100  # 10 ms, as the WebRTC module's frames
FRAME_BYTES = FRAME * 2
_SET_SAMPLING_RATE = 24  # SPEEX_ECHO_SET_SAMPLING_RATE
# The filter has learnt the echo path when the frames it heard over the last 2 s of the
# robot's voice kept, at the median, at most this much of their energy (the echo removed
# 20 dB: a voice 12 dB under the echo then stands 8 dB or more over what is left of it).
CONVERGED_KEPT_DB = -20.0
_KEPT_FRAMES = 200  # 2 s of 10 ms frames
_KEPT_KNOWN = 100
# After the quick start 300 ms of the reply judge it (its first 0.8 s went on the fit and its
# check; until then that check, on frames the fit had not seen, stands in for the judge)
_KEPT_QUICK = 30


def _library() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("speexdsp") or "libspeexdsp.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.speex_echo_state_init.restype = ctypes.c_void_p
    lib.speex_echo_state_init.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.speex_echo_cancellation.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
    lib.speex_echo_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.speex_echo_state_destroy.argtypes = [ctypes.c_void_p]
    return lib


_LIB = _library()
log = logging.getLogger(__name__)


def available() -> bool:
    return _LIB is not None


class LinearEcho:
    """``cancel(near, far)`` for each 10 ms microphone frame and the far frame playing with it
    (None: nothing plays) returns the microphone frame with the echo's linear part removed.
    ``converged`` says whether the filter has learnt the echo path well enough to be heard.

    The filter spans ``filter_ms`` of echo path (the sound card's delay and the room's
    reverberation); a longer one learns more slowly (1024 taps: 10 dB in 1 s; 4800 taps:
    7 dB). After the robot stops it is fed silence for one filter length, so that its
    history is silent when it is next fed; beyond that frames cost nothing."""

    def __init__(self, filter_ms: int = 200, quick_start: bool = True) -> None:
        if _LIB is None:
            raise RuntimeError("libspeexdsp is not installed (Debian: apt-get install libspeexdsp1)")
        self._taps = SAMPLE_RATE * filter_ms // 1000
        self._speex = _Speex(self._taps)
        self._silent_for = self._taps  # far samples of silence fed since the robot last played
        self._kept: deque[float] = deque(maxlen=_KEPT_FRAMES)  # kept dB of frames while the robot plays
        self._checked_db: float | None = None  # this reply's quick start check (then 300 ms judge it)
        # The echo path solved for at once (speech/echo_path.py): until one is accepted, each
        # reply's start is offered to the quick start; then its echo is taken out before Speex's.
        self._quick = echo_path.QuickStart(self._taps, FRAME) if quick_start else None
        self._fixed: echo_path.FixedEcho | None = None

    def cancel(self, near: bytes, far: bytes | None) -> bytes | None:
        """The cleaned frame, or None when nothing has played for a filter's length."""
        if far is None:
            if self._silent_for >= self._taps:
                return None
            self._silent_for += FRAME
            far = bytes(FRAME_BYTES)
        else:
            if self._silent_for >= self._taps:
                self._new_reply()
            self._silent_for = 0
        out = self._speex.cancel(self._without_fixed(near, far), far)
        if self._silent_for == 0 and (kept := kept_db(near, out)) is not None:
            self._kept.append(kept)
        if self._quick is not None:
            self._offer(near, far)
        return out

    def _new_reply(self) -> None:
        self._kept.clear()  # a new reply: the filter earns its say again (the path may have moved)
        self._checked_db = None
        if self._fixed is not None:
            self._fixed.reset()
        if self._quick is not None:
            self._quick.restart()

    def _without_fixed(self, near: bytes, far: bytes) -> bytes:
        """The microphone frame less the echo the estimated path predicts (none before one)."""
        if self._fixed is None:
            return near
        echo = self._fixed.predict(np.frombuffer(far, dtype=np.int16).astype(np.float64))
        rest = np.frombuffer(near, dtype=np.int16) - echo
        return np.clip(np.rint(rest), -32768, 32767).astype(np.int16).tobytes()

    def _offer(self, near: bytes, far: bytes) -> None:
        quick = self._quick
        assert quick is not None
        fit = quick.offer(np.frombuffer(near, dtype=np.int16).astype(np.float64),
                          np.frombuffer(far, dtype=np.int16).astype(np.float64))
        if quick.done:
            self._quick = None  # once a session: Speex follows the path from here
        if fit is None:
            return
        kept = "none" if fit.kept_db is None else f"{-fit.kept_db:.0f} dB"
        if not fit.taken:
            log.info("the echo path fit was not taken (%s of the echo removed on frames it had not seen, strongest "
                     "tap at %.0f ms; fit %d of %d); the filter learns from speech", kept, fit.delay_ms,
                     quick.tries, echo_path.MAX_TRIES)
            return
        log.info("echo path solved from the robot's first words: %s of its echo removed on frames the fit had "
                 "not seen, strongest tap at %.0f ms", kept, fit.delay_ms)
        self._fixed = echo_path.FixedEcho(fit.h, FRAME, fit.far)
        self._speex = _Speex(self._taps)  # it learns only what the estimate missed, from zero
        self._kept.clear()
        self._checked_db = fit.kept_db

    @property
    def quick_started(self) -> bool:
        """The echo path was solved for at once and takes its echo out first."""
        return self._fixed is not None

    @property
    def converged(self) -> bool:
        """The echo removed by ``-CONVERGED_KEPT_DB`` or more over the robot's last 2 s of this
        reply, and at least its first second (the median: a customer talking over it for under
        a second does not move it). Judged afresh at each reply: a filter learnt on one
        alignment of loudspeaker and microphone that then shifts (a 20 ms jump between the
        greeting, placed on the wall clock, and the replies after it) removes nothing and adds
        echo; heard on its past record, it cut the robot on its own voice."""
        if len(self._kept) < (_KEPT_KNOWN if self._checked_db is None else _KEPT_QUICK):
            # a fresh estimate's check, on frames its fit had not seen, stands in until they are in
            return self._checked_db is not None and self._checked_db <= CONVERGED_KEPT_DB
        return statistics.median(self._kept) <= CONVERGED_KEPT_DB


class _Speex:
    """One Speex echo state: ``cancel(near, far)`` a 10 ms frame (freed with this object)."""

    def __init__(self, taps: int) -> None:
        assert _LIB is not None
        self._state = _LIB.speex_echo_state_init(FRAME, taps)
        rate = ctypes.c_int(SAMPLE_RATE)
        _LIB.speex_echo_ctl(self._state, _SET_SAMPLING_RATE, ctypes.byref(rate))
        weakref.finalize(self, _LIB.speex_echo_state_destroy, self._state)
        self._out = ctypes.create_string_buffer(FRAME_BYTES)

    def cancel(self, near: bytes, far: bytes) -> bytes:
        assert _LIB is not None
        _LIB.speex_echo_cancellation(self._state, near, far, self._out)
        return self._out.raw


def energy(pcm: bytes) -> float:
    """The sum of the squares of 16-bit samples."""
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float32)
    return float(np.dot(x, x))


def kept_db(before: bytes, after: bytes) -> float | None:
    """How much of ``before``'s energy ``after`` kept (dB); None when ``before`` is silent."""
    return kept_of(energy(before), energy(after), len(before) // 2)

