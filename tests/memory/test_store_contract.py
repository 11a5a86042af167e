"""The store contract, one suite run against both stores: a SQLite file and a database on a
real PostgreSQL server started by this test session."""

from __future__ import annotations

import pytest

from memory.core.base import Remark
from memory.stores.location import parse_location
from memory.stores.opening import open_store
from memory.stores.protocol import SummaryConflict, UserGone
from tests.memory.backends import pg_server, store_where  # noqa: F401 - fixtures: both backends


@pytest.fixture
async def store(store_where):
    opened = open_store(parse_location(store_where))
    await opened.connect()
    yield opened
    await opened.close()


async def _reopened(store_where: str):
    again = open_store(parse_location(store_where))
    await again.connect()
    return again


async def test_a_user_is_created_once_and_listed(store):
    first = await store.open_user("ken", now=100.0)
    again = await store.open_user("ken", now=200.0)
    assert first.user_id == again.user_id and first.history == [] and first.summary is None
    assert await store.has_user("ken") and not await store.has_user("mia")
    [ken] = await store.visitors()
    assert (ken.name, ken.first_seen, ken.turns, ken.summary_version) == ("ken", 100.0, 0, 0)


async def test_turns_are_durable_in_order_with_their_session(store, store_where):
    user = (await store.open_user("ken", now=1.0)).user_id
    session = await store.start_session(user, 1.0)
    said = [await store.add_turn(user, session, Remark("user" if i % 2 == 0 else "assistant", f"line {i}",
                                                       ts=10.0 + i, turn_id=f"t{i // 2}")) for i in range(4)]
    assert [t.id for t in said] == sorted(t.id for t in said) and len({t.id for t in said}) == 4
    await store.end_session(session, 20.0)
    await store.close()
    again = await _reopened(store_where)  # another process, later
    try:
        state = await again.open_user("ken")
        assert [(t.text, t.role, t.loop_turn_id, t.session_id) for t in state.history] == [
            ("line 0", "user", "t0", session), ("line 1", "assistant", "t0", session),
            ("line 2", "user", "t1", session), ("line 3", "assistant", "t1", session)]
        [ken] = await again.visitors()
        assert ken.last_seen == 20.0 and ken.turns == 4
    finally:
        await again.close()


async def test_a_summary_absorbs_its_turns_and_brings_its_role_prompt(store):
    user = (await store.open_user("ken")).user_id
    turns = [await store.add_turn(user, None, Remark("user", f"fact {i}")) for i in range(3)]
    first, prompt = await store.commit_summary(user, "Ken said two facts.", "rsum", [t.id for t in turns[:2]],
                                               None, "Persona.", "Persona. Ken said two facts.", 5.0)
    assert first.version == 1 and first.absorbed == tuple(t.id for t in turns[:2])
    assert prompt.version == 1 and prompt.reason == "summary" and prompt.summary_id == first.id
    second, prompt2 = await store.commit_summary(user, "Three facts.", "rsum", [turns[2].id], first.id,
                                                 "Persona.", "Persona. Three facts.", 6.0)
    state = await store.open_user("ken")
    assert state.summary == second and second.predecessor_id == first.id and state.history == []
    assert state.role_prompt == prompt2 and prompt2.version == 2
    assert (await store.visitors())[0].summary_version == 2


async def test_a_summary_folded_onto_a_replaced_version_is_refused(store):
    """Optimistic versioning: robot B folded onto v1 while robot A committed v2."""
    user = (await store.open_user("ken")).user_id
    turns = [await store.add_turn(user, None, Remark("user", f"fact {i}")) for i in range(3)]
    v1, _ = await store.commit_summary(user, "v1", "rsum", [turns[0].id], None, "P", "P v1", 1.0)
    await store.commit_summary(user, "v2 by robot A", "rsum", [turns[1].id], v1.id, "P", "P v2", 2.0)
    with pytest.raises(SummaryConflict):
        await store.commit_summary(user, "v2 by robot B", "rsum", [turns[2].id], v1.id, "P", "P v2b", 3.0)
    state = await store.open_user("ken")
    assert state.summary.text == "v2 by robot A" and [t.id for t in state.history] == [turns[2].id]
    assert [p.text for p in [state.role_prompt]] == ["P v2"]


async def test_writes_for_a_forgotten_user_raise_user_gone(store):
    user = (await store.open_user("ken")).user_id
    session = await store.start_session(user, 1.0)
    await store.add_turn(user, session, Remark("user", "My name is Ken."))
    report = await store.forget_user("ken")
    assert (report.turns, report.sessions) == (1, 1)
    for write in (lambda: store.add_turn(user, session, Remark("user", "again")),
                  lambda: store.start_session(user, 2.0),
                  lambda: store.add_role_prompt(user, "P", None, "P", "persona", 2.0),
                  lambda: store.commit_summary(user, "s", "rsum", [], None, "P", "P s", 2.0)):
        with pytest.raises(UserGone):
            await write()
    assert not await store.has_user("ken") and await store.visitors() == []


async def test_a_user_dump_loads_into_another_store_with_its_links(store, tmp_path):
    user = (await store.open_user("ken", now=1.0)).user_id
    session = await store.start_session(user, 1.0)
    turns = [await store.add_turn(user, session, Remark("user", f"fact {i}", ts=float(i))) for i in range(3)]
    v1, _ = await store.commit_summary(user, "v1", "rsum", [turns[0].id], None, "P", "P v1", 4.0)
    await store.commit_summary(user, "v2", "rsum", [turns[1].id], v1.id, "P", "P v2", 5.0)
    dump = await store.dump_user("ken")
    copy = open_store(parse_location(tmp_path / "copy.sqlite3"))
    try:
        await copy.load_dump(dump)
        state = await copy.open_user("ken")
        assert state.summary.text == "v2" and [t.text for t in state.history] == ["fact 2"]
        assert (await copy.dump_user("ken")).counts() == dump.counts() == (1, 3, 2, 2)
        with pytest.raises(ValueError, match="already in"):
            await copy.load_dump(dump)
    finally:
        await copy.close()
