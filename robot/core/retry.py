"""One retry policy for everything in robot/ that tries again: the LLM client (a few tries,
then an error) and the MQTT connections (forever, with a capped backoff). Built on tenacity.

``RetryPolicy`` is plain data (it comes from settings and is printed with ``describe()``);
it makes the tenacity objects a caller needs:

- ``retrying(retry_on=...)``: a ``tenacity.AsyncRetrying`` for ``async for attempt in ...``;
  after the last attempt it raises ``tenacity.RetryError`` (its ``last_attempt`` holds the
  final exception);
- ``wait()`` / ``stop()``: the tenacity wait and stop strategies themselves;
- ``backoff()``: the delays for a loop that keeps going and starts over after a success
  (a reconnect loop, where a session that ends is not a failed "attempt").

The delay before retry n (n = 1 for the first retry) is
``min(max_delay_s, first_delay_s * multiplier ** (n - 1))``; jitter adds up to ``jitter``
times that delay, never past ``max_delay_s``, so every delay lies in
[first_delay_s, max_delay_s] and a fleet of robots does not retry in lockstep.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tenacity
from tenacity.stop import stop_base
from tenacity.wait import wait_base

# 2.0 ** 1100 overflows a float; no sane policy gets near it before reaching its cap
_MAX_EXPONENT = 1000


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try and how long to wait between tries."""

    attempts: int | None  # tries in all, the first one included; None = until it works
    first_delay_s: float  # wait before the first retry
    max_delay_s: float = math.inf  # no wait is longer than this
    multiplier: float = 2.0  # each wait is this many times the one before (1 = fixed delay)
    jitter: float = 0.0  # 0..1: each wait grows by up to this fraction at random (capped)

    def __post_init__(self) -> None:
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"attempts must be at least 1 (or None for no limit), not {self.attempts}")
        if not 0 <= self.first_delay_s <= self.max_delay_s:
            raise ValueError(f"need 0 <= first_delay_s <= max_delay_s, got {self.first_delay_s} and {self.max_delay_s}")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be at least 1, not {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, not {self.jitter}")

    @property
    def retries(self) -> int | None:
        """Tries after the first one (None: no limit)."""
        return None if self.attempts is None else self.attempts - 1

    def delay_s(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 = the first retry), without jitter."""
        if retry < 1:
            raise ValueError("retries are numbered from 1")
        exponent = min(retry - 1, _MAX_EXPONENT)
        try:
            delay = self.first_delay_s * self.multiplier**exponent
        except OverflowError:
            delay = math.inf
        return min(self.max_delay_s, delay)

    def jittered_delay_s(self, retry: int, rng: Callable[[float, float], float] = random.uniform) -> float:
        """The wait before retry number ``retry``, jitter included."""
        delay = self.delay_s(retry)
        if self.jitter and delay:
            delay = min(self.max_delay_s, delay + rng(0.0, self.jitter * delay))
        return delay

    # --- tenacity ------------------------------------------------------------------------

    def wait(self) -> wait_base:
        return _PolicyWait(self)

    def stop(self) -> stop_base:
        return tenacity.stop_never if self.attempts is None else tenacity.stop_after_attempt(self.attempts)

    def retrying(
        self,
        *,
        retry_on: tuple[type[BaseException], ...],
        before_sleep: Callable[[tenacity.RetryCallState], Any] | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> tenacity.AsyncRetrying:
        """A fresh ``AsyncRetrying`` (one per operation: it holds that operation's state).
        Only the exception types in ``retry_on`` are retried; any other is raised at once."""
        options: dict[str, Any] = {}
        if sleep is not None:
            options["sleep"] = sleep
        return tenacity.AsyncRetrying(
            stop=self.stop(),
            wait=self.wait(),
            retry=tenacity.retry_if_exception_type(retry_on),
            before_sleep=before_sleep,
            reraise=False,
            **options,
        )

    def backoff(self) -> "Backoff":
        return Backoff(self)

    def describe(self) -> str:
        """One line for the log, e.g. ``3 attempts, waits 0.5s x2 up to 30s, +20% jitter``."""
        tries = "retry forever" if self.attempts is None else f"{self.attempts} attempt{'s' * (self.attempts != 1)}"
        if self.attempts == 1:
            return tries
        if self.multiplier == 1 or self.first_delay_s == self.max_delay_s:
            waits = f"waits {_seconds(self.first_delay_s)}"
        else:
            cap = "" if math.isinf(self.max_delay_s) else f" up to {_seconds(self.max_delay_s)}"
            waits = f"waits {_seconds(self.first_delay_s)} x{self.multiplier:g}{cap}"
        jitter = f", +{self.jitter:.0%} jitter" if self.jitter else ""
        return f"{tries}, {waits}{jitter}"


class Backoff:
    """The policy's delays one after the other, for a loop that retries forever:
    ``next()`` is the wait before the next try, ``reset()`` after a success."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._wait = policy.wait()
        self.retry = 0  # retries since the last reset

    def reset(self) -> None:
        self.retry = 0

    def next(self) -> float:
        self.retry = min(self.retry + 1, _MAX_EXPONENT)
        state = tenacity.RetryCallState(None, None, (), {})  # type: ignore[arg-type]
        state.attempt_number = self.retry  # tenacity numbers the attempt that just failed
        return self._wait(state)


class _PolicyWait(wait_base):
    """Exponential wait with capped upward jitter, as RetryPolicy defines it."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        # after attempt n failed comes retry n
        return self.policy.jittered_delay_s(retry_state.attempt_number)


def describe_exception(exc: BaseException | None) -> str:
    """``TypeName: text`` for a log line (the type alone when the text is empty), with the
    underlying cause when a library wraps one (``APIConnectionError: Connection error.
    (ConnectError: All connection attempts failed)``)."""
    if exc is None:
        return "unknown error"
    text = str(exc).strip()
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    cause = exc.__cause__
    if cause is not None and str(cause).strip() and str(cause).strip() not in text:
        line += f" ({type(cause).__name__}: {str(cause).strip()})"
    return line


def _seconds(value: float) -> str:
    return f"{value:g}s"
