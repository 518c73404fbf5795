"""Where each table goes on Citus (server/citus/layout.py, docs/scaling.md "Distributing by
agent"): every table of the migrated schema is either distributed by its agent or a
declared global table, so a new per-agent table (R10: an agent's rows are its own) is
distributed by rule, and one that is neither fails here, on a single node, before it can
reach a cluster. The statements that place a table are checked on their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL

from server.citus.distribute import tables
from server.citus.layout import (
    GLOBAL_TABLES,
    ForeignKey,
    Key,
    LayoutError,
    Placement,
    Table,
    placement,
    plan,
)


@pytest.fixture(scope="module")
def engine(database_url: URL) -> Iterator[Engine]:
    engine = create_engine(database_url)
    yield engine
    engine.dispose()


def test_every_table_is_distributed_by_agent_or_a_declared_global_table(engine: Engine) -> None:
    """The structural rule: a table with ``agent_id NOT NULL`` is distributed, one named in
    GLOBAL_TABLES is a reference table, and there is no third kind. A new table that
    carries no agent_id and is not declared global fails here."""
    with engine.connect() as conn:
        schema = {t.name: t for t in tables(conn)}
    placed = {name: placement(t) for name, t in schema.items() if name != "alembic_version"}
    reference = {name for name, p in placed.items() if p is Placement.REFERENCE}
    assert reference == GLOBAL_TABLES
    distributed = {name for name, p in placed.items() if p is Placement.DISTRIBUTED}
    assert {"memory_records", "memory_versions", "history_parts", "turns"} <= distributed
    for name in distributed:
        assert schema[name].columns["agent_id"] is False, name  # NOT NULL


def test_a_table_without_agent_id_that_is_not_global_is_refused() -> None:
    with pytest.raises(LayoutError, match="bm25_terms has no agent_id"):
        placement(Table(name="bm25_terms", columns={"id": False, "term": False}))
    with pytest.raises(LayoutError, match="nullable agent_id"):
        placement(Table(name="postings", columns={"id": False, "agent_id": True}))
    assert placement(Table(name="postings", columns={"agent_id": False})) is Placement.DISTRIBUTED


def test_the_whole_schema_has_a_plan(engine: Engine) -> None:
    """Every table of the migrated schema can be placed: each key of a distributed table
    takes agent_id, each foreign key between distributed tables pairs their agents."""
    with engine.connect() as conn:
        steps = plan(tables(conn), {})
    statements = steps.statements()
    assert "SELECT create_reference_table('agents')" in statements
    assert (
        "SELECT create_distributed_table('memory_versions', 'agent_id', "
        "colocate_with => 'agent_versions')" in statements
    )
    assert any(
        '"memory_versions_record_id_fkey" FOREIGN KEY ("agent_id", "record_id") '
        'REFERENCES "memory_records" ("agent_id", "id")' in s
        for s in statements
    )
    for statement in steps.added:
        assert "SET NULL" not in statement or '"principals"' in statement, statement


def _records() -> Table:
    return Table(
        name="records",
        columns={"id": False, "agent_id": False, "seq": False, "replaces_id": True},
        keys=(
            Key("records_pkey", ("id",), "primary"),
            Key("records_seq_key", ("seq",), "unique"),
            Key(
                "ix_records_seq",
                ("seq",),
                "index",
                "CREATE UNIQUE INDEX ix_records_seq ON public.records USING btree (seq)"
                " WHERE (seq > 0)",
            ),
            Key("records_agent_seq", ("agent_id", "seq"), "unique"),
        ),
        foreign_keys=(
            ForeignKey("records_agent_id_fkey", ("agent_id",), "agents", ("id",), "CASCADE"),
            ForeignKey(
                "records_replaces_id_fkey", ("replaces_id",), "records", ("id",), "SET NULL"
            ),
        ),
    )


def test_keys_take_agent_id_and_foreign_keys_pair_the_agents() -> None:
    steps = plan([_records()], {"agents": Placement.REFERENCE})
    assert steps.rekeyed == [
        'ALTER TABLE "records" DROP CONSTRAINT "records_pkey", '
        'ADD CONSTRAINT "records_pkey" PRIMARY KEY ("id", "agent_id")',
        'ALTER TABLE "records" DROP CONSTRAINT "records_seq_key", '
        'ADD CONSTRAINT "records_seq_key" UNIQUE ("seq", "agent_id")',
        'DROP INDEX "ix_records_seq"',
        "CREATE UNIQUE INDEX ix_records_seq ON public.records USING btree (seq, agent_id)"
        " WHERE (seq > 0)",
    ]
    assert steps.placed == [
        "SELECT create_distributed_table('records', 'agent_id', colocate_with => 'none')"
    ]
    assert steps.added == [
        'ALTER TABLE "records" ADD CONSTRAINT "records_agent_id_fkey" FOREIGN KEY ("agent_id") '
        'REFERENCES "agents" ("id") ON DELETE CASCADE ON UPDATE NO ACTION',
        # Citus refuses SET NULL on a key that holds the distribution column
        'ALTER TABLE "records" ADD CONSTRAINT "records_replaces_id_fkey" FOREIGN KEY '
        '("agent_id", "replaces_id") REFERENCES "records" ("agent_id", "id") '
        "ON DELETE NO ACTION ON UPDATE NO ACTION",
    ]
    # its foreign keys are dropped first: Citus distributes a table only without them
    assert steps.statements()[:2] == [
        'ALTER TABLE "records" DROP CONSTRAINT "records_agent_id_fkey"',
        'ALTER TABLE "records" DROP CONSTRAINT "records_replaces_id_fkey"',
    ]


def test_a_new_table_is_colocated_with_the_tables_placed_before() -> None:
    placed = {"agents": Placement.REFERENCE, "turns": Placement.DISTRIBUTED}
    postings = Table(name="postings", columns={"id": False, "agent_id": False})
    assert plan([postings], placed).placed == [
        "SELECT create_distributed_table('postings', 'agent_id', colocate_with => 'turns')"
    ]


def test_a_reference_table_cannot_name_an_agents_rows() -> None:
    grants = Table(
        name="grants",
        columns={"id": False, "turn_id": False},
        foreign_keys=(ForeignKey("grants_turn_id_fkey", ("turn_id",), "turns", ("id",)),),
    )
    with pytest.raises(LayoutError, match="reference table grants cannot name rows"):
        plan([grants], {"turns": Placement.DISTRIBUTED})
