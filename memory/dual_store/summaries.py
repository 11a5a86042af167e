"""The dual store's summaries: plan now, fold in the background, commit, then swap in.

Amnesia-free by construction:
- a summary absorbs an explicit list of turn ids taken when it starts; a turn recorded
  meanwhile is not on that list, so it stays in the history that follows;
- the new summary, the ids it absorbed, the new role prompt and the pointer to the current
  summary are committed in one transaction, and only then is the in-memory state swapped;
  a failure or a crash before that commit leaves the raw turns where they were;
- a fold is bounded and always makes progress (``memory/summary/folding.py``): chunks that
  fit the model's context, a second try with another prompt, then an extractive summary;
- no summary starts while turns wait in RAM for a store that is away (their ids are not
  known yet);
- a summary folded onto a version another robot has replaced meanwhile is not committed
  (``SummaryConflict``): the memory reloads the newer one and folds again later.
When a summary runs is ``memory/summary/scheduler.py``'s. When it is swapped in, the robot
may say (``swap_when``): a reply's prompt is read by the LLM from the customer's pause on
(robot/reply/preemptive.py), and a new role prompt swapped in before the turn builds its own
made that request out of date and the whole prompt was read again (0.3-0.4 s more of silence,
measured live). A folded summary waits until the robot allows it, at most ``SWAP_WAIT_MAX_S``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from memory.core.clock import Clock
from memory.core.records import StoredRemark
from memory.core.settings import SummaryPolicy
from memory.dual_store.persistence import Persistence
from memory.recall.prompt_budget import PromptBudget
from memory.stores.protocol import SummaryConflict, UserGone
from memory.summary.folding import Folder
from memory.summary.scheduler import Backlog, Job, SummaryScheduler
from memory.summary.strategies import FoldPlan, Strategy

log = logging.getLogger(__name__)

SWAP_WAIT_MAX_S = 30.0  # a summary waits at most this long to be swapped in (a customer's longest turn)
SWAP_POLL_S = 0.05
SwapWhen = Callable[[], bool]  # True: a new role prompt may be swapped in now


class Summaries:
    def __init__(self, *, policy: SummaryPolicy, clock: Clock, persistence: Persistence, folder: Folder,
                 strategy: Strategy, budget: PromptBudget,
                 on_absorbed: Callable[[list[StoredRemark]], Awaitable[None]],
                 swap_when: SwapWhen | None = None) -> None:
        self.policy, self.folder, self.strategy, self.budget = policy, folder, strategy, budget
        self._persist = persistence
        self._on_absorbed = on_absorbed  # turns a committed summary absorbed (retrieval indexes them)
        self._swap_when = swap_when  # None: swapped in as soon as it is folded
        self.scheduler = SummaryScheduler(policy, clock, self._begin, self._backlog)

    def _backlog(self) -> Backlog:
        state = self._persist.state
        history = state.history
        role_prompt = state.role_prompt.text if state.role_prompt else state.render(None)
        return Backlog(len(history), self.budget.history_tokens(history),
                       self.budget.summary_trigger(role_prompt, self.policy.update_after_tokens),
                       self.strategy.due(history, state.recent))

    def _begin(self, reason: str, flush: bool) -> Job | None:
        """Take the plan now (the turn ids it absorbs); the summary itself runs later."""
        if len(self._persist.unwritten):
            return None  # the store is away: the summary waits for it (and for those turns' ids)
        state = self._persist.state
        plan = self.strategy.plan(state.history, state.recent, flush)
        return None if plan is None else self._summarize_and_swap(plan, reason)

    async def _summarize_and_swap(self, plan: FoldPlan, reason: str) -> bool | None:
        """Fold the plan chunk by chunk; each chunk is committed, then swapped in."""
        persist = self._persist
        state, generation = persist.state, persist.generation
        log.info("summary (%s, %s) of %d turns started", self.strategy.name, reason, len(plan.turns))
        while plan.turns:
            folded = await self.folder.fold(state.summary_text, plan)
            if folded is None:
                return False  # the LLM failed: the raw turns stay, retried after the backoff
            if reason != "flush":  # a session's last summary (it closes) changes no reply's prompt
                await self._reply_first()
            async with persist.lock:
                if generation != persist.generation:
                    return None  # the user was forgotten meanwhile: nothing may be written back
                try:
                    summary, prompt = await persist.store.commit_summary(
                        state.require_user(), folded.text, self.strategy.name, [t.id for t in folded.turns],
                        state.summary_id, state.persona, state.render(folded.text), persist.clock.now())
                except UserGone:
                    await persist.reopen()
                    persist.notify()
                    return None
                except SummaryConflict:
                    log.info("another robot summarized %r meanwhile: its summary is loaded, the fold is redone",
                             persist.user)
                    await persist.reload()
                    persist.notify()
                    return False
                except Exception as exc:  # noqa: BLE001 - a store error keeps the raw turns too
                    log.warning("summary not stored (%s); the %d raw turns stay", exc, len(folded.turns))
                    return False
                state.absorb(summary, prompt, folded.turns, self.strategy.recent_turns)  # committed: now swap
            log.info("summary v%d (%s) absorbed %d turns; role prompt v%d; %d turns stay in the history",
                     summary.version, folded.how, len(summary.absorbed), prompt.version, len(state.history))
            persist.notify()
            await self._on_absorbed(folded.turns)  # searchable from the next reply on
            done = {t.id for t in folded.turns}
            # What the chunk left of the plan; swin shows the chunk just folded as context.
            plan = FoldPlan([t for t in plan.turns if t.id not in done],
                            folded.turns if self.strategy.recent_turns else [])
        return True

    async def _reply_first(self) -> None:
        """Until ``swap_when`` allows the swap (no reply's prompt being made), the memory
        closes, or ``SWAP_WAIT_MAX_S`` passed. Turns recorded meanwhile stay in the history
        that follows, as for any turn recorded during a fold."""
        if self._swap_when is None or self._swap_when():
            return
        start = time.monotonic()
        while not self.scheduler.closed:  # a memory closing commits what it folded, as before
            if self._swap_when():
                log.info("summary waited %.2f s for the reply in progress", time.monotonic() - start)
                return
            if time.monotonic() - start >= SWAP_WAIT_MAX_S:
                log.info("summary swapped in after %.0f s waiting for a reply in progress", SWAP_WAIT_MAX_S)
                return
            await asyncio.sleep(SWAP_POLL_S)
