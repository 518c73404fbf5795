"""What a runtime's requests send to PostgreSQL and which modules they pass through,
counted (bench/anatomy.py: libpq's trace of the connection, so a statement counts however
it is sent), and a search's one statement against the ranking alone (R12, R41, R43).

Counted through ``schema.execute``: over HTTP each request also sends its token's lookup
(``tests/http/test_request_path.py``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text

from bench.anatomy import counted, followed
from server.database import Database
from server.domain.config import DEFAULT_MIN_SCORE
from server.memory_search import ranking as memory_ranking
from server.settings import Settings
from tests.api.scenario import BEGIN, COMMIT, Scenario, memory_config
from tests.conftest import Api

SEARCH = """
mutation($turn: ID!, $q: String!, $limit: Int) {
  searchMemory(input: {turnId: $turn, query: $q, limit: $limit}) {
    execution { id status output }
    results { score cosine lexical version { id summary createdAt } record { id scope } }
  }
}"""
RECALL = (
    """mutation($t: ID!, $q: String!) { recall(input: {turnId: $t, query: $q}) { recorded } }"""
)
ADD = """mutation($t: ID!, $s: String!) {
  addMemory(input: {turnId: $t, summary: $s}) { memories { id } } }"""
NOTES = [
    "The quarterly budget report is due on Friday",
    "Pack the passport for the flight to Lisbon",
    "The garden hose leaks near the tap",
    "Budget meeting moved to Thursday morning",
]


# On Citus a search keeps its ranking as one task routed to the agent's shard, apart from
# what the call records (docs/scaling.md, "Distributing by agent"): what these count is
# the single node's one statement.
single_node = pytest.mark.skipif(
    bool(os.environ.get("AGENT_MEMORY_TEST_CITUS")),
    reason="the single node's one search statement; Citus routes the ranking alone",
)


@pytest.fixture
async def own_database(settings: Settings) -> AsyncIterator[Database]:
    """A pool of its own: a server process that has seen no call of the turns yet."""
    db = Database(settings.model_copy(update={"pool_size": 1}))
    await db.connect()
    yield db
    await db.dispose()


async def _world(api: Api) -> tuple[Scenario, str]:
    s = Scenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    turn = await s.turn(session)
    for note in NOTES:
        await s.add(turn, note)
    await s.commit(turn)
    return s, session


@single_node
async def test_a_search_is_one_statement_between_its_generic_plan_and_its_commit(
    api: Api,
) -> None:
    """A search in a turn this process knows sends the generic plan's setting, the one
    statement that holds the turn, ranks and records, and COMMIT: nothing else, whatever
    the result size."""
    s, session = await _world(api)
    turn = await s.turn(session)
    await api.ok(SEARCH, turn=turn, q="warm the statements", limit=1)
    for limit in (1, 2):
        with counted(api.database) as wire:
            found = (await api.ok(SEARCH, turn=turn, q="budget report", limit=limit))[
                "searchMemory"
            ]
        assert len(found["results"]) == limit
        # then the answer's fields: showing the execution's output reads its turn's
        # status (staged memory, R12), in a transaction of its own
        call = wire.statements[: wire.statements.index("COMMIT") + 1]
        assert len(call) == 3, wire.statements
        assert call[0].startswith("SET LOCAL plan_cache_mode")
        assert len(wire.statements) <= 5, wire.statements


@single_node
async def test_a_search_in_a_turn_new_to_the_process_reads_its_scope_first(
    api: Api, own_database: Database
) -> None:
    """A process that has not seen the turn reads its owner and scope, and its agent's
    search path, once; then it searches as above: its second search sends only the
    three."""
    s, session = await _world(api)
    turn = await s.turn(session)
    other = Api(api.schema, own_database, api.embedder, api.settings)
    with counted(own_database) as first:
        await other.ok(SEARCH, turn=turn, q="budget report", limit=2)
    with counted(own_database) as second:
        await other.ok(SEARCH, turn=turn, q="the garden", limit=2)
    assert len(first.statements) == len(second.statements) + 3, first.statements
    # the search, then its output's turn status read for the answer (R12)
    assert len(second.statements) <= 5, second.statements
    assert second.statements.index("COMMIT") == 2, second.statements


@single_node
async def test_r41_r43_the_search_records_what_the_ranking_alone_finds(api: Api) -> None:
    """The one statement returns the records, in the order and with the scores, of the
    ranking run alone for the same query; its execution's output names them as every
    recorded search does (``createdAt`` as the API writes it, with or without
    microseconds), and its RETRIEVED uses follow the ranks."""
    s, session = await _world(api)
    async with api.database.session() as db:  # a version created on a whole second
        await db.execute(
            text(
                "UPDATE memory_versions SET created_at = date_trunc('second', created_at)"
                " WHERE summary = :s"
            ),
            {"s": NOTES[3]},
        )
        await db.commit()
    turn = await s.turn(session)
    query = "budget meeting report"
    found = (await api.ok(SEARCH, turn=turn, q=query, limit=4))["searchMemory"]
    results = found["results"]
    vector, _ = await api.embedder.embed_one(query)
    async with api.database.session() as db:
        alone = await memory_ranking.ranked(
            db,
            _reader(s, session, turn),
            memory_ranking.MemoryQuery(query, vector, "hybrid", DEFAULT_MIN_SCORE, 4),
        )
    assert [r["version"]["id"] for r in results] == [str(f.version.id) for f in alone]
    assert [r["score"] for r in results] == pytest.approx(
        [f.score for f in alone], rel=1e-6
    )  # recency: their own now
    output = found["execution"]["output"]["records"]
    assert [o["version"] for o in output] == [r["version"]["id"] for r in results]
    assert [o["createdAt"] for o in output] == [r["version"]["createdAt"] for r in results]
    assert any("." not in o["createdAt"] for o in output)  # the whole second
    assert [(o["id"], o["scope"], o["score"]) for o in output] == [
        (r["record"]["id"], r["record"]["scope"], r["score"]) for r in results
    ]
    async with api.database.session() as db:
        uses = (
            await db.execute(
                text(
                    "SELECT memory_version_id, rank FROM output_uses WHERE execution_id = :e"
                    " ORDER BY rank"
                ),
                {"e": uuid.UUID(found["execution"]["id"])},
            )
        ).all()
    assert [(str(v), r) for v, r in uses] == [
        (r["version"]["id"], i) for i, r in enumerate(results, 1)
    ]


def _reader(s: Scenario, session: str, turn: str) -> Any:
    from server.domain.visibility import Reader

    return Reader.for_turn(
        agent_id=uuid.UUID(s.agent_id),
        session_id=uuid.UUID(session),
        turn_id=uuid.UUID(turn),
        preview=False,
        read_scopes=("session", "agent"),
        write_scopes=("session", "agent"),
    )


async def test_a_turn_sends_a_bounded_number_of_statements(api: Api) -> None:
    """begin, recall, add and commit, counted: the COMMIT of each request among them."""
    _, session = await _world(api)
    with counted(api.database) as wire:
        turn = (await api.ok(BEGIN, session=session))["beginTurn"]["turn"]["id"]
        await api.ok(RECALL, t=turn, q="what about the budget?")
        await api.ok(ADD, t=turn, s="The budget report went out on Friday")
        await api.ok(COMMIT, turn=turn)
    assert sum(st == "COMMIT" for st in wire.statements) == 4
    # 19, and the agent's search path, asked once a minute (memory_search.ranking.path_of)
    assert len(wire.statements) <= 20, wire.statements


@single_node
async def test_a_search_passes_through_few_modules(api: Api) -> None:
    """From its resolver down, a search enters few modules of the project and seldom goes
    back into one it has left (bench/anatomy.py says what counts)."""
    s, session = await _world(api)
    turn = await s.turn(session)
    await api.ok(SEARCH, turn=turn, q="warm", limit=1)
    with followed("resolvers/search.py", "search_memory") as path:
        await api.ok(SEARCH, turn=turn, q="the flight to Lisbon", limit=2)
    assert path.modules[0] == "resolvers/search.py"
    assert len(path.modules) <= 13, path.modules
    assert len(path.returns) <= 6, path.returns  # on_citus asked by the tool, then by the statement
