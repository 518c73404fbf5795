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


def _routines(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
                " UNION SELECT proname FROM pg_proc WHERE proname LIKE 'memory%search_scope'"
            )
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


def _generated(engine: Engine, table: str) -> str | None:
    with engine.connect() as conn:
        return conn.scalar(
            text(
                "SELECT generation_expression FROM information_schema.columns"
                " WHERE table_name = :table AND column_name = 'embedding_bits'"
            ),
            {"table": table},
        )


def test_0009_keeps_the_embeddings_bits_in_covering_indexes_and_its_downgrade_drops_them(
    fresh_url: URL, fresh_engine: Engine
) -> None:
    """Migration 0009 (R41, R62): versions and parts keep their embedding's signs
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
    migrate.downgrade(fresh_url, "0008")
    assert _generated(fresh_engine, "memory_versions") is None
    definitions = _index_definitions(fresh_engine)
    assert "ix_memory_versions_agent_bits" not in definitions
    assert definitions["ix_history_parts_session_turn"].endswith(
        "USING btree (session_id, turn_number)"
    )
    migrate.upgrade(fresh_url)
    assert _differences(fresh_engine) == []
