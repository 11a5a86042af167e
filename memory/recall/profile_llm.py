"""The visitor profile's LLM pass: what the persona's patterns miss ("We'll bring the kids
along", "money is tight, say fifteen hundred"), asked of the memory's LLM in the background.

Patterns come first (``memory/recall/profile.py``); the LLM is asked only about an utterance that
speaks of the person (one of the persona's fact words, ``memory.fact_words``), one at a time,
on the memory's own LLM (the embedded backend's summary server, which yields to replies).
Its answer is short "field: value" lines; a value is kept only when it is made of the
customer's own words (at least half of its words are in the utterance), so a model that
invents ("Travellers: a family of five") or answers with something else fills nothing.
Off by default (``memory.profile_llm``): the embedded SmolLM2-135M filled none of the slots
of five test utterances, so there it would only add load.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Awaitable, Callable, Iterable

from memory.core.base import LLMCallable, Message
from memory.core.words import share_of_words_in
from memory.recall.profile import ProfileSlot, clean_value
from prompts import load_chat_prompt

log = logging.getLogger(__name__)

_LINE = re.compile(r"^\s*[-*]?\s*([^:\n]{1,40}?)\s*:\s*(.+?)\s*$")
_EMPTY = {"none", "unknown", "n/a", "na", "not stated", "not mentioned", "not given", "-", "?"}
GROUNDED_SHARE = 0.5  # this share of a value's words must be the customer's


class ProfileAsker:
    """``wanted(text)``: is this utterance worth asking about; ``await ask(text)``: slot
    name -> values the LLM found in it, grounded in its words (one request at a time)."""

    def __init__(self, slots: Iterable[ProfileSlot], llm: LLMCallable, cue: re.Pattern[str]) -> None:
        self.slots = tuple(slots)
        self._llm = llm
        self._cue = cue
        self._by_name = {key: slot for slot in self.slots for key in (slot.label.casefold(), slot.name.casefold())}
        self._one_at_a_time = asyncio.Lock()  # in the order said: a later answer never comes first

    def wanted(self, text: str) -> bool:
        return bool(self.slots) and bool(self._cue.search(text))

    async def ask(self, text: str) -> dict[str, list[str]]:
        async with self._one_at_a_time:
            answer = await self._llm(self.messages(text))
        return self.read(answer, text)

    def messages(self, text: str) -> list[Message]:
        fields = "\n".join(f"- {slot.label}" for slot in self.slots)
        return [{"role": role, "content": part.format(slots=fields, utterance=" ".join(text.split()))}
                for role, part in load_chat_prompt("profile_fill")]

    def read(self, answer: str, text: str) -> dict[str, list[str]]:
        """The answer's "field: value" lines whose field is a slot and whose value is grounded."""
        found: dict[str, list[str]] = {}
        for line in answer.splitlines():
            match = _LINE.match(line)
            if match is None:
                continue
            slot = self._by_name.get(match.group(1).strip().casefold())
            value = clean_value(match.group(2).strip('"\''))
            if slot is None or value.casefold() in _EMPTY:
                continue
            if _grounded(value, text):
                found.setdefault(slot.name, []).append(slot.normalized(value))  # "two grand" -> "$2,000"
            else:
                log.debug("profile: %s %r is not in the customer's words; left out", slot.name, value)
        return found


def _grounded(value: str, text: str) -> bool:
    share = share_of_words_in(value, text)
    if share is None:  # only words every sentence has ("me"): then all of them count
        share = share_of_words_in(value, text, common=frozenset())
    return share is not None and share >= GROUNDED_SHARE


class LateFills:
    """The LLM pass alongside the conversation: ``heard(text, changed)`` for each customer
    utterance (``changed``: the slots its patterns set); the asker's answers come back to
    ``apply`` in the order said, less the slots a later utterance's patterns have set since
    (what is said later wins, and the LLM answers late)."""

    def __init__(self, asker: ProfileAsker, apply: Callable[[dict[str, list[str]]], Awaitable[None]]) -> None:
        self.asker = asker
        self._apply = apply
        self._said = 0  # customer utterances heard: the order things were said in
        self._set_at: dict[str, int] = {}  # slot -> the utterance that last set it
        self._tasks: set[asyncio.Task[None]] = set()

    def heard(self, text: str, changed: Iterable[str]) -> None:
        self._said += 1
        for name in changed:
            self._set_at[name] = self._said
        if self.asker.wanted(text):
            task = asyncio.get_running_loop().create_task(self._fill(text, self._said), name="profile-llm")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Until every question asked so far is answered (benches, tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def cancel(self) -> None:
        """A forget or a close: nothing asked before it may come back."""
        for task in self._tasks:
            task.cancel()

    async def _fill(self, text: str, said: int) -> None:
        try:
            found = await self.asker.ask(text)
        except Exception as exc:  # noqa: BLE001 - a missing profile line is no reason to fail anything
            log.warning("profile: the LLM pass failed (%s: %s); the patterns' values stay", type(exc).__name__, exc)
            return
        fresh = {name: values for name, values in found.items() if self._set_at.get(name, 0) <= said}
        for name in fresh:
            self._set_at[name] = said
        if fresh:
            await self._apply(fresh)
