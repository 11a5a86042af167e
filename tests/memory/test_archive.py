"""Retrieval over the archive: what a summary absorbed is found again for the reply that
needs it, within its room, and only when it matches."""

from __future__ import annotations

from memory.core.base import Message
from memory.core.records import StoredRemark
from memory.core.settings import SpeakerLabels
from memory.recall.archive import ArchiveIndex, segments_of
from tests.memory.conftest import say

FACT = "By the way, my daughter is allergic to peanuts, so please keep that in mind."
OTHER = ["We could look at the temple number {n} in the morning.", "The museum {n} opens at nine.",
         "How far is station {n} from the hotel?", "Is the garden {n} nice in spring?"]


async def vague(messages: list[Message]) -> str:
    """A summarizer that keeps nothing in particular (what a small model often does)."""
    return "The customer and the consultant talked about the trip."


def turn(i: int, role: str, text: str, session: int = 1) -> StoredRemark:
    return StoredRemark(i, role, text, 1_000_000.0 + i, session_id=session)  # type: ignore[arg-type]


def test_segments_are_exchanges_within_a_session():
    turns = [turn(1, "user", "a"), turn(2, "assistant", "b"), turn(3, "assistant", "c"), turn(4, "user", "d"),
             turn(5, "user", "e"), turn(6, "assistant", "f", session=2)]
    assert [s.ids for s in segments_of(turns)] == [(1, 2, 3), (4, 5), (6,)]


async def test_a_fact_from_200_turns_ago_is_found_for_the_reply_that_needs_it(make_memory):
    memory = await make_memory(llm_=vague, update_after_turns=20, min_entity_recall=0, guard_facts=0)
    await say(memory, "Hello, we are planning a trip.", "Welcome! Where to?", FACT, "Noted.")
    for n in range(98):
        await say(memory, OTHER[n % 4].format(n=n), f"Good question about number {n}.")
    await memory.flush()
    assert memory.summary is not None and "peanut" not in memory.role_prompt  # the summary lost it
    assert memory.archive.turn_count >= 200 and len(memory.history) == 0
    last = (await memory.build_messages("Which restaurants are safe for someone with a peanut allergy?"))[-1]
    assert "Earlier in this conversation:\n- (" in last["content"]
    assert "Customer: By the way, my daughter is allergic to peanuts" in last["content"].replace("User:", "Customer:")
    # Nothing matches: no notes at all, the utterance as said.
    assert (await memory.build_messages("Sounds lovely, thanks."))[-1]["content"] == "Sounds lovely, thanks."


async def test_the_room_and_the_score_bound_what_is_shown(make_memory):
    memory = await make_memory(llm_=vague, retrieval_tokens=40, min_entity_recall=0, guard_facts=0)
    await say(memory, FACT, "Noted, no peanuts.", "We like temples.", "Kyoto has many.")
    await memory.flush()
    memory.archive.min_score = 0.0  # two exchanges: every BM25 score is low
    found = await memory.archive.search("peanuts allergy", 40)
    assert len(found) == 1 and found[0].tokens <= 40
    assert await memory.archive.search("peanuts allergy", 10) == []  # does not fit: left out, not cut
    strict = ArchiveIndex(SpeakerLabels(), min_score=50.0)
    await strict.replace(await memory._store.turns(memory._state.require_user()))
    assert await strict.search("peanuts allergy", 300) == []  # a weak match is no match


async def test_what_is_still_in_the_history_is_not_repeated(make_memory):
    memory = await make_memory(llm_=vague, min_entity_recall=0, guard_facts=0)
    await say(memory, FACT, "Noted.")
    last = (await memory.build_messages("Any peanuts in that dish?"))[-1]["content"]
    assert "Earlier in this conversation" not in last  # the turn is in the history above it
