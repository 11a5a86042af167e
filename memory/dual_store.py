"""The dual-store memory: current-prompt history + a recursive summary that rewrites the
role prompt in the background ("A Summarized History-based Dialogue System for
Amnesia-Free Prompt Updates").

``DualStoreMemory`` is the seam the loop uses and the one writer of a user's memory: every
change is committed to the store first, then mirrored in RAM (``memory/mirror.py``). When
to summarize is ``scheduler.py``'s, the prompt under budget ``prompt_budget.py``'s, and the
summary itself ``folding.py``'s.

Amnesia-free by construction:
- a summary absorbs an explicit list of turn ids taken when it starts; a turn recorded
  meanwhile is not on that list, so it stays in the history that follows;
- the new summary, the ids it absorbed, the new role prompt and the pointer to the current
  summary are committed in one transaction, and only then is the in-memory state swapped;
  a failure or a crash before that commit leaves the raw turns where they were;
- a fold is bounded and always makes progress (``memory/folding.py``): chunks that fit the
  model's context, a second try with another prompt, then an extractive summary;
- a user deleted under the running memory (``robot memory forget`` from another process) is
  started afresh at the next write, instead of every later turn failing;
- a store that goes away (a database server down) does not stop the conversation: turns
  wait in RAM in order (``memory/unwritten.py``) and are written when it is back; no
  summary starts meanwhile;
- a summary folded onto a version another robot has replaced meanwhile is not committed
  (``SummaryConflict``): the memory reloads the newer one and folds again later.
A reply never waits for a summary: ``build_messages`` only reads the in-memory state.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Callable

from memory.archive import DEFAULT_MIN_SCORE, ArchiveIndex
from memory.base import LLMCallable, Message, Remark
from memory.clock import Clock, SystemClock
from memory.folding import Folder, SummaryStats
from memory.mirror import UserMirror
from memory.profile_llm import LateFills, ProfileAsker
from memory.prompt_budget import PromptBudget
from memory.records import StoredRemark, SummaryVersion
from memory.scheduler import Backlog, Job, SummaryScheduler
from memory.settings import LlmLimits, SummaryPolicy
from memory.store import MemoryStore, StoreUnavailable, SummaryConflict, UserGone
from memory.strategies import FoldPlan, make_strategy
from memory.summarizer import Summarizer
from memory.tokens import HeuristicCounter, TokenCounter
from memory.unwritten import UnwrittenTurns
from memory.words import words_pattern
from prompts import load_word_list

log = logging.getLogger(__name__)

# Called (synchronously; keep it quick) after each role-prompt rewrite:
# (role-prompt version, role prompt text, summary text or "" when there is none yet).
OnUpdate = Callable[[int, str, str], None]
# Called (synchronously) when the store goes away: one line for the operator.
OnStoreError = Callable[[str], None]

RECALL = words_pattern(load_word_list("recall_words")) or re.compile(r"(?!)")  # "remind me", "so far" ...
RECAP = words_pattern(load_word_list("recap_words")) or re.compile(r"(?!)")  # "remind me", "the plan" ...
GONE_CHECK_S = 0.5  # the most a reply waits to learn whether its user was forgotten meanwhile


class DualStoreMemory:
    """``DialogueMemory`` with a summarized history, for the ``rsum`` and ``swin`` strategies.

    Build it with ``memory.create_memory`` (or call ``await open()`` yourself), then
    ``await start()`` to run the timer.
    """

    def __init__(self, *, persona_prompt: str, policy: SummaryPolicy, store: MemoryStore, llm: LLMCallable,
                 user: str = "default", token_budget: int = 1500, clock: Clock | None = None,
                 on_update: OnUpdate | None = None, close_timeout_s: float = 5.0,
                 limits: LlmLimits | None = None, count_tokens: TokenCounter | None = None,
                 owns_store: bool = True, on_store_error: OnStoreError | None = None,
                 retrieval_tokens: int = 0, retrieval_min_score: float = DEFAULT_MIN_SCORE,
                 profile_llm: bool = False) -> None:
        self.policy = policy
        self.user = user
        self.clock: Clock = clock or SystemClock()
        self.strategy = make_strategy(policy.strategy, policy.swin_window, policy.swin_stride)
        self.budget = PromptBudget(token_budget, count_tokens)  # the same model answers: its tokens
        limits = limits or LlmLimits()
        # The summary is also the next request's "previous memory": it may take a quarter of
        # the model's context, so a chunk of turns always fits beside it.
        self.summarizer = Summarizer(policy, min(self.budget.summary_max_tokens, limits.context_tokens // 4))
        self.scheduler = SummaryScheduler(policy, self.clock, self._begin_summary, self._backlog)
        self._slots = policy.profile_slots  # the visitor profile's slots (the persona's)
        self._profile_unsaved = False
        self._profile_task: asyncio.Task[None] | None = None
        # What the patterns miss, asked of the LLM in the background (memory/profile_llm.py),
        # about what the person says of themselves: the fact guard's words.
        asker = ProfileAsker(self._slots, llm, self.summarizer.guard.pattern) if profile_llm and self._slots else None
        self._late_fills = LateFills(asker, self._fill_profile) if asker else None
        self.folder = Folder(self.summarizer, self.strategy, llm, policy, limits, count_tokens or HeuristicCounter())
        self._state = UserMirror(persona_prompt)
        # The archive (turns summaries absorbed), searched for each reply (memory/archive.py).
        self.archive = ArchiveIndex(policy.labels, retrieval_min_score, count_tokens)
        self._retrieval_tokens = retrieval_tokens
        self._store = store
        self._owns_store = owns_store  # False: one store shared by every visitor's memory
        self._on_update = on_update
        self._unwritten = UnwrittenTurns(self._write, self._written, on_store_error)
        self._close_timeout_s = close_timeout_s
        self._prompt_lock = asyncio.Lock()  # one role-prompt writer at a time (swap, persona, forget)
        self._generation = 0  # bumped by forget: a summary started before must not write back
        self._closed = False

    # --- state, read-only -----------------------------------------------------------------

    @property
    def role_prompt(self) -> str:
        return self._state.role_prompt.text if self._state.role_prompt else self._state.render(None)

    @property
    def role_prompt_version(self) -> int:
        return self._state.role_prompt.version if self._state.role_prompt else 0

    @property
    def summary(self) -> SummaryVersion | None:
        return self._state.summary

    @property
    def history(self) -> list[StoredRemark]:
        """The current-prompt history: turns recorded since the summary last absorbed any."""
        return list(self._state.history)

    @property
    def updating(self) -> bool:
        return self.scheduler.busy

    @property
    def failures(self) -> int:
        """Summary jobs in a row that failed (LLM error or timeout); 0 after a success.
        ``stats`` has the counts since the memory opened."""
        return self.scheduler.failures

    @property
    def stats(self) -> SummaryStats:  # summary counts since the memory opened
        return self.folder.stats

    @property
    def trimmed_prompts(self) -> int:  # prompts that had to leave old pending turns out
        return self.budget.trimmed_prompts

    # --- the seam -------------------------------------------------------------------------

    async def open(self, *, offline_ok: bool = False) -> None:
        """Load the user's memory (create it on first use) and open a session. With
        ``offline_ok``, a store that is away is no error: the memory starts from the bare
        persona, keeps the turns in RAM, and loads the user when the store is back."""
        try:
            await self._open()
        except StoreUnavailable as exc:
            self._state.clear()  # half loaded is not loaded: the next write loads it again
            if not offline_ok:
                raise
            self._unwritten.notice(str(exc))

    async def _open(self) -> None:
        state = self._state
        state.load(await self._store.open_user(self.user, self.strategy.recent_turns, self.clock.now()))
        user_id = state.require_user()
        state.session_id = await self._store.start_session(user_id, self.clock.now())
        await self._index_archive()
        current = state.render(None)
        if state.role_prompt is None or state.role_prompt.text != current:
            # First start, another persona, or a rollback done while stopped: a new version.
            state.role_prompt = await self._store.add_role_prompt(
                user_id, state.persona, state.summary_id, current, "start", self.clock.now())
        self._unwritten.reachable()
        log.info("memory of %r: summary v%s, %d turns in the current-prompt history",
                 self.user, state.summary.version if state.summary else 0, len(state.history))

    async def _index_archive(self) -> None:
        """Index what the summaries absorbed: every stored turn not in the current history."""
        if not self._retrieval_tokens or self._state.user_id is None:  # off: nothing is loaded
            return
        pending = {t.id for t in self._state.history}
        await self.archive.replace([t for t in await self._store.turns(self._state.user_id) if t.id not in pending])

    @property
    def profile_text(self) -> str:
        """The visitor profile's lines ("" if empty). They go with each reply's notes, not into
        the role prompt: a system message that changed every turn cost about a second of
        first token per reply on two cores (the server's prompt cache could not reuse it)."""
        return self._state.profile.render(self._slots)

    async def notes_for(self, user_text: str, retrieval_tokens: int | None = None, knowledge: str = "") -> str:
        """This reply's notes: the profile's lines when the customer asks about what was said
        ("remind me ..."), and the archived exchanges that match the utterance, within
        ``retrieval_tokens`` (default: the setting; a bench compares several)."""
        room = self._retrieval_tokens if retrieval_tokens is None else retrieval_tokens
        # this order: the embedded model recapped best with the profile last (prompts/reply_notes.txt);
        # the shop's entries (robot/dialogue/knowledge.py) come first and share the room
        parts = [knowledge]
        room = max(0, room - (await self.archive._tokens(knowledge) if knowledge else 0))
        if room:
            shown = {t.id for t in self._state.history} | {t.id for t in self._state.recent}
            parts.append(self.archive.render(await self.archive.search(user_text, room, shown)))
        if RECALL.search(user_text):
            parts.append(self.profile_text)
        return "\n\n".join(p for p in parts if p)

    def recap(self, user_text: str) -> str:
        """The visitor profile as words to say, when ``user_text`` asks for a recap of the
        plan ("Can you remind me what we planned so far?"); "" otherwise or when it is empty."""
        return self._state.profile.spoken(self._slots) if RECAP.search(user_text) else ""

    @property
    def profile(self) -> dict[str, list[str]]:
        return self._state.profile.to_dict()

    @property
    def profile_lines(self) -> list[tuple[str, str]]:
        """The profile as the persona labels it: [("Name", "Ken"), ("Places", "Kyoto, Nara")]."""
        return self._state.profile.labelled(self._slots)

    async def build_messages(self, user_text: str, retrieval_tokens: int | None = None,
                             knowledge: str = "") -> list[Message]:
        notes = await self.notes_for(user_text, retrieval_tokens, knowledge)
        return await self.budget.messages(self.role_prompt, self._state.history, user_text, notes)

    async def record(self, turn: Remark) -> None:
        """Durable on return while the store is up; while it is away, kept in RAM (in the
        prompt at once) and written when it is back."""
        state = self._state
        if turn.role == "user" and self._slots:
            changed = state.profile.update(self._slots, turn.text)
            self._profile_unsaved |= bool(changed)  # in the next prompt at once; stored below
            if self._late_fills is not None:
                self._late_fills.heard(turn.text, changed)
        if len(self._unwritten):  # behind the turns already waiting: the store gets them in order
            state.history.append(self._unwritten.hold(turn, state.session_id, "still away"))
            return
        try:
            stored = await self._write(turn)
        except StoreUnavailable as exc:
            state.history.append(self._unwritten.hold(turn, state.session_id, str(exc)))
            return
        state.history.append(stored)
        await self._save_profile()
        self.scheduler.check()

    async def _fill_profile(self, found: dict[str, list[str]]) -> None:
        """Values the LLM pass found (``LateFills``): into the profile and the store."""
        if not self._closed and self._state.profile.put(self._slots, found):
            self._profile_unsaved = True
            await self._save_profile()

    async def _save_profile(self) -> None:
        if not self._profile_unsaved or self._state.user_id is None:
            return
        try:
            await self._store.save_profile(self._state.user_id, self._state.profile.to_dict(), self.clock.now())
            self._profile_unsaved = False
        except (StoreUnavailable, UserGone) as exc:  # kept in RAM; saved with the next turn
            log.warning("visitor profile not stored yet (%s)", exc)

    async def _write(self, turn: Remark) -> StoredRemark:
        if self._state.user_id is None:  # opened while the store was away: load the user first
            await self._reopen()
        try:
            return await self._store.add_turn(self._state.require_user(), self._state.session_id, turn)
        except UserGone:
            await self._start_afresh()
            return await self._store.add_turn(self._state.require_user(), self._state.session_id, turn)

    def _written(self, provisional: StoredRemark, stored: StoredRemark) -> None:
        history = self._state.history
        at = next((i for i, t in enumerate(history) if t is provisional), None)
        if at is not None:
            history[at] = stored
        if not len(self._unwritten):
            self.scheduler.check()  # the last one: summaries may run again
            self._profile_task = asyncio.get_running_loop().create_task(self._save_profile())  # said while away

    async def set_persona_prompt(self, prompt: str) -> None:
        """A new persona (or new background information in it): both stores are kept."""
        state = self._state
        async with self._prompt_lock:
            state.persona = prompt
            try:
                state.role_prompt = await self._store.add_role_prompt(
                    state.require_user(), prompt, state.summary_id, state.render(None), "persona",
                    self.clock.now())
            except UserGone:
                await self._reopen()  # its first role prompt is the new persona's
        self._notify()

    async def start(self) -> None:
        if self._state.user_id is None:
            await self.open(offline_ok=True)
        self.scheduler.start()

    async def aclose(self) -> None:
        """Stop the timer; give a summary in progress a moment, then cancel it (its turns
        stay raw and are folded after the next start). Pending turns are not summarized
        here: call ``flush()`` first for that."""
        if self._closed:
            return
        self._closed = True
        if self._late_fills is not None:
            self._late_fills.cancel()  # a profile line asked of the LLM is not worth a wait
        await self.scheduler.aclose(self._close_timeout_s)
        try:
            await self._unwritten.wait()  # a store that is away holds the close until it is back
        finally:
            await self._unwritten.aclose()
        if self._state.session_id is not None:
            await self._store.end_session(self._state.session_id, self.clock.now())
        if self._owns_store:
            await self._store.close()

    # --- extras for the controller, the simulator and tests --------------------------------

    async def flush(self) -> bool:
        """Summarize everything pending now (session end; swin's partial window) and wait.
        True when nothing is left pending."""
        return await self.scheduler.flush()

    async def wait_stored(self) -> None:
        """Until the turns kept in RAM while the store was away are written."""
        await self._unwritten.wait()

    @property
    def unwritten(self) -> int:  # turns said while the store was away, not written yet
        return len(self._unwritten)

    async def wait_idle(self) -> None:  # until no summary (or profile question) is in progress
        await self.scheduler.wait_idle()
        if self._late_fills is not None:
            await self._late_fills.wait()

    async def forget_user(self, user: str) -> str:
        """Delete all of a user's data; if it is this memory's user, start it afresh."""
        if user != self.user:
            return str(await self._store.forget_user(user))
        self._generation += 1  # before the cancel: the summary must not write back meanwhile
        if self._late_fills is not None:
            self._late_fills.cancel()  # nor an answer about what the forgotten visitor said
        await self.scheduler.cancel()
        async with self._prompt_lock:
            report = await self._store.forget_user(user)
            await self._reopen()
        self._notify()
        return str(report)

    async def restart_if_gone(self) -> bool:
        """A forget made by another process (``robot memory forget``) is honoured before the
        next reply is built, not at the next write: True when the user had to start afresh."""
        if self._state.user_id is None or len(self._unwritten):
            return False
        try:  # a store that is away must not hold the reply
            if await asyncio.wait_for(self._store.has_user(self.user), GONE_CHECK_S):
                return False
        except (StoreUnavailable, asyncio.TimeoutError):
            return False
        await self._start_afresh()
        return True

    async def _start_afresh(self) -> None:
        """The user was deleted from the store under this running memory: begin it anew."""
        log.warning("memory of %r was deleted from the store while in use (robot memory forget?); "
                    "starting it afresh", self.user)
        async with self._prompt_lock:
            await self._reopen()
        self._notify()

    async def _reopen(self) -> None:
        self._generation += 1  # a summary in progress must not write back into the new memory
        waiting = self._state.unwritten  # kept in RAM: still to be written
        self._state.clear()
        try:
            await self.open()
        finally:  # also when the store is still away: they stay in the prompt
            self._state.history += waiting
            said = [t.text for t in waiting if t.role == "user"]
            if self._slots and any([self._state.profile.update(self._slots, text) for text in said]):
                self._profile_unsaved = True  # (no LLM pass here: these were asked about when said)

    async def _reload(self) -> None:
        """Another robot committed a newer summary: take it (and the history it leaves)."""
        state = self._state
        waiting = state.unwritten
        state.load(await self._store.open_user(self.user, self.strategy.recent_turns, self.clock.now()))
        state.history += waiting
        await self._index_archive()

    # --- the summary: plan now, summarize in the background, commit, then swap --------------

    def _backlog(self) -> Backlog:
        history = self._state.history
        return Backlog(len(history), self.budget.history_tokens(history),
                       self.budget.summary_trigger(self.role_prompt, self.policy.update_after_tokens),
                       self.strategy.due(history, self._state.recent))

    def _begin_summary(self, reason: str, flush: bool) -> Job | None:
        """Take the plan now (the turn ids it absorbs); the summary itself runs later."""
        if len(self._unwritten):
            return None  # the store is away: the summary waits for it (and for those turns' ids)
        plan = self.strategy.plan(self._state.history, self._state.recent, flush)
        return None if plan is None else self._summarize_and_swap(plan, reason)

    async def _summarize_and_swap(self, plan: FoldPlan, reason: str) -> bool | None:
        """Fold the plan chunk by chunk; each chunk is committed, then swapped in."""
        state, generation = self._state, self._generation
        log.info("summary (%s, %s) of %d turns started", self.strategy.name, reason, len(plan.turns))
        while plan.turns:
            folded = await self.folder.fold(state.summary_text, plan)
            if folded is None:
                return False  # the LLM failed: the raw turns stay, retried after the backoff
            async with self._prompt_lock:
                if generation != self._generation:
                    return None  # the user was forgotten meanwhile: nothing may be written back
                try:
                    summary, prompt = await self._store.commit_summary(
                        state.require_user(), folded.text, self.strategy.name, [t.id for t in folded.turns],
                        state.summary_id, state.persona, state.render(folded.text),
                        self.clock.now())
                except UserGone:
                    await self._reopen()
                    self._notify()
                    return None
                except SummaryConflict:
                    log.info("another robot summarized %r meanwhile: its summary is loaded, the fold is redone",
                             self.user)
                    await self._reload()
                    self._notify()
                    return False
                except Exception as exc:  # noqa: BLE001 - a store error keeps the raw turns too
                    log.warning("summary not stored (%s); the %d raw turns stay", exc, len(folded.turns))
                    return False
                state.absorb(summary, prompt, folded.turns, self.strategy.recent_turns)  # committed: now swap
            log.info("summary v%d (%s) absorbed %d turns; role prompt v%d; %d turns stay in the history",
                     summary.version, folded.how, len(summary.absorbed), prompt.version, len(state.history))
            self._notify()
            if self._retrieval_tokens:
                await self.archive.add(folded.turns)  # searchable from the next reply on
            done = {t.id for t in folded.turns}
            # What the chunk left of the plan; swin shows the chunk just folded as context.
            plan = FoldPlan([t for t in plan.turns if t.id not in done],
                            folded.turns if self.strategy.recent_turns else [])
        return True

    def _notify(self) -> None:
        if self._on_update is None or self._state.role_prompt is None:
            return
        try:
            self._on_update(self._state.role_prompt.version, self._state.role_prompt.text, self._state.summary_text)
        except Exception:  # noqa: BLE001 - a listener's bug must not stop the memory
            log.exception("memory on_update callback failed")


