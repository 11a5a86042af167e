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
library the robot works as before (``available()`` is False)."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import statistics
import weakref
from collections import deque

import numpy as np

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
_QUIET = 10.0 ** 2  # mean square of a frame below about -70 dBFS: nothing to judge


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

    def __init__(self, filter_ms: int = 200) -> None:
        if _LIB is None:
            raise RuntimeError("libspeexdsp is not installed (Debian: apt-get install libspeexdsp1)")
        self._taps = SAMPLE_RATE * filter_ms // 1000
        self._state = _LIB.speex_echo_state_init(FRAME, self._taps)
        rate = ctypes.c_int(SAMPLE_RATE)
        _LIB.speex_echo_ctl(self._state, _SET_SAMPLING_RATE, ctypes.byref(rate))
        weakref.finalize(self, _LIB.speex_echo_state_destroy, self._state)  # freed with this object
        self._out = ctypes.create_string_buffer(FRAME_BYTES)
        self._silent_for = self._taps  # far samples of silence fed since the robot last played
        self._kept: deque[float] = deque(maxlen=_KEPT_FRAMES)  # kept dB of frames while the robot plays

    def cancel(self, near: bytes, far: bytes | None) -> bytes | None:
        """The cleaned frame, or None when nothing has played for a filter's length."""
        if far is None:
            if self._silent_for >= self._taps:
                return None
            self._silent_for += FRAME
            far = bytes(FRAME_BYTES)
        else:
            if self._silent_for >= self._taps:
                self._kept.clear()  # a new reply: the filter earns its say again (the path may have moved)
            self._silent_for = 0
        _LIB.speex_echo_cancellation(self._state, near, far, self._out)
        out = self._out.raw
        if self._silent_for == 0 and (kept := kept_db(near, out)) is not None:
            self._kept.append(kept)
        return out

    @property
    def converged(self) -> bool:
        """The echo removed by ``-CONVERGED_KEPT_DB`` or more over the robot's last 2 s of this
        reply, and at least its first second (the median: a customer talking over it for under
        a second does not move it). Judged afresh at each reply: a filter learnt on one
        alignment of loudspeaker and microphone that then shifts (a 20 ms jump between the
        greeting, placed on the wall clock, and the replies after it) removes nothing and adds
        echo; heard on its past record, it cut the robot on its own voice."""
        return len(self._kept) >= _KEPT_KNOWN and statistics.median(self._kept) <= CONVERGED_KEPT_DB


def energy(pcm: bytes) -> float:
    """The sum of the squares of 16-bit samples."""
    x = np.frombuffer(pcm, dtype=np.int16).astype(np.float32)
    return float(np.dot(x, x))


def kept_db(before: bytes, after: bytes) -> float | None:
    """How much of ``before``'s energy ``after`` kept (dB); None when ``before`` is silent."""
    return kept_of(energy(before), energy(after), len(before) // 2)


def kept_of(energy_in: float, energy_out: float, samples: int) -> float | None:
    """``kept_db`` from the two frames' energies (``samples`` long)."""
    if energy_in < samples * _QUIET:
        return None
    return 10 * math.log10(max(energy_out, 1.0) / energy_in)
