"""A summary's new role prompt waits while a reply's prompt is being made.

A summary folds in the background and rewrites the role prompt when it is done. From the
moment a customer starts speaking, the robot works on the prompt of its reply: the LLM reads
the role prompt and the history ahead, and at the customer's pause the reply's own request
starts (robot/reply/preemptive.py). A role prompt swapped in then made that request out of
date: the turn sent another, the server read the whole new prompt, and the customer waited
0.3-0.4 s more (``bench/live_latency.py``: a turn at 1.0 s where the same line took 0.6 s).

``SwapHold`` follows the robot's state (``StateEvent``) and allows a swap while the robot is
idle or speaking, never while it listens to a customer or thinks of a reply. A summary
waits for it (``memory/dual_store/summaries.py``, at most ``SWAP_WAIT_MAX_S``); the prompt
warmer reads the new prompt once the robot is idle again.
"""

from __future__ import annotations

from robot.core.events import Event, RobotState, StateEvent

SWAP_STATES = frozenset({RobotState.IDLE, RobotState.SPEAKING})


class SwapHold:
    """An event publisher (``robot.core.events.EventBus``); ``allows_swap`` is the memory's ``swap_when``."""

    def __init__(self) -> None:
        self.state = RobotState.IDLE

    def publish(self, event: Event) -> None:
        if isinstance(event, StateEvent):
            self.state = event.state

    def allows_swap(self) -> bool:
        return self.state in SWAP_STATES
