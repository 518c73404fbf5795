"""Migrations are a generated artifact and are tested as one: a single head, a clean
upgrade → downgrade → upgrade round trip on a fresh database, and models that match
the migrated database (DESIGN.md §3, STYLE.md 8)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import URL

from server import migrate
from server.domain import bm25
from server.models import metadata


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def fresh_url(database_url: URL) -> Iterator[URL]:
    """An empty database of its own on the test server, dropped afterwards."""
    name = f"agent_memory_mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield database_url.set(database=name)
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fresh_engine(fresh_url: URL) -> Iterator[Engine]:
    engine = create_engine(fresh_url)
    yield engine
    engine.dispose()


def _tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


def _differences(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        return list(compare_metadata(context, metadata))


def test_migrations_have_a_single_head() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config("postgresql://unused/x"))
    heads = script.get_heads()
    assert len(heads) == 1, f"several Alembic heads {heads}: merge them"


def test_upgrade_downgrade_upgrade_round_trip(fresh_url: URL, fresh_engine: Engine) -> None:
    """Every table the models declare is created, removed by downgrade, and re-created."""
    model_tables = set(metadata.tables)
    migrate.upgrade(fresh_url)
    assert _tables(fresh_engine) == model_tables | {"alembic_version"}
    migrate.downgrade(fresh_url, "base")
    assert _tables(fresh_engine) == {"alembic_version"}
    with fresh_engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM alembic_version")) == 0
    migrate.upgrade(fresh_url)
    assert _tables(fresh_engine) == model_tables | {"alembic_version"}
    assert _differences(fresh_engine) == []


def test_models_match_the_migrated_database(fresh_url: URL, fresh_engine: Engine) -> None:
    """compare_metadata finds nothing, and it is not blind: a dropped index and a
    changed column on the same database are reported.

    No difference is filtered out: the Computed tsvector columns and the HNSW/GIN
    indexes compare clean (Alembic does not compare index methods or options; the
    next test checks those)."""
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []

    with fresh_engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_memory_records_agent_seq"))
        conn.execute(text("ALTER TABLE agents ALTER COLUMN name DROP NOT NULL"))
    kinds = {
        diff[0] if isinstance(diff, tuple) else diff[0][0] for diff in _differences(fresh_engine)
    }
    assert kinds == {"add_index", "modify_nullable"}


def _index_definitions(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")
        )
        return {name: definition for name, definition in rows}


def test_vector_and_text_indexes_have_the_declared_methods(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Alembic does not compare index methods and options, so HNSW (cosine, m,
    ef_construction) and GIN indexes are checked against the models here."""
    migrate.upgrade(fresh_url)
    definitions = _index_definitions(fresh_engine)
    checked = 0
    for table in metadata.tables.values():
        for index in table.indexes:
            options = index.dialect_options["postgresql"]
            using = options["using"]
            if not using:
                continue
            definition = definitions[str(index.name)]
            assert f"USING {using} " in definition, definition
            for column, opclass in (options["ops"] or {}).items():
                assert f"{column} {opclass}" in definition, definition
            for key, value in (options["with"] or {}).items():
                assert f"{key}='{value}'" in definition, definition
            checked += 1
    # one HNSW index (memory versions) and three GIN indexes (one of them over
    # (agent_id, search_tsv) with btree_gin)
    assert checked == 4


def _storage(engine: Engine, table: str = "memory_versions") -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT attname, attstorage FROM pg_attribute"
                " WHERE attrelid = CAST(:table AS regclass)"
                " AND attname IN ('embedding', 'search_tsv')"
            ),
            {"table": table},
        )
        return {name: storage for name, storage in rows}


def _routines(engine: Engine, pattern: str = "%search_scope") -> set[str]:
    """The triggers and functions whose name is like ``pattern``."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE :pattern"
                " UNION SELECT proname FROM pg_proc WHERE proname LIKE :pattern"
            ),
            {"pattern": pattern},
        )
        return {name for (name,) in rows}


def test_0005_keeps_search_columns_inline_and_its_triggers_come_and_go(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0005 (what memory search filters on, R10-R14): the embedding and the
    full-text vector are stored inline, ``search_scope`` has its function and triggers;
    its downgrade restores the type's storage and removes them."""
    migrate.upgrade(fresh_url)
    assert _storage(fresh_engine) == {"embedding": "p", "search_tsv": "m"}
    assert _routines(fresh_engine) == {
        "memory_search_scope",
        "memory_records_search_scope",
        "memory_versions_search_scope",
    }
    migrate.downgrade(fresh_url, "0004")
    assert _storage(fresh_engine) == {"embedding": "e", "search_tsv": "x"}
    assert _routines(fresh_engine) == set()
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []


def test_0006_ranks_history_parts_exactly_and_its_downgrade_restores_the_index(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0006 (R62): history parts have no HNSW index (a session's parts are
    ranked exactly) and keep their vector and full-text vector inline; the downgrade
    brings back the index and the type's storage."""
    migrate.upgrade(fresh_url)
    assert "ix_history_parts_embedding" not in _index_definitions(fresh_engine)
    assert _storage(fresh_engine, "history_parts") == {"embedding": "p", "search_tsv": "m"}
    migrate.downgrade(fresh_url, "0005")
    index = _index_definitions(fresh_engine)["ix_history_parts_embedding"]
    assert "USING hnsw (embedding vector_cosine_ops)" in index, index
    assert _storage(fresh_engine, "history_parts") == {"embedding": "e", "search_tsv": "x"}
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []


_OLD_PAYLOADS = """
INSERT INTO agents (id, namespace, name, sessionless) VALUES (:a, 'mig', 'a', false);
INSERT INTO agent_versions (id, agent_id, number, config) VALUES (:v, :a, 1, '{}');
INSERT INTO turns (id, agent_id, agent_version_id, number, attempt, status, preview)
  VALUES (:t, :a, :v, 1, 1, 'committed', false);
INSERT INTO executions (id, agent_id, turn_id, kind, name, status, input, output)
  VALUES (:e, :a, :t, 'tool', 'memory_review', 'succeeded',
          '{"after_turn": 0, "through_turn": 1, "messages": 2}',
          '{"decisions": [{"candidate": 0, "record": "r1", "action": "ADD"}], "memories": []}');
INSERT INTO transcript_events (id, agent_id, turn_id, sequence, type, payload) VALUES
  (gen_random_uuid(), :a, :t, 1, 'usage',
   '{"purpose": "embed", "invocation": "i1", "inputTokens": 3, "counted": false}'),
  (gen_random_uuid(), :a, :t, 2, 'memory.pinned',
   '{"lines": ["x"], "versions": [{"record": "r1", "version": "v1"}],
     "omitted": [{"record": "r2", "version": "v2"}]}');
INSERT INTO idempotency_keys (id, caller, operation, key, request_hash, result)
  VALUES (gen_random_uuid(), 'c', 'applyMemoryReview', 'k', 'h',
          '{"decisions": [{"candidate": 0, "record": null}]}');
INSERT INTO executions (id, agent_id, turn_id, kind, name, status, output)
  VALUES (gen_random_uuid(), :a, :t, 'tool', 'search_history', 'succeeded',
          '{"events": [{"event": "e1", "part": "p1", "partNumber": 2, "parts": 3, "turn": 1}]}');
"""


def _payloads(engine: Engine) -> tuple[Any, ...]:
    with engine.connect() as conn:
        events = dict(conn.execute(text("SELECT type, payload FROM transcript_events")).all())
        outputs = dict(conn.execute(text("SELECT name, output FROM executions")).all())
        given = conn.execute(
            text("SELECT input FROM executions WHERE name = 'memory_review'")
        ).scalar_one()
        kept = conn.execute(text("SELECT result FROM idempotency_keys")).scalar_one()
    output = outputs["memory_review"]
    hits = outputs["search_history"]["events"]
    return (
        events["usage"],
        events["memory.pinned"],
        output["decisions"],
        kept["decisions"],
        given,
        hits,
    )


def test_0009_payloads_read_as_the_schema_names_them_and_its_downgrade_restores_them(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0009: stored transcript payloads, review outputs and the results kept for
    idempotency keys are rewritten to the schema's names and enum values (EMBED,
    invocationId, recordId, versionId); the downgrade writes the old ones back."""
    migrate.upgrade(fresh_url, "0008")
    ids = {k: str(uuid.uuid4()) for k in "avte"}
    with fresh_engine.begin() as conn:
        for statement in filter(str.strip, _OLD_PAYLOADS.split(";")):
            conn.execute(text(statement), ids)
    before = _payloads(fresh_engine)
    migrate.upgrade(fresh_url)
    usage, pinned, decisions, kept, given, hits = _payloads(fresh_engine)
    assert usage == {"purpose": "EMBED", "invocationId": "i1", "inputTokens": 3, "counted": False}
    assert pinned["versions"] == [{"recordId": "r1", "versionId": "v1"}]
    assert pinned["omitted"] == [{"recordId": "r2", "versionId": "v2"}]
    assert pinned["lines"] == ["x"]
    assert decisions == [{"candidate": 0, "recordId": "r1", "action": "ADD"}]
    assert kept == [{"candidate": 0, "recordId": None}]
    assert given == {"afterTurn": 0, "throughTurn": 1, "messages": 2}
    assert hits == [{"eventId": "e1", "partId": "p1", "part": 2, "parts": 3, "turn": 1}]
    migrate.downgrade(fresh_url, "0008")
    assert _payloads(fresh_engine) == before


_SEED_0010 = [
    "INSERT INTO agents (id, namespace, name, sessionless) VALUES (:agent, 'ns', 'a', false)",
    "INSERT INTO agent_versions (id, agent_id, number, config) VALUES (:version, :agent, 1, '{}')",
    "INSERT INTO sessions (id, agent_id) VALUES (:session, :agent)",
    "INSERT INTO turns (id, agent_id, agent_version_id, session_id, number, attempt, status,"
    " preview) VALUES (:turn, :agent, :version, :session, 1, 1, 'committed', false)",
    "INSERT INTO executions (id, agent_id, turn_id, kind, name, status)"
    " VALUES (:execution, :agent, :turn, 'turn', 'turn', 'succeeded')",
    "INSERT INTO transcript_events (id, agent_id, turn_id, sequence, type, payload)"
    " VALUES (:event, :agent, :turn, 1, 'message.user', '{}')",
    "INSERT INTO history_events (id, agent_id, session_id, turn_id, turn_number,"
    " transcript_event_id, sequence, role, is_error, preview, text) VALUES (:kept, :agent,"
    " :session, :turn, 1, :event, 1, 'user', false, false, 'gulls and a lighthouse')",
    "INSERT INTO history_parts (id, event_id, agent_id, session_id, turn_number, preview, part,"
    " parts, text, embedding) SELECT gen_random_uuid(), :kept, :agent, :session, 1, false, n, 2,"
    " 'the lighthouse keeper feeds gull ' || n, array_fill(0.1, ARRAY[384])::vector"
    " FROM generate_series(1, 2) n",
    "INSERT INTO memory_records (id, agent_id, session_id, scope, status, preview, pinned,"
    " turn_id, committed, current_version_id) SELECT id, :agent, :session, scope, status, false,"
    " false, :turn, true, version FROM (VALUES (:r1, 'AGENT', 'ACTIVE', :v1),"
    " (:r2, 'SESSION', 'ACTIVE', :v2), (:r3, 'AGENT', 'DELETED', :v3)) r(id, scope, status,"
    " version)",
    "INSERT INTO memory_versions (id, record_id, agent_id, number, status, summary, kind, labels,"
    " embedding, execution_id, agent_version_id, session_id, turn_id) SELECT v, r, :agent, 1,"
    " s, t, 'fact', '{}', array_fill(0.1, ARRAY[384])::vector, :execution, :version, :session,"
    " :turn FROM (VALUES (:v1, :r1, 'ACTIVE', 'walrus walrus on the beach'),"
    " (:v2, :r2, 'ACTIVE', 'a walrus colony'), (:v3, :r3, 'DELETED', 'gone walrus')) x(v, r, s, t)",
]


def _index(engine: Engine) -> tuple[set[tuple[str, str, float, str | None]], set[Any]]:
    """The BM25 postings (memory and history) and every statistics row."""
    with engine.connect() as conn:
        postings = {
            (str(k), t, i, s)
            for k, t, i, s in conn.execute(
                text(
                    "SELECT version_id, term, impact, search_scope FROM memory_postings"
                    " UNION ALL SELECT part_id, term, impact, 'HISTORY' FROM history_postings"
                )
            )
        }
        stats = set(
            conn.execute(
                text(
                    "SELECT term, search_scope, docs FROM memory_term_stats"
                    " UNION ALL SELECT term, 'HISTORY', docs FROM history_term_stats"
                )
            ).all()
        )
    return postings, stats


def test_0011_builds_the_bm25_index_from_existing_rows_and_its_downgrade_is_lossless(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0011 (R41, R62): the postings and statistics of the versions and parts
    already there are built on upgrade (a deleted record's version has none); the
    downgrade removes the tables, triggers and functions; upgrading again builds the
    same index, since it is derived from the rows."""
    migrate.upgrade(fresh_url, "0010")
    ids = {
        name: uuid.uuid4()
        for name in ("agent", "version", "session", "turn", "execution", "event", "kept")
    }
    ids |= {f"{k}{i}": uuid.uuid4() for k in "rv" for i in (1, 2, 3)}
    with fresh_engine.begin() as conn:
        for sql in _SEED_0010:
            conn.execute(text(sql), ids)
    migrate.upgrade(fresh_url)
    postings, stats = _index(fresh_engine)
    walrus = {(k, s) for k, t, _, s in postings if t == "walrus"}
    assert walrus == {(str(ids["v1"]), "AGENT"), (str(ids["v2"]), "SESSION")}
    assert {p[2] for p in postings if p[:2] == (str(ids["v1"]), "walrus")} == {bm25.impact(2, 3)}
    assert ("walrus", "AGENT", 1) in stats and ("walrus", "SESSION", 1) in stats
    assert ("", "HISTORY", 2) in stats and ("lighthous", "HISTORY", 2) in stats
    assert _routines(fresh_engine, "%postings%") == {
        f"{kind}_postings_{what}"
        for kind in ("memory", "history")
        for what in ("inserted", "updated", "deleted", "of")
    }
    migrate.downgrade(fresh_url, "0010")
    assert not {t for t in _tables(fresh_engine) if "postings" in t or "term_" in t}
    assert _routines(fresh_engine, "%postings%") == set()
    assert _routines(fresh_engine, "bm25%") == set()
    migrate.upgrade(fresh_url)
    assert _index(fresh_engine) == (postings, stats)


def _generated(engine: Engine, table: str) -> str | None:
    with engine.connect() as conn:
        return conn.scalar(
            text(
                "SELECT generation_expression FROM information_schema.columns"
                " WHERE table_name = :table AND column_name = 'embedding_bits'"
            ),
            {"table": table},
        )


def test_0012_keeps_the_embeddings_bits_in_covering_indexes_and_its_downgrade_drops_them(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0012 (R41, R62): versions and parts keep their embedding's signs
    (``binary_quantize``), in an index with the columns the search gate reads, so ranking
    an agent's versions or a session's parts by them reads no heap row; the downgrade
    drops them and brings back the parts' index without the included columns."""
    migrate.upgrade(fresh_url)
    for table in ("memory_versions", "history_parts"):
        assert _generated(fresh_engine, table) == "(binary_quantize(embedding))::bit(384)"
    definitions = _index_definitions(fresh_engine)
    assert definitions["ix_memory_versions_agent_bits"].endswith(
        "USING btree (agent_id) INCLUDE (id, record_id, search_scope, session_id, kind,"
        " embedding_bits)"
    )
    assert definitions["ix_history_parts_session_turn"].endswith(
        "USING btree (session_id, turn_number) INCLUDE (agent_id, preview, id, embedding_bits)"
    )
    migrate.downgrade(fresh_url, "0011")
    assert _generated(fresh_engine, "memory_versions") is None
    definitions = _index_definitions(fresh_engine)
    assert "ix_memory_versions_agent_bits" not in definitions
    assert definitions["ix_history_parts_session_turn"].endswith(
        "USING btree (session_id, turn_number)"
    )
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []


def _body(engine: Engine, function: str) -> str:
    with engine.connect() as conn:
        return str(
            conn.scalar(text("SELECT prosrc FROM pg_proc WHERE proname = :f"), {"f": function})
        )


def test_0013_the_search_scope_triggers_name_their_rows_agent_and_its_downgrade_restores_0005(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0013 (R10, R41): the triggers that keep ``memory_versions.search_scope``
    find a record's versions, and a version's record, by the row's agent and id (on
    Citus: that agent's shard alone); the downgrade brings back the bodies of 0005, and
    a version written after either still gets its scope."""
    migrate.upgrade(fresh_url)
    for function in ("memory_records_search_scope", "memory_versions_search_scope"):
        assert "agent_id = " in _body(fresh_engine, function), function
    migrate.downgrade(fresh_url, "0012")
    for function in ("memory_records_search_scope", "memory_versions_search_scope"):
        assert "agent_id = " not in _body(fresh_engine, function), function
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []
