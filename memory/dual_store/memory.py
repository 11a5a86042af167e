"""The dual-store memory: current-prompt history + a recursive summary that rewrites the
role prompt in the background ("A Summarized History-based Dialogue System for
Amnesia-Free Prompt Updates").

``DualStoreMemory`` is the seam the loop uses and the one writer of a user's memory. Its
parts, one job each: ``persistence.py`` (the store, and its mirror in RAM that replies are
built from), ``summaries.py`` (plan, fold, commit, swap: what makes it amnesia-free),
``memory/recall/reply_prompt.py`` (each reply's prompt and notes under the token budget),
and the visitor profile (``memory/recall/profile.py``, with its optional LLM pass).
A reply never waits for a summary: ``build_messages`` only reads the in-memory state.
"""

from __future__ import annotations

import logging

from memory.core.base import LLMCallable, Message, Remark
from memory.core.clock import Clock, SystemClock
from memory.core.records import StoredRemark, SummaryVersion
from memory.core.settings import LlmLimits, SummaryPolicy
from memory.core.tokens import HeuristicCounter, TokenCounter
from memory.dual_store.mirror import UserMirror
from memory.dual_store.persistence import OnStoreError, OnUpdate, Persistence
from memory.dual_store.summaries import Summaries, SwapWhen
from memory.recall.archive import DEFAULT_MIN_SCORE
from memory.recall.profile import OPEN, PLAN, Profile, ProfileNews, make_slots
from memory.recall.profile_llm import LateFills, ProfileAsker
from memory.recall.reply_prompt import ReplyPrompt, asks_for_recap
from memory.stores.protocol import MemoryStore
from memory.summary.folding import Folder, SummaryStats
from memory.summary.strategies import make_strategy
from memory.summary.summarizer import Summarizer

log = logging.getLogger(__name__)

__all__ = ["DualStoreMemory", "OnStoreError", "OnUpdate", "SwapWhen"]


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
                 profile_llm: bool = False, swap_when: SwapWhen | None = None) -> None:
        """``swap_when``: whether a folded summary's role prompt may be swapped in now (the
        robot says no while a reply's prompt is being made, ``memory/dual_store/summaries.py``)."""
        self.policy = policy
        self.user = user
        self.clock: Clock = clock or SystemClock()
        self.strategy = make_strategy(policy.strategy, policy.swin_window, policy.swin_stride)
        self.prompt = ReplyPrompt(policy.labels, token_budget=token_budget, retrieval_tokens=retrieval_tokens,
                                  min_score=retrieval_min_score, count_tokens=count_tokens)
        self.budget, self.archive = self.prompt.budget, self.prompt.archive
        limits = limits or LlmLimits()
        # The summary is also the next request's "previous memory": it may take a quarter of
        # the model's context, so a chunk of turns always fits beside it.
        self.summarizer = Summarizer(policy, min(self.budget.summary_max_tokens, limits.context_tokens // 4))
        # The visitor profile's slots (the persona's), read in its language.
        self._slots = make_slots(policy.profile, policy.vocabulary, policy.language, policy.knowledge_names)
        self._state = UserMirror(persona_prompt)
        self._asked: set[str] = set()  # the profile slots whose question was asked in this visit
        self._store = store
        self._persist = Persistence(
            user=user, store=store, state=self._state, clock=self.clock, recent_turns=self.strategy.recent_turns,
            slots=self._slots, on_loaded=self.prompt.index if retrieval_tokens else None,
            on_drained=lambda: self.scheduler.check(), on_update=on_update, on_store_error=on_store_error)
        self.folder = Folder(self.summarizer, self.strategy, llm, policy, limits, count_tokens or HeuristicCounter())
        self._summaries = Summaries(policy=policy, clock=self.clock, persistence=self._persist, folder=self.folder,
                                    strategy=self.strategy, budget=self.budget, on_absorbed=self.prompt.absorbed,
                                    swap_when=swap_when)
        self.scheduler = self._summaries.scheduler
        # What the patterns miss, asked of the LLM in the background (memory/recall/profile_llm.py),
        # about what the person says of themselves: the fact guard's words.
        asker = ProfileAsker(self._slots, llm, self.summarizer.guard.pattern) if profile_llm and self._slots else None
        self._late_fills = LateFills(asker, self._fill_profile) if asker else None
        self._owns_store = owns_store  # False: one store shared by every visitor's memory
        self._close_timeout_s = close_timeout_s
        self._closed = False

    # --- state, read-only -----------------------------------------------------------------

    @property
    def role_prompt(self) -> str:
        return self._state.role_prompt.text if self._state.role_prompt else self._state.render(None)

    @property
    def persona_prompt(self) -> str:
        """The persona's part of the role prompt: its instructions, never a source of a reply."""
        return self._state.persona

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

    @property
    def profile_text(self) -> str:
        """The visitor profile's lines ("" if empty), for a reply's notes."""
        return self._state.profile.render(self._slots)

    @property
    def profile(self) -> dict[str, list[str]]:
        return self._state.profile.to_dict()

    @property
    def profile_lines(self) -> list[tuple[str, str]]:
        """The profile as the persona labels it: [("Name", "Ken"), ("Places", "Kyoto, Nara")]."""
        return self._state.profile.labelled(self._slots)

    # --- the seam -------------------------------------------------------------------------

    async def open(self, *, offline_ok: bool = False) -> None:
        """Load the user's memory (create it on first use) and open a session; with
        ``offline_ok`` a store that is away is no error (``Persistence.open``)."""
        await self._persist.open(offline_ok=offline_ok)

    async def notes_for(self, user_text: str, retrieval_tokens: int | None = None, knowledge: str = "") -> str:
        """This reply's notes (``ReplyPrompt.notes``): ``knowledge``, the shop's entries found for
        the utterance, shares the retrieval room; ``retrieval_tokens`` overrides the setting."""
        shown = {t.id for t in self._state.history} | {t.id for t in self._state.recent}
        return await self.prompt.notes(user_text, shown, self.profile_text, retrieval_tokens, knowledge)

    def recap(self, user_text: str) -> str:
        """The visitor profile as words to say, when ``user_text`` asks for a recap of the
        plan ("Can you remind me what we planned so far?"); "" otherwise or when it is empty."""
        return self._state.profile.spoken(self._slots) if asks_for_recap(user_text) else ""

    def news(self, user_text: str) -> ProfileNews:
        """What ``user_text`` gives the visitor profile that it lacks, before it is recorded (one
        trial update; the visitor's own profile is untouched): the new values as words to say
        ("travellers 2 adults; when April"; a name is not said back: "Noted: name Ken" is no way
        to greet anyone), the name when it is given or a new one, and the ``ask`` of the first
        profile slot still empty after these words that was not asked before in this visit."""
        trial = Profile.from_dict(self._state.profile.to_dict())
        changed = trial.update(self._slots, user_text)
        said = {s.name for s in self._slots if s.name in changed and s.type != "name"}
        names = [trial.values[s.name][-1] for s in self._slots if s.type == "name" and s.name in changed]
        ask = trial.to_ask(self._slots, self._asked)
        question, slot = (ask.ask or "", ask.name) if ask is not None else ("", "")
        return ProfileNews(noted=trial.spoken(self._slots, only=said) if said else "", name=names[0] if names else "",
                           question=question, question_slot=slot)

    def asked(self, slot: str) -> None:
        """The robot asked ``slot``'s question: not again in this visit."""
        self._asked.add(slot)

    def preview(self, user_text: str) -> dict[str, list[str]]:
        """The profile as these words would leave it, before they are recorded (one trial update)."""
        trial = Profile.from_dict(self._state.profile.to_dict())
        trial.update(self._slots, user_text)
        return trial.to_dict()

    @property
    def consultation(self) -> dict[str, list[str]]:
        """The visitor's plan (offer names, in the order chosen) and the questions left for staff,
        kept with the profile (``_plan``, ``_open``): stored, exported and forgotten with it."""
        values = self._state.profile.values
        return {"plan": list(values.get(PLAN, [])), "open": list(values.get(OPEN, []))}

    async def save_consultation(self, plan: list[str] | None = None, open_questions: list[str] | None = None) -> None:
        values = self._state.profile.values
        for key, new in ((PLAN, plan), (OPEN, open_questions)):
            if new is not None:
                if new:
                    values[key] = list(new)
                else:
                    values.pop(key, None)
        self._persist.profile_unsaved = True
        await self._persist.save_profile()

    async def build_messages(self, user_text: str, retrieval_tokens: int | None = None,
                             knowledge: str = "") -> list[Message]:
        notes = await self.notes_for(user_text, retrieval_tokens, knowledge)
        return await self.prompt.messages(self.role_prompt, self._state.history, user_text, notes)

    async def prompt_prefix(self) -> list[Message]:
        """What the next reply's request begins with: the role prompt and the history."""
        return await self.prompt.prefix(self.role_prompt, self._state.history)

    async def record(self, turn: Remark) -> None:
        """Durable on return while the store is up; while it is away, kept in RAM (in the
        prompt at once) and written when it is back."""
        if turn.role == "user" and self._slots:
            changed = self._state.profile.update(self._slots, turn.text)
            self._persist.profile_unsaved |= bool(changed)  # in the next prompt at once; stored below
            if self._late_fills is not None:
                self._late_fills.heard(turn.text, changed)
        if await self._persist.record(turn):
            await self._persist.save_profile()
            self.scheduler.check()

    async def _fill_profile(self, found: dict[str, list[str]]) -> None:
        """Values the LLM pass found (``LateFills``): into the profile and the store."""
        if not self._closed and self._state.profile.put(self._slots, found):
            self._persist.profile_unsaved = True
            await self._persist.save_profile()

    async def set_persona_prompt(self, prompt: str) -> None:
        """A new persona (or new background information in it): both stores are kept."""
        await self._persist.set_persona(prompt)

    async def start(self) -> None:
        if self._state.user_id is None:
            await self.open(offline_ok=True)
        self.scheduler.start()

    async def aclose(self, hurried: bool = False) -> None:
        """Stop the timer; give a summary in progress a moment (none when ``hurried``: the
        process is stopping), then cancel it (its turns stay raw and are folded after the next
        start). Pending turns are not summarized here: call ``flush()`` first for that."""
        if self._closed:
            return
        self._closed = True
        if self._late_fills is not None:
            self._late_fills.cancel()  # a profile line asked of the LLM is not worth a wait
        await self.scheduler.aclose(0.0 if hurried else self._close_timeout_s)
        await self._persist.close(self._owns_store)

    # --- extras for the controller, the simulator and tests --------------------------------

    async def flush(self) -> bool:
        """Summarize everything pending now (session end; swin's partial window) and wait.
        True when nothing is left pending."""
        return await self.scheduler.flush()

    async def wait_stored(self) -> None:
        """Until the turns kept in RAM while the store was away are written."""
        await self._persist.unwritten.wait()

    @property
    def unwritten(self) -> int:  # turns said while the store was away, not written yet
        return len(self._persist.unwritten)

    async def wait_idle(self) -> None:  # until no summary (or profile question) is in progress
        await self.scheduler.wait_idle()
        if self._late_fills is not None:
            await self._late_fills.wait()

    async def forget_user(self, user: str) -> str:
        """Delete all of a user's data; if it is this memory's user, start it afresh."""
        if user != self.user:
            return str(await self._store.forget_user(user))
        self._persist.generation += 1  # before the cancel: the summary must not write back meanwhile
        if self._late_fills is not None:
            self._late_fills.cancel()  # nor an answer about what the forgotten visitor said
        await self.scheduler.cancel()
        return await self._persist.forget()

    async def restart_if_gone(self) -> bool:
        """A forget made by another process (``robot memory forget``) is honoured before the
        next reply is built, not at the next write: True when the user had to start afresh."""
        return await self._persist.restart_if_gone()
