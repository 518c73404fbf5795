"""Which way a memory search finds its candidates by meaning (R41,
:func:`server.memory_search.ranking.path_of`): by the embedding's bits for an agent with few
versions, on the HNSW index for one with many, the answer kept a while and the same
records found either way."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import event, select, text

from server.domain.visibility import Reader
from server.memory_search import ranking as memory_ranking
from server.models import MemoryVersion, table
from server.storage.nearest import BITS_AT_LEAST, bits_below
from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api


@pytest.fixture(autouse=True)
def _one_node() -> None:
    if os.environ.get("AGENT_MEMORY_TEST_CITUS"):
        pytest.skip("on Citus every agent's versions are ranked by bits (docs/scaling.md)")


async def _agent_with_versions(api: Api, extra: int) -> tuple[Scenario, Reader]:
    """An agent with one committed record and ``extra`` more versions of records like it
    (their vectors near its own), written by SQL (the same agent, session, turn and
    execution)."""
    s = Scenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    record = await s.committed("the first note", session, scope="AGENT")
    async with api.database.session() as db:
        await db.execute(text("SET LOCAL statement_timeout = 0"))  # each joins the HNSW graph
        await db.execute(
            text(
                "WITH made AS (SELECT gen_random_uuid() AS record, gen_random_uuid() AS version,"
                " n FROM generate_series(1, :extra) AS n),"
                " records AS (INSERT INTO memory_records (id, agent_id, session_id, scope, status,"
                " preview, pinned, current_version_id, turn_id, committed)"
                " SELECT made.record, r.agent_id, r.session_id, r.scope, r.status, false, false,"
                " made.version, r.turn_id, true FROM made, memory_records r WHERE r.id = :record)"
                " INSERT INTO memory_versions (id, record_id, agent_id, number, status, summary,"
                " kind, labels, embedding, execution_id, agent_version_id, session_id, turn_id)"
                " SELECT made.version, made.record, v.agent_id, 1, v.status,"
                " 'note ' || made.n, v.kind, v.labels, l2_normalize((SELECT"
                " array_agg(x + (random() - 0.5) / 20 ORDER BY i) FROM unnest(CAST(v.embedding"
                " AS real[])) WITH ORDINALITY AS e(x, i) WHERE made.n > 0)::vector),"
                " v.execution_id,"
                " v.agent_version_id, v.session_id, v.turn_id"
                " FROM made, memory_versions v WHERE v.record_id = :record"
            ),
            {"extra": extra, "record": uuid.UUID(record)},
        )
        await db.commit()
    turn = await s.turn(session)
    reader = Reader.for_turn(
        agent_id=uuid.UUID(s.agent_id),
        session_id=uuid.UUID(session),
        turn_id=uuid.UUID(turn),
        preview=False,
        read_scopes=("session", "agent"),
        write_scopes=("session", "agent"),
    )
    return s, reader


async def test_r41_few_versions_are_ranked_by_bits_many_on_the_index(api: Api) -> None:
    """R41: an agent with at most bits_below versions (never less than BITS_AT_LEAST) is
    ranked by its bits, one with more on the HNSW index; each finds the same ten versions
    as exact ranking, and the answer is asked once, then remembered."""
    async with api.database.session() as db:
        below = await db.scalar(select(bits_below(table(MemoryVersion))))
    assert below is not None and below >= BITS_AT_LEAST
    _, few = await _agent_with_versions(api, 10)
    _, many = await _agent_with_versions(api, below + 100)
    memory_ranking.forget()
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    engine = api.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        async with api.database.session() as db:
            assert await memory_ranking.path_of(db, few.agent_id) == "bits"
            assert await memory_ranking.path_of(db, many.agent_id) == "index"
            asked = len(statements)
            assert await memory_ranking.path_of(db, many.agent_id) == "index"
            assert len(statements) == asked == 2  # remembered: not asked again
    finally:
        event.remove(engine, "before_cursor_execute", count)
    vector, _ = await api.embedder.embed_one("the first note")
    for reader in (few, many):
        found = {}
        for path in (None, "exact"):
            async with api.database.session() as db:
                query = memory_ranking.MemoryQuery("note", vector, "vector", 0.0, 10, path=path)
                found[path] = [f.version.id for f in await memory_ranking.ranked(db, reader, query)]
        assert found[None] == found["exact"] and len(found[None]) == 10, (reader, found)


async def test_r41_the_ranking_is_planned_once_a_connection_and_leaves_no_setting(
    api: Api,
) -> None:
    """R41: searched again and again on one connection, the ranking statement runs on one
    generic plan (prepared by the driver, never planned again for the call's values), the
    same records found each time; after each search the transaction's later statements
    are planned as before it (the setting it runs under is back to the session's)."""
    _, reader = await _agent_with_versions(api, 30)
    vector, _ = await api.embedder.embed_one("the first note")
    query = memory_ranking.MemoryQuery("first note", vector, "hybrid", 0.0, 10)
    async with api.database.session() as db:
        before = await db.scalar(text("SELECT current_setting('plan_cache_mode')"))
        found = []
        for _ in range(8):
            found.append([f.version.id for f in await memory_ranking.ranked(db, reader, query)])
            assert await db.scalar(text("SELECT current_setting('plan_cache_mode')")) == before
        plans = (
            await db.execute(
                text(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                    " WHERE statement LIKE 'WITH wcount%'"
                )
            )
        ).all()
        await db.commit()
    assert all(f == found[0] for f in found) and len(found[0]) == 10
    assert len(plans) == 1 and plans[0][0] > 0 and plans[0][1] == 0, plans
