"""One fold of the backlog into the summary, bounded and always making progress (issue 18).

- **Chunked to fit**: the turns a summary folds are cut to the longest prefix whose request
  (prompt + room for the answer) fits the summarizing model's context, in its real tokens
  (``memory/core/tokens.py: TokenCounter``); a single turn too long for it is shown cut.
- **A ladder, not a loop**: rung 0 asks the strategy's prompt on the chunk; if the answer is
  unusable (nothing left after cleaning) or fails the entity gate (``memory/summary/entities.py``),
  rung 1 asks a different prompt (``prompts/summary_retry.txt``) on half the chunk; then rung
  2 keeps the chunk extractively (``memory/summary/extractive.py``): no LLM, so it cannot fail.
  An LLM error or timeout goes to the extractive rung at once: a summarizer too slow for its
  timeout (a busy machine) or down never leaves the memory unsummarized.
- **The fact guard runs on every rung that commits**, so the person's statements survive
  whatever the LLM did.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field

from memory.core.base import LLMCallable, Message
from memory.core.records import StoredRemark
from memory.core.settings import LlmLimits, SummaryPolicy
from memory.core.tokens import MESSAGE_OVERHEAD, TokenCounter
from memory.summary.entities import check, entities
from memory.summary.extractive import ExtractiveCompressor
from memory.summary.facts import split_marker
from memory.summary.strategies import FoldPlan, Strategy
from memory.summary.summarizer import Summarizer

log = logging.getLogger(__name__)

TEMPLATE_TOKENS = 32  # the chat template's own tokens (role headers, generation prompt), generously
EXTRACTIVE = 2  # the last rung


@dataclass
class SummaryStats:
    """Counts since the memory opened (``failures`` on the memory counts only those in a row)."""

    accepted: int = 0  # LLM summaries committed
    rejected: int = 0  # LLM answers refused: nothing usable, or too few entities kept
    failed: int = 0  # LLM errors and timeouts
    retried: int = 0  # second-rung requests (other prompt, smaller chunk)
    extractive: int = 0  # chunks kept as the person's own sentences
    llm_seconds: float = 0.0  # time spent in summary requests
    llm_calls: int = 0
    recalls: list[float] = field(default_factory=list)  # the entity recall of each usable answer


@dataclass(frozen=True)
class Folded:
    text: str  # the summary to commit (fact-guard line included)
    turns: list[StoredRemark]  # the turns it absorbs
    how: str  # "llm", "retry" or "extractive"


class Folder:
    def __init__(self, summarizer: Summarizer, strategy: Strategy, llm: LLMCallable, policy: SummaryPolicy,
                 limits: LlmLimits, count: TokenCounter) -> None:
        self.summarizer, self.strategy, self.policy, self.limits = summarizer, strategy, policy, limits
        self.stats = SummaryStats()
        self._llm, self._count = llm, count
        self._compressor = ExtractiveCompressor(summarizer.labels.user, summarizer.guard.pattern, summarizer.max_tokens)
        self._stuck: tuple[int, int] | None = None  # (first turn id of a failing chunk, its next rung)

    async def fold(self, previous: str, plan: FoldPlan) -> Folded | None:
        """The summary of a chunk of ``plan`` (a prefix of its turns); ``None`` after an LLM
        error (retry later: the next try starts one rung higher)."""
        chunk, shown = await self.fit(previous, plan)
        first = chunk.turns[0].id
        rung = self._stuck[1] if self._stuck and self._stuck[0] == first else 0
        while rung < EXTRACTIVE:
            n = len(chunk.turns) if rung == 0 else max(1, len(chunk.turns) // 2)
            turns, shown_turns = chunk.turns[:n], shown.turns[:n]
            if rung == 0:
                messages = self._messages(previous, shown)
            else:
                self.stats.retried += 1
                messages = self.summarizer.retry_messages(previous, shown_turns)
            try:
                raw = await self._ask(messages)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - any LLM failure: kept extractively at once
                # An LLM too slow for the summary timeout (a busy machine) or down failed every try
                # before: three tries a session, the fallback only on the third, and replayed visits
                # ended with no summary at all. The fold is kept extractively now; the LLM is asked
                # again for the next one.
                self.stats.failed += 1
                log.warning("summary request failed (%s); the %d turns are kept extractively", _describe(exc),
                            len(chunk.turns))
                break
            text = self._accept(raw, messages, previous, turns)
            if text:
                self._stuck = None
                self.stats.accepted += 1
                return Folded(text, turns, "llm" if rung == 0 else "retry")
            rung += 1
        self._stuck = None
        self.stats.extractive += 1
        body = self._compressor.compress(split_marker(previous)[0], chunk.turns)
        log.info("summary kept extractively: the person's own sentences of %d turns", len(chunk.turns))
        return Folded(self.summarizer.with_facts(body, previous, chunk.turns), chunk.turns, "extractive")

    async def fit(self, previous: str, plan: FoldPlan) -> tuple[FoldPlan, FoldPlan]:
        """The longest prefix of ``plan`` whose request fits the context, and that prefix as
        shown to the model (a turn too long on its own is cut in the prompt, never in the store)."""
        budget = self.limits.context_tokens - self.limits.answer_tokens - TEMPLATE_TOKENS
        room = budget - await self._tokens(self._messages(previous, FoldPlan([], plan.context)))
        taken, used = 0, 0
        for turn in plan.turns:  # measured turn by turn: a prefix, never the whole backlog at once
            cost = await self._count(self.summarizer.render_turns([turn])) + 1  # and its line break
            if taken and used + cost > room:
                break
            taken, used = taken + 1, used + cost
        chunk = shown = FoldPlan(plan.turns[:taken], plan.context)
        while await self._tokens(self._messages(previous, shown)) > budget:
            if len(shown.turns) > 1:  # the parts' tokens did not add up exactly: one turn fewer
                chunk = shown = FoldPlan(shown.turns[:-1], plan.context)
                continue
            turn = shown.turns[0]  # one turn longer than the context allows: show its start
            if len(turn.text) <= 40:
                break
            shown = FoldPlan([dataclasses.replace(turn, text=turn.text[: int(len(turn.text) * 0.7)])], plan.context)
        if len(chunk.turns) < len(plan.turns):
            log.info("summary chunk: %d of %d pending turns fit the model's %d-token context",
                     len(chunk.turns), len(plan.turns), self.limits.context_tokens)
        return chunk, shown

    def _messages(self, previous: str, plan: FoldPlan) -> list[Message]:
        return self.strategy.messages(self.summarizer, previous, plan)

    def _accept(self, raw: str, messages: list[Message], previous: str, turns: list[StoredRemark]) -> str:
        """The cleaned summary with the fact line, or "" when unusable or the gate refuses it."""
        text = self.summarizer.finish(raw or "", messages, previous, turns)
        if not text:
            self.stats.rejected += 1
            log.info("summary answer held nothing usable (an echo of the transcript?)")
            return ""
        labels = self.summarizer.names(turns)
        # Both halves must survive: a copy of the previous memory that drops the new turns
        # fails as surely as a summary of the turns that forgets the past.
        recall = min(check(text, entities([previous], ignore=labels)).recall,
                     check(text, entities([t.text for t in turns], ignore=labels)).recall)
        self.stats.recalls.append(recall)
        if recall < self.policy.min_entity_recall:
            self.stats.rejected += 1
            log.info("summary rejected: it kept %.0f%% of the names, numbers and dates (at least %.0f%% needed)",
                     100 * recall, 100 * self.policy.min_entity_recall)
            return ""
        return text

    async def _ask(self, messages: list[Message]) -> str:
        loop = asyncio.get_running_loop()
        started = loop.time()
        self.stats.llm_calls += 1
        try:
            # The timeout is real (loop) time: it bounds an actual LLM call.
            return await asyncio.wait_for(self._llm(messages), timeout=self.policy.summary_timeout_s)
        finally:
            self.stats.llm_seconds += loop.time() - started

    async def _tokens(self, messages: list[Message]) -> int:
        return sum([await self._count(m["content"]) + MESSAGE_OVERHEAD for m in messages])


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
