"""How many commands the robot takes per second: a token bucket (``mqtt.commands_per_s``,
``mqtt.command_burst``). A flood of commands (a script gone wrong, an attacker who may
publish) must cost the robot a "busy" answer each, not its memory, its voice or its answers
to everyone else.

MQTT 3.1.1 does not tell a subscriber who published a message, so the bucket is per robot:
every publisher on its command topic shares it. Per-account limits belong to the broker
(its ACL decides who may publish at all; see docs/mqtt.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """``burst`` commands at once, then ``rate`` per second."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self._clock = rate, burst, clock
        self._tokens, self._at = float(burst), clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self) -> bool:
        """One command may run now (True), or the robot is busy (False)."""
        self._refill()
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False

    def wait_s(self) -> float:
        """Seconds until the next command would be taken."""
        self._refill()
        return max(0.0, (1 - self._tokens) / self.rate)
