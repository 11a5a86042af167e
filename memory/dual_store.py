"""The dual-store memory: current-prompt history + a recursive summary that rewrites the
role prompt in the background ("A Summarized History-based Dialogue System for
Amnesia-Free Prompt Updates").

Amnesia-free by construction:
- a summary absorbs an explicit list of turn ids taken when it starts; a turn recorded
  meanwhile is not on that list, so it stays in the history that follows;
- the new summary, the ids it absorbed, the new role prompt and the pointer to the current
  summary are committed in one transaction, and only then is the in-memory state swapped;
  a failure or a crash before that commit leaves the raw turns where they were;
- a failed or timed-out summary is logged and retried after a backoff.
A reply never waits for a summary: ``build_messages`` only reads the in-memory state.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Callable

from config.schema import PersonaMemory
from memory.base import LLMCallable, Message, Turn
from memory.clock import Clock, SystemClock
from memory.records import RolePromptVersion, StoredTurn, SummaryVersion
from memory.store import MemoryStore
from memory.strategies import FoldPlan, make_strategy
from memory.summarizer import finish_summary, render_role_prompt, turn_content
from memory.tokens import MESSAGE_OVERHEAD, count_message_tokens, count_tokens

log = logging.getLogger(__name__)

# Called (synchronously; keep it quick) after each role-prompt rewrite:
# (role-prompt version, role prompt text, summary text or "" when there is none yet).
OnUpdate = Callable[[int, str, str], None]

REPLY_RESERVE_TOKENS = 100  # room kept in the budget for the new utterance
MIN_RETRY_S = 0.5  # a zero backoff must not turn a dead LLM into a busy loop


class DualStoreMemory:
    """``DialogueMemory`` with a summarized history, for the ``rsum`` and ``swin`` strategies.

    Build it with ``memory.create_memory`` (or call ``await open()`` yourself), then
    ``await start()`` to run the timer.
    """

    def __init__(self, *, persona_prompt: str, settings: PersonaMemory, store: MemoryStore, llm: LLMCallable,
                 user: str = "default", token_budget: int = 1500, clock: Clock | None = None,
                 on_update: OnUpdate | None = None, close_timeout_s: float = 5.0, guard_facts: int = 8) -> None:
        self.settings = settings
        self.user = user
        self.token_budget = token_budget
        self.clock: Clock = clock or SystemClock()
        self.strategy = make_strategy(settings.strategy, settings.swin_window, settings.swin_stride)
        self._persona = persona_prompt
        self._store = store
        self._llm = llm
        self._on_update = on_update
        self._close_timeout_s = close_timeout_s
        self.guard_facts = guard_facts  # customer statements kept verbatim (memory/facts.py); 0: off
        # The summary may use a third of the budget; the rest is persona, history, utterance.
        self.summary_max_tokens = max(60, token_budget // 3)
        # In-memory mirror of the store (loaded by open()).
        self._user_id: int | None = None
        self._session_id: int | None = None
        self._summary: SummaryVersion | None = None
        self._role_prompt: RolePromptVersion | None = None
        self._history: list[StoredTurn] = []
        self._recent: list[StoredTurn] = []
        # Background work.
        self._prompt_lock = asyncio.Lock()  # one role-prompt writer at a time (swap, persona, forget)
        self._update_task: asyncio.Task[bool] | None = None
        self._timer_task: asyncio.Task[None] | None = None
        self._retry_task: asyncio.Task[None] | None = None
        self._backoff_until = -math.inf
        self._generation = 0  # bumped by forget: an update started before must not write back
        self._closed = False
        self._trim_warned: tuple[int | None, int] | None = None
        self.trimmed_prompts = 0  # prompts that had to leave old pending turns out (summarizer down)
        self._update_failed = False  # how the last summary ended (flush reports it)
        self.failures = 0  # summaries that failed or timed out (for operators and tests)

    # --- state, read-only -----------------------------------------------------------------

    @property
    def role_prompt(self) -> str:
        return self._role_prompt.text if self._role_prompt else render_role_prompt(self._persona, None)

    @property
    def role_prompt_version(self) -> int:
        return self._role_prompt.version if self._role_prompt else 0

    @property
    def summary(self) -> SummaryVersion | None:
        return self._summary

    @property
    def history(self) -> list[StoredTurn]:
        """The current-prompt history: turns recorded since the summary last absorbed any."""
        return list(self._history)

    @property
    def updating(self) -> bool:
        return self._update_task is not None and not self._update_task.done()

    # --- the seam -------------------------------------------------------------------------

    async def open(self) -> None:
        """Load the user's memory (create it on first use) and open a session."""
        state = await self._store.open_user(self.user, self.strategy.recent_turns, self.clock.now())
        self._user_id, self._summary = state.user_id, state.summary
        self._history, self._recent = state.history, state.recent_absorbed
        self._session_id = await self._store.start_session(state.user_id, self.clock.now())
        self._role_prompt = state.role_prompt
        current = render_role_prompt(self._persona, self._summary_text())
        if self._role_prompt is None or self._role_prompt.text != current:
            # First start, another persona, or a rollback done while stopped: a new version.
            self._role_prompt = await self._store.add_role_prompt(
                state.user_id, self._persona, self._summary_id(), current, "start", self.clock.now())
        log.info("memory of %r: summary v%s, %d turns in the current-prompt history",
                 self.user, self._summary.version if self._summary else 0, len(self._history))

    async def build_messages(self, user_text: str) -> list[Message]:
        messages: list[Message] = [{"role": "system", "content": self.role_prompt}]
        history = [{"role": t.role, "content": turn_content(t)} for t in self._history]
        new = {"role": "user", "content": user_text}
        # Hard budget: if the history outgrew it (the summarizer is failing), the oldest turns
        # are left out of this prompt only. They stay stored and pending the next summary.
        fixed = count_message_tokens(messages + [new])
        dropped = 0
        while history and fixed + count_message_tokens(history) > self.token_budget:
            history.pop(0)
            dropped += 1
        if dropped:
            self.trimmed_prompts += 1
            key = (self._summary_id(), len(self._history))
            if key != self._trim_warned:  # once per state of the memory, not per reply
                self._trim_warned = key
                log.warning("prompt over the %d-token budget: %d oldest unsummarized turns left out of this "
                            "prompt (kept in the store; the next summary folds them)", self.token_budget, dropped)
        return messages + history + [new]

    async def record(self, turn: Turn) -> None:
        if self._user_id is None:
            raise RuntimeError("memory is not open: await open() (or use create_memory) first")
        stored = await self._store.add_turn(self._user_id, self._session_id, turn)  # durable on return
        self._history.append(stored)
        self._check_triggers()

    async def set_persona_prompt(self, prompt: str) -> None:
        """A new persona (or new background information in it): both stores are kept."""
        async with self._prompt_lock:
            self._persona = prompt
            text = render_role_prompt(prompt, self._summary_text())
            self._role_prompt = await self._store.add_role_prompt(
                self._require_user(), prompt, self._summary_id(), text, "persona", self.clock.now())
        self._notify()

    async def start(self) -> None:
        if self._user_id is None:
            await self.open()
        if self._timer_task is None:
            self._timer_task = asyncio.create_task(self._timer(), name="memory-timer")
        self._check_triggers()  # a restart may bring a long history back

    async def aclose(self) -> None:
        """Stop the timer; give a summary in progress a moment, then cancel it (its turns
        stay raw and are folded after the next start). Pending turns are not summarized
        here: call ``flush()`` first for that."""
        if self._closed:
            return
        self._closed = True
        for task in (self._timer_task, self._retry_task):
            if task is not None:
                task.cancel()
        task = self._update_task
        if task is not None and not task.done():
            done, _ = await asyncio.wait({task}, timeout=self._close_timeout_s)
            if not done:
                log.warning("memory closing: a summary in progress was cancelled; its turns stay raw")
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self._session_id is not None:
            await self._store.end_session(self._session_id, self.clock.now())
        await self._store.close()

    # --- extras for the controller, the simulator and tests --------------------------------

    async def flush(self) -> bool:
        """Summarize everything pending now (session end; swin's partial window) and wait.
        True when nothing is left pending."""
        await self.wait_idle()
        while self._history and not self._closed:
            if not self._request("flush", flush=True):
                break
            await self.wait_idle()
            if self._update_failed:
                return False
        return not self._history

    async def wait_idle(self) -> None:
        """Wait until no summary is in progress (one may start another: wait for all)."""
        while self._update_task is not None and not self._update_task.done():
            await asyncio.wait({self._update_task})

    async def forget_user(self, user: str) -> str:
        """Delete all of a user's data; if it is this memory's user, start it afresh."""
        if user != self.user:
            return str(await self._store.forget_user(user))
        self._generation += 1
        if self._update_task is not None:
            self._update_task.cancel()
            await asyncio.gather(self._update_task, return_exceptions=True)
        async with self._prompt_lock:
            report = await self._store.forget_user(user)
            self._user_id = None
            self._summary, self._role_prompt, self._history, self._recent = None, None, [], []
            await self.open()
        self._notify()
        return str(report)

    # --- background work -------------------------------------------------------------------

    async def _timer(self) -> None:
        interval = self.settings.update_interval_s
        next_at = self.clock.now() + interval
        while True:
            await self.clock.sleep(next_at - self.clock.now())
            while next_at <= self.clock.now():
                next_at += interval  # fixed cadence; a late wake-up does not fire twice
            self._request("timer", flush=True)

    def _check_triggers(self) -> None:
        if self._closed or self.updating or self.clock.now() < self._backoff_until:
            return  # after a failure, the retry (or the timer) tries again, not every new turn
        s = self.settings
        if s.update_after_turns and len(self._history) >= s.update_after_turns:
            self._request("turns", flush=True)
        elif self._history_tokens() >= self._token_trigger():
            self._request("tokens", flush=True)
        elif self.strategy.due(self._history, self._recent):
            self._request("window", flush=False)

    def _token_trigger(self) -> int:
        """History size that starts a summary: the persona's ``update_after_tokens``, and in
        any case 60% of the room the budget leaves the history (a backstop that keeps the
        prompt under budget while the summary is being made)."""
        room = self.token_budget - count_tokens(self.role_prompt) - MESSAGE_OVERHEAD - REPLY_RESERVE_TOKENS
        backstop = max(50, int(0.6 * room))
        return min(self.settings.update_after_tokens or backstop, backstop)

    def _history_tokens(self) -> int:
        return sum(count_tokens(turn_content(t)) + MESSAGE_OVERHEAD for t in self._history)

    def _request(self, reason: str, flush: bool) -> bool:
        """Start a background summary unless one is running or nothing is pending."""
        if self._closed or self.updating:
            return False
        plan = self.strategy.plan(self._history, self._recent, flush)
        if plan is None:
            return False
        self._update_failed = False
        self._update_task = asyncio.create_task(self._update(plan, reason), name=f"memory-summary-{reason}")
        return True

    async def _update(self, plan: FoldPlan, reason: str) -> bool:
        ok = False
        try:
            ok = await self._summarize_and_swap(plan, reason)
        finally:
            self._update_failed = not ok
            self._update_task = None
        if ok:
            self._check_triggers()  # a backlog (or the next swin window) goes on at once
        else:
            self._schedule_retry()
        return ok

    async def _summarize_and_swap(self, plan: FoldPlan, reason: str) -> bool:
        generation, previous = self._generation, self._summary_text()
        s = self.settings
        messages = self.strategy.messages(previous, plan, s.max_summary_sentences)
        log.info("summary (%s, %s) of %d turns started", self.strategy.name, reason, len(plan.turns))
        try:
            # The timeout is real (loop) time: it bounds an actual LLM call.
            raw = await asyncio.wait_for(self._llm(messages), timeout=s.summary_timeout_s)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any LLM failure keeps the raw turns
            return self._failed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, plan)
        text = finish_summary(raw or "", messages, previous, plan.turns, s.max_summary_sentences,
                              self.summary_max_tokens, self.guard_facts)
        if not text:
            return self._failed("the LLM's answer held no usable summary", plan)
        async with self._prompt_lock:
            if generation != self._generation:
                return False  # the user was forgotten meanwhile: nothing may be written back
            role_prompt = render_role_prompt(self._persona, text)  # the persona as of now
            try:
                summary, prompt = await self._store.commit_summary(
                    self._require_user(), text, self.strategy.name, [t.id for t in plan.turns],
                    self._summary_id(), self._persona, role_prompt, self.clock.now())
            except Exception as exc:  # noqa: BLE001 - a store error keeps the raw turns too
                return self._failed(f"store: {exc}", plan)
            # Committed: now swap. Turns recorded since the plan was made are not absorbed.
            absorbed = set(summary.absorbed)
            self._history = [t for t in self._history if t.id not in absorbed]
            if self.strategy.recent_turns:
                self._recent = (self._recent + plan.turns)[-self.strategy.recent_turns:]
            self._summary, self._role_prompt = summary, prompt
            self.failures = 0
        log.info("summary v%d absorbed %d turns; role prompt v%d; %d turns stay in the history",
                 summary.version, len(absorbed), prompt.version, len(self._history))
        self._notify()
        return True

    def _failed(self, why: str, plan: FoldPlan) -> bool:
        self.failures += 1
        delay = max(MIN_RETRY_S, self.settings.retry_backoff_s)
        self._backoff_until = self.clock.now() + delay
        log.warning("summary failed (%s); the %d raw turns stay in the history; retry in %.1fs",
                    why, len(plan.turns), delay)
        return False

    def _schedule_retry(self) -> None:
        if self._closed or (self._retry_task is not None and not self._retry_task.done()):
            return
        delay = max(MIN_RETRY_S, self.settings.retry_backoff_s)
        self._retry_task = asyncio.create_task(self._retry_after(delay), name="memory-summary-retry")

    async def _retry_after(self, delay: float) -> None:
        await self.clock.sleep(delay)
        self._retry_task = None
        self._request("retry", flush=True)

    # --- helpers ---------------------------------------------------------------------------

    def _notify(self) -> None:
        if self._on_update is None or self._role_prompt is None:
            return
        try:
            self._on_update(self._role_prompt.version, self._role_prompt.text, self._summary_text())
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the memory
            log.exception("memory on_update callback failed")

    def _summary_text(self) -> str:
        return self._summary.text if self._summary else ""

    def _summary_id(self) -> int | None:
        return self._summary.id if self._summary else None

    def _require_user(self) -> int:
        if self._user_id is None:
            raise RuntimeError("memory is not open")
        return self._user_id
