"""The echo path, solved for at once from the robot's first words: the linear filter's quick start.

Speex's adaptive filter (speech/echo_linear.py) learns the echo path slowly from speech: in
the first reply after start-up (the greeting) it removed 4-7 dB of a -6 dB echo by 1.5 s and
20 dB only after about 5 s, so a quiet customer who spoke over the greeting was heard only
where the robot paused (issue 26: p50 960 ms, p95 2,370 ms at -40 dBFS, against about 200 /
300 ms in the answers after it). The same path can be solved for directly: the loudspeaker's
samples and the microphone's over 0.6 s of the reply, a least-squares fit of the filter's taps
(conjugate gradients, each step two FFTs; 50-100 ms in a worker thread). On the next 250 ms,
which the fit did not see, it left 25-60 dB less echo (espeak-ng's voice, a 50 ms delay, with
and without a 250 ms reverberant tail), and 12-25 dB on the PulseAudio virtual card, whose
loopback resamples (tests/test_live_audio.py's log).

``QuickStart`` gathers the frames, solves in a thread and takes the estimate only when it
removes ``ACCEPT_KEPT_DB`` or more of the echo on the 0.2 s after the fit (a customer talking
through them, a microphone that does not hear the loudspeaker, a loud room: it is dropped, and
the next 0.8 s try again, up to ``MAX_TRIES`` fits a session). ``FixedEcho`` then plays the
estimate against the far end, and Speex learns only what it missed, from zero, on the
microphone with that much echo already gone. The frames are held in memory for that second
only; the estimate holds no voice.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import numpy as np

from speech.types import SAMPLE_RATE

log = logging.getLogger(__name__)

LEARN_FRAMES = 60  # 10 ms frames of the robot's voice the fit is made on
CHECK_FRAMES = 20  # frames after them, unseen by the fit, that judge it (the fit runs meanwhile)
ACCEPT_KEPT_DB = -10.0  # the estimate must remove this much of the echo on the unseen frames (live: 12-25)
MAX_TRIES = 4  # fits a session: a loud room fails each one, and each costs 50-100 ms of a core
_ITERATIONS = 60
_RIDGE = 1e-3  # of the far end's power: taps the voice does not excite stay near zero
_SMOOTH_BINS = 8  # the preconditioner: the far end's spectrum, smoothed over this many bins


def estimate(far: np.ndarray, near: np.ndarray, taps: int) -> np.ndarray:
    """The ``taps``-long filter h that makes ``far`` * h closest to ``near`` (least squares, a
    small ridge). ``far`` may begin earlier than ``near`` (by up to ``taps``): what played just
    before the window still sounds in its first samples. Conjugate gradients on the normal
    equations, preconditioned by the far end's spectrum (speech's is steep: unpreconditioned,
    60 steps left 10-20 dB where these leave 25-60 dB on the next 250 ms)."""
    lead = len(far) - len(near)
    size = 1 << int(np.ceil(np.log2(len(far) + taps)))
    spectrum = np.fft.rfft(far, size)

    def forward(h: np.ndarray) -> np.ndarray:
        return np.fft.irfft(spectrum * np.fft.rfft(h, size), size)[lead: lead + len(near)]

    def backward(r: np.ndarray) -> np.ndarray:
        placed = np.zeros(size)
        placed[lead: lead + len(r)] = r
        return np.fft.irfft(np.conj(spectrum) * np.fft.rfft(placed), size)[:taps]

    ridge = _RIDGE * float(np.dot(far, far)) / max(len(far), 1)
    power = np.convolve(np.abs(spectrum) ** 2, np.ones(_SMOOTH_BINS) / _SMOOTH_BINS, mode="same")
    power += ridge + 1e-9 * float(power.max()) + 1e-12

    def precondition(r: np.ndarray) -> np.ndarray:
        return np.fft.irfft(np.fft.rfft(r, size) / power, size)[:taps]

    h = np.zeros(taps)
    residual = backward(near)
    z = precondition(residual)
    direction, rz = z.copy(), float(residual @ z)
    for _ in range(_ITERATIONS):
        step_to = backward(forward(direction)) + ridge * direction
        curvature = float(direction @ step_to)
        if rz <= 0 or curvature <= 0:
            break
        step = rz / curvature
        h += step * direction
        residual -= step * step_to
        z = precondition(residual)
        rz, previous = float(residual @ z), rz
        direction = z + rz / previous * direction
    return h


def convolve(far: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``far`` through the filter ``h``, as long as ``far`` (the echo it predicts)."""
    size = len(far) + len(h)
    return np.fft.irfft(np.fft.rfft(far, size) * np.fft.rfft(h, size), size)[: len(far)]


_QUIET = 10.0 ** 2  # mean square of a frame below about -70 dBFS: nothing to judge


def kept_of(energy_in: float, energy_out: float, samples: int) -> float | None:
    """How much of the energy a filter's input had its output kept (dB), ``samples`` long;
    None when the input was near silent."""
    if energy_in < samples * _QUIET:
        return None
    return 10 * float(np.log10(max(energy_out, 1.0) / energy_in))


class FixedEcho:
    """The echo an estimated path predicts, frame by frame (overlap-save: two FFTs a frame)."""

    def __init__(self, h: np.ndarray, frame: int, history: np.ndarray | None = None) -> None:
        self._frame = frame
        self._taps = len(h)
        self._size = 1 << int(np.ceil(np.log2(self._taps + frame)))
        self._h = np.fft.rfft(h, self._size)
        self._far = np.zeros(self._taps - 1 + frame)
        if history is not None:  # what played before this frame, newest last (``predict``
            tail = history[-len(self._far):]  # moves it on by a frame before it adds the frame)
            self._far[len(self._far) - len(tail):] = tail

    def predict(self, far: np.ndarray) -> np.ndarray:
        """The echo in the microphone frame that plays with ``far`` (one frame)."""
        self._far[: self._taps - 1] = self._far[self._frame:]
        self._far[self._taps - 1:] = far
        out = np.fft.irfft(np.fft.rfft(self._far, self._size) * self._h, self._size)
        return out[self._taps - 1: self._taps - 1 + self._frame]

    def reset(self) -> None:
        """The robot fell silent for longer than the path: nothing of it still sounds."""
        self._far[:] = 0.0


class QuickStart:
    """Gathers a stretch of a reply's frames (``offer``), solves for the echo path in a worker
    thread once ``LEARN_FRAMES`` are in, and after ``CHECK_FRAMES`` more returns the estimate
    with the far end's history, or None and gathers the next stretch (at most ``MAX_TRIES``
    fits a session). The fit is made on a fixed count of frames and picked up a fixed count
    later, so a bench fed faster than real time takes the same decisions as a live microphone;
    live the fit has had 200 ms for its 50-100 and the join does not wait."""

    def __init__(self, taps: int, frame: int) -> None:
        self._taps, self._frame = taps, frame
        self._near: list[np.ndarray] = []
        self._far: list[np.ndarray] = []
        self._lead = np.zeros(taps)  # what played before the stretch (silence at a reply's start)
        self._thread: threading.Thread | None = None
        self._h: np.ndarray | None = None
        self.tries = 0
        self._accepted = False

    @property
    def done(self) -> bool:
        """No more fits this session: one was taken, or ``MAX_TRIES`` were not."""
        return self._accepted or self.tries >= MAX_TRIES

    def restart(self) -> None:
        """A new reply (the robot was silent for longer than the path): a stretch starts here. A
        fit whose check the last reply ended in (under 0.2 s after it) is dropped: the frames
        after it are not the ones it was made on."""
        if self._thread is not None:
            self._thread.join()  # begun 200 ms of frames ago at least: done
            self._thread, self._h = None, None
        self._near.clear()
        self._far.clear()
        self._lead = np.zeros(self._taps)

    def offer(self, near: np.ndarray, far: np.ndarray) -> Fit | None:
        """One frame; the fit judged at it (taken or not), or None."""
        if self.done:
            return None
        self._near.append(near)
        self._far.append(far)
        if self._thread is None and len(self._far) == LEARN_FRAMES:
            far_all = np.concatenate([self._lead, *self._far])
            self._thread = threading.Thread(target=self._solve, args=(far_all, np.concatenate(self._near)),
                                            daemon=True, name="echo-path")
            self._thread.start()
        if self._thread is None or len(self._far) < LEARN_FRAMES + CHECK_FRAMES:
            return None
        self._thread.join()  # live it has had 200 ms
        far = np.concatenate([self._lead, *self._far])
        fit = self._judge(far, np.concatenate(self._near))
        self._thread, self._h = None, None
        self._lead = far[-self._taps:]
        self._near.clear()
        self._far.clear()
        self.tries += 1
        self._accepted = fit.taken
        return fit

    def _solve(self, far: np.ndarray, near: np.ndarray) -> None:
        try:
            self._h = estimate(far, near, self._taps)
        except Exception as error:  # noqa: BLE001  (a worker thread: Speex alone goes on)
            log.warning("the echo path fit failed (%s); the filter learns from speech", error)

    def _judge(self, far: np.ndarray, near: np.ndarray) -> Fit:
        """The fit and how much of the echo it left on the frames it did not see."""
        if self._h is None:  # the fit failed
            return Fit(np.zeros(self._taps), far, None)
        unseen = near[LEARN_FRAMES * self._frame:]
        residual = unseen - convolve(far, self._h)[self._taps:][LEARN_FRAMES * self._frame:]
        return Fit(self._h, far, kept_of(float(unseen @ unseen), float(residual @ residual), len(unseen)))


@dataclass(frozen=True)
class Fit:
    """An estimate of the echo path and its check: the filter, what the loudspeaker played up to
    now (the filter's history), and how much of the echo it kept on the frames it had not seen
    (dB; None where they were near silent). Taken where it kept ``ACCEPT_KEPT_DB`` or less."""

    h: np.ndarray
    far: np.ndarray
    kept_db: float | None

    @property
    def taken(self) -> bool:
        return self.kept_db is not None and self.kept_db <= ACCEPT_KEPT_DB

    @property
    def delay_ms(self) -> float:
        """Where its strongest tap lies: the loudspeaker-to-microphone delay."""
        return 1000 * int(np.argmax(np.abs(self.h))) / SAMPLE_RATE
