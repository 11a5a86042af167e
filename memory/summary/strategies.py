"""Which turns the next summary folds in, and with which prompt: rsum and swin.

rsum folds the whole current-prompt history at once. swin folds windows of ``window``
exchanges moved by ``stride``: each window repeats the last ``window - stride`` exchanges
already summarized as context, and brings ``stride`` new ones (the first window brings
``window``); a flush (the timer, session end) folds the partial window that is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from memory.core.base import Message
from memory.core.records import StoredRemark
from memory.summary.summarizer import Summarizer


@dataclass(frozen=True)
class FoldPlan:
    turns: list[StoredRemark]  # the turns the new summary absorbs
    context: list[StoredRemark]  # already summarized, shown for continuity only (swin)


class Strategy(Protocol):
    name: str
    recent_turns: int  # how many absorbed turns to keep at hand as context

    def due(self, history: list[StoredRemark], recent: list[StoredRemark]) -> bool:
        """Whether the strategy itself wants a summary now (besides timer, turns, tokens)."""
        ...

    def plan(self, history: list[StoredRemark], recent: list[StoredRemark], flush: bool) -> FoldPlan | None: ...

    def messages(self, summarizer: Summarizer, previous_summary: str, plan: FoldPlan) -> list[Message]: ...


def exchanges(turns: list[StoredRemark]) -> list[list[StoredRemark]]:
    """Turns grouped into exchanges: a user utterance and what follows until the next one."""
    groups: list[list[StoredRemark]] = []
    for turn in turns:
        if not groups or (turn.role == "user" and groups[-1][-1].role != "user"):
            groups.append([turn])
        else:
            groups[-1].append(turn)
    return groups


class RsumStrategy:
    name = "rsum"
    recent_turns = 0

    def due(self, history: list[StoredRemark], recent: list[StoredRemark]) -> bool:
        return False  # rsum runs on the timer and the turn/token triggers only

    def plan(self, history: list[StoredRemark], recent: list[StoredRemark], flush: bool) -> FoldPlan | None:
        return FoldPlan(list(history), []) if history else None

    def messages(self, summarizer: Summarizer, previous_summary: str, plan: FoldPlan) -> list[Message]:
        return summarizer.rsum_messages(previous_summary, plan.turns)


class SwinStrategy:
    name = "swin"

    def __init__(self, window: int, stride: int) -> None:
        self.window, self.stride = window, stride
        self.recent_turns = 4 * window  # room for window - stride exchanges of a few turns each

    def _needed(self, recent: list[StoredRemark]) -> int:
        return self.stride if recent else self.window  # the first window has no overlap

    def _complete(self, history: list[StoredRemark]) -> list[list[StoredRemark]]:
        groups = exchanges(history)
        # An exchange still waiting for its reply is not complete; a window never splits one.
        if groups and all(t.role == "user" for t in groups[-1]):
            groups = groups[:-1]
        return groups

    def due(self, history: list[StoredRemark], recent: list[StoredRemark]) -> bool:
        return len(self._complete(history)) >= self._needed(recent)

    def plan(self, history: list[StoredRemark], recent: list[StoredRemark], flush: bool) -> FoldPlan | None:
        needed = self._needed(recent)
        complete = self._complete(history)
        if len(complete) >= needed:
            taken = complete[:needed]
        elif flush and history:
            taken = exchanges(history)  # the partial window, open exchange included
        else:
            return None
        overlap = max(0, self.window - len(taken))
        context = exchanges(recent)[-overlap:] if overlap else []
        return FoldPlan([t for g in taken for t in g], [t for g in context for t in g])

    def messages(self, summarizer: Summarizer, previous_summary: str, plan: FoldPlan) -> list[Message]:
        return summarizer.swin_messages(previous_summary, plan.context, plan.turns)


def make_strategy(name: str, window: int = 4, stride: int = 2) -> Strategy:
    if name == "swin":
        return SwinStrategy(window, stride)
    if name == "rsum":
        return RsumStrategy()
    raise ValueError(f"no summarizing strategy {name!r} (rsum or swin; 'full' keeps every turn)")
