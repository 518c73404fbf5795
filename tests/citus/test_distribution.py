"""The schema on a Citus coordinator and two workers, placed by ``agent-memory migrate
--citus`` (docs/scaling.md, "Distributing by agent"): every per-agent table distributed
by ``agent_id`` in one colocation group, the global tables on every node, a second run
changing nothing, a later migration's table placed as it is created, and an agent's
memory search and history search each sent to the one shard that holds the agent's rows
(R10: nothing crosses agents; EXPLAIN shows one task, no fan-out)."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL

from server import migrate
from server.citus.layout import GLOBAL_TABLES
from server.database import Database
from server.embedding import Embedder
from server.memory_search import ranking as memory_ranking
from server.settings import Settings
from tests.api.history_scenario import HistoryScenario, agent, history_config, user
from tests.api.review_scenario import ReviewScenario, decide
from tests.api.scenario import DELETE, FAIL, HELPER, INVOKE, Scenario, memory_config
from tests.api.test_recall import RECALL
from tests.conftest import Api

SEARCH_MEMORY = """
mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { results { version { summary } } }
}"""


@pytest.fixture(scope="module")
def engine(database_url: URL) -> Iterator[Engine]:
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


def _placement(engine: Engine) -> dict[str, tuple[str, str | None, int]]:
    """Each table Citus knows: its kind, distribution column and colocation group."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT logicalrelid::regclass::text AS name, partmethod,"
                " CASE WHEN partmethod = 'h'"
                "      THEN column_to_column_name(logicalrelid, partkey) END AS column,"
                " colocationid FROM pg_dist_partition"
            )
        )
        return {row.name: (row.partmethod, row.column, row.colocationid) for row in rows}


def _schema_tables(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
        return {name for (name,) in rows} - {"alembic_version"}


def test_every_table_is_distributed_by_agent_or_on_every_node(engine: Engine) -> None:
    placed = _placement(engine)
    assert set(placed) == _schema_tables(engine)
    reference = {name for name, (method, _, _) in placed.items() if method == "n"}
    assert reference == GLOBAL_TABLES
    distributed = {name: p for name, p in placed.items() if name not in reference}
    assert {column for _, column, _ in distributed.values()} == {"agent_id"}
    assert len({group for _, _, group in distributed.values()}) == 1  # colocated


def test_migrate_citus_again_places_nothing(database_url: URL, engine: Engine) -> None:
    before = _placement(engine)
    migrate.upgrade(database_url)
    assert migrate.distribute(database_url) == []
    assert _placement(engine) == before


def test_a_later_migrations_table_is_placed_as_it_is_created(citus_cluster: Any) -> None:
    """A database placed at 0007, then upgraded: migration 0008 creates
    ``memory_reviews`` with foreign keys to turns, sessions and executions, which Citus
    takes only between distributed tables and only with the agent in them. (Upgraded to
    0008 only: the data steps of 0009-0012 read distributed tables in ways Citus does not
    run, docs/scaling.md.)"""
    name = f"agent_memory_upgrade_{uuid.uuid4().hex[:8]}"
    url = citus_cluster.create_database(name, migrate=False)
    engine = create_engine(url)
    try:
        migrate.upgrade(url, "0007")
        assert not migrate.on_citus(url)
        assert "memory_versions" in migrate.distribute(url)
        assert migrate.on_citus(url)
        migrate.upgrade(url, "0008")
        placed = _placement(engine)
        assert placed["memory_reviews"][:2] == ("h", "agent_id")
        assert placed["memory_reviews"][2] == placed["turns"][2]
        with engine.connect() as conn:
            keys = dict(
                conn.execute(
                    text(
                        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                        " WHERE conrelid = 'memory_reviews'::regclass AND contype = 'f'"
                    )
                ).all()
            )
        assert keys["memory_reviews_turn_id_fkey"].startswith(
            "FOREIGN KEY (agent_id, turn_id) REFERENCES turns(agent_id, id)"
        )
        assert migrate.distribute(url) == []
    finally:
        engine.dispose()
        citus_cluster.drop_database(name)


class _Statements:
    """The statements (and their parameters) the server sends while the block runs."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.sent: list[tuple[str, Any]] = []

    def __enter__(self) -> _Statements:
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        self.sent.append((statement, params))

    def the_one(self, *words: str) -> tuple[str, Any]:
        found = [s for s in self.sent if all(w in s[0] for w in words)]
        assert len(found) == 1, [s[0][:80] for s in self.sent]
        return found[0]


async def _plan(api: Api, statement: str, params: Any) -> str:
    assert api.database.engine is not None
    async with api.database.engine.connect() as conn:
        rows = await conn.exec_driver_sql("EXPLAIN " + statement, params)
        return "\n".join(row[0] for row in rows)


def _one_shard(plan: str) -> None:
    """One Citus task for the whole statement: routed to the agent's shard, no subplan
    run apart, no fan-out."""
    assert plan.lstrip().startswith("Custom Scan (Citus Adaptive)"), plan
    assert re.findall(r"Task Count: (\d+)", plan) == ["1"], plan
    assert "Distributed Subplan" not in plan, plan


async def test_an_agents_memory_search_is_routed_to_one_shard(api: Api) -> None:
    """R10, R41: the ranking statement searchMemory runs names the reader's agent in every
    table it reads, and Citus sends it whole to that agent's shard."""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"]))
    session = await s.session()
    for summary in ("Invoices go out on the first", "The customer prefers email"):
        await s.committed(summary, session, scope="AGENT")
    turn = await s.turn(session)
    assert api.database.engine is not None
    with _Statements(api.database.engine.sync_engine) as seen:
        data = await api.ok(SEARCH_MEMORY, turn=turn, q="when do invoices go out")
    assert data["searchMemory"]["results"][0]["version"]["summary"].startswith("Invoices")
    _one_shard(await _plan(api, *seen.the_one("FROM memory_versions", "ORDER BY top.score")))
    async with api.database.session() as db:  # a small agent: by bits
        assert await memory_ranking.path_of(db, uuid.UUID(s.agent_id)) == "bits"


async def test_a_large_agents_memory_search_walks_its_shards_index_as_one_task(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R10, R41: past the bound of the bits path, an agent's search takes the HNSW index
    of its own shard, the filter naming the agent in the same query (``filtered``): still
    one task, with the results of the bits path. (The bound is lowered here; the bench
    measures agents of 10k and 100k versions.)"""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"]))
    session = await s.session()
    for summary in ("Invoices go out on the first", "The customer prefers email"):
        await s.committed(summary, session, scope="AGENT")
    turn = await s.turn(session)
    before = await api.ok(SEARCH_MEMORY, turn=turn, q="when do invoices go out")
    monkeypatch.setattr(memory_ranking, "ROUTED_BITS_AT_MOST", 1)
    memory_ranking.forget()
    async with api.database.session() as db:
        assert await memory_ranking.path_of(db, uuid.UUID(s.agent_id)) == "filtered"
    assert api.database.engine is not None
    with _Statements(api.database.engine.sync_engine) as seen:
        after = await api.ok(SEARCH_MEMORY, turn=await s.turn(session), q="when do invoices go out")
    memory_ranking.forget()
    shown = [
        [r["version"]["summary"] for r in d["searchMemory"]["results"]] for d in (before, after)
    ]
    assert shown[0] == shown[1] and shown[0][0].startswith("Invoices")
    statement, params = seen.the_one("FROM memory_versions", "ORDER BY top.score")
    assert "hnsw.iterative_scan" in str(params.values()) or "hnsw.iterative_scan" in statement
    _one_shard(await _plan(api, statement, params))


async def test_an_agents_history_search_is_routed_to_one_shard(api: Api) -> None:
    """R62, R64: the statement that ranks a session's kept parts runs on one shard."""
    s = HistoryScenario(api)
    await s.agent(history_config())
    session = await s.session()
    await s.committed_turn(session, user("We cooked risotto on Sunday"), agent("Lovely."))
    await s.committed_turn(session, user("The boiler broke again"), agent("Call Sam."))
    turn = await s.turn(session)
    assert api.database.engine is not None
    with _Statements(api.database.engine.sync_engine) as seen:
        results = await s.results(turn, "what did we cook")
    assert "risotto" in results[0]["text"]
    _one_shard(await _plan(api, *seen.the_one("FROM history_parts", "ranked.score")))


LEXICAL = """
mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { results { lexical version { summary } } }
}"""


async def _docs(api: Api, agent_id: str, word: str, table: str = "memory_term_stats") -> int:
    """How many settled versions (or kept parts) of the agent hold ``word``: its BM25
    statistics."""
    assert api.database.engine is not None
    async with api.database.engine.connect() as conn:
        found = await conn.scalar(
            text(
                f"SELECT coalesce(sum(docs), 0) FROM {table} WHERE agent_id = :agent"
                " AND term = ANY(tsvector_to_array(to_tsvector('english', :word)))"
            ),
            {"agent": uuid.UUID(agent_id), "word": word},
        )
    return int(found or 0)


async def test_a_record_is_found_by_a_rare_word_right_after_its_turn_commits(api: Api) -> None:
    """R41, R62: the BM25 index (migration 0011) is kept on the shards, row by row
    (server/citus/bm25.py): a record written by a turn is found by a word no other
    record holds, by its keyword score, by the next turn; its statistics move when the
    record is replaced; a kept message is found by its rare word too."""
    s = Scenario(api)
    config = memory_config(read=["agent"], write=["agent"])
    config["harness"]["memory"]["search"] = {"mode": "lexical"}
    agent_id = await s.agent(config)
    session = await s.session()
    await s.committed("The dog is called Biscuit", session, scope="AGENT")
    turn = await s.turn(session)
    rare = await s.add_id(turn, "The gate code is quokka", scope="AGENT")
    await s.commit(turn)
    found = await api.ok(LEXICAL, turn=await s.turn(session), q="quokka")
    assert [r["version"]["summary"] for r in found["searchMemory"]["results"]] == [
        "The gate code is quokka"
    ]
    assert found["searchMemory"]["results"][0]["lexical"] > 0
    assert await _docs(api, agent_id, "quokka") == 1
    turn = await s.turn(session)
    await s.add(turn, "The gate code is wombat", replaces=rare, scope="AGENT")
    await s.commit(turn)
    assert (await _docs(api, agent_id, "quokka"), await _docs(api, agent_id, "wombat")) == (0, 1)
    found = await api.ok(LEXICAL, turn=await s.turn(session), q="quokka")
    assert found["searchMemory"]["results"] == []

    h = HistoryScenario(api)
    teller = await h.agent(history_config())
    talk = await h.session()
    await h.committed_turn(talk, user("We cooked risotto on Sunday"), agent("Lovely."))
    await h.committed_turn(talk, user("The capybara escaped"), agent("Oh no."))
    assert await _docs(api, teller, "capybara", "history_term_stats") == 1
    hits = await h.results(await h.turn(talk), "capybara")
    assert "capybara" in hits[0]["text"]


@pytest.fixture
async def strict_api(citus_cluster: Any, schema: Any, embedder: Embedder) -> AsyncIterator[Api]:
    """The API on a database of its own where a statement Citus would split into tasks on
    several shards is refused (citus.multi_task_query_log_level = error)."""
    name = f"agent_memory_strict_{uuid.uuid4().hex[:8]}"
    url = citus_cluster.create_database(name)
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'ALTER DATABASE "{name}" SET citus.multi_task_query_log_level = error'))
    engine.dispose()
    settings = Settings(database_url=url.render_as_string(hide_password=False), dev=True)
    database = Database(settings)
    await database.connect()
    try:
        yield Api(schema=schema, database=database, embedder=embedder, settings=settings)
    finally:
        await database.dispose()
        citus_cluster.drop_database(name)


async def test_a_runtimes_calls_each_run_on_the_agents_shard(strict_api: Api) -> None:
    """R10: every statement of an agent's turns, tool calls, reviews and commits names the
    agent, so Citus runs each on that agent's shard alone: none is split across shards
    (refused here), however many agents the cluster holds."""
    api = strict_api
    s = ReviewScenario(api)
    await s.agent(history_config(read=["session", "agent"], write=["session", "agent"], pinned=200))
    session = await s.session()
    turn = await s.turn(session)
    await s.record(turn, user("Where do the invoices go?"), agent("To accounts."))
    kept = await s.add_id(turn, "Invoices go to accounts", scope="AGENT", pinned=True)
    gone = await s.add_id(turn, "The customer prefers phone calls")
    await s.commit(turn)
    turn = await s.turn(session)
    data = await api.ok(SEARCH_MEMORY, turn=turn, q="where do invoices go")
    assert data["searchMemory"]["results"][0]["version"]["summary"] == "Invoices go to accounts"
    assert await s.can_read(turn, kept)
    recalled = await api.ok(RECALL, turn=turn, work="where do the invoices go")
    assert recalled["recall"]["recorded"]
    helper = (await api.ok(HELPER, turn=turn, kind="HELPER"))["startExecution"]["execution"]
    await api.ok(INVOKE, execution=helper["id"], purpose="TURN")
    await s.add(turn, "The customer prefers email", replaces=gone)
    found = await s.results(turn, "where do the invoices go")
    assert any("To accounts." in r["text"] for r in found), found
    await s.record(turn, user("Email them, please"), agent("Done."))
    await s.commit(turn)
    turn = await s.turn(session)
    await s.record(turn, user("Orders ship on Mondays"), agent("Noted."))
    await s.reviewed(turn, decide("ADD", "Orders ship on Mondays"))
    await api.ok(DELETE, turn=turn, id=kept)
    await s.commit(turn)
    failed = await s.turn(session)
    await s.add(failed, "A fact that fails with its turn")
    await api.ok(FAIL, turn=failed)
    retry = await s.turn(session, retryOf=failed)
    await s.rollback(retry)
