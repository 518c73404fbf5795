"""A migration run on a database Citus distributes already (``agent-memory migrate
--citus`` after an upgrade of the server): its new tables, unique indexes and foreign
keys in the form Citus takes, whichever command runs it (``migrate``, ``serve``).

Citus refuses a foreign key from a table it does not know to one it distributes, a
unique index on a distributed table without the distribution column, and a foreign key
between distributed tables that does not pair their agents. So on a database whose
tables are distributed:

- ``op.create_table`` creates the table without its foreign keys to placed tables,
  places it at once by the rule of :mod:`server.citus.layout` (distributed by
  ``agent_id``, or a reference table), and adds them back as Citus takes them;
- ``op.create_index`` of a unique index on a distributed table adds ``agent_id`` to it;
- ``op.create_foreign_key`` pairs the agents (:func:`server.citus.layout.foreign_key`).

Everywhere else they are Alembic's own. A migration's own SQL (``op.execute``) on
distributed tables names the agent in its joins (docs/scaling.md, "Distributing by
agent").
"""

from __future__ import annotations

from typing import Any

from alembic.operations import Operations, ops, toimpl
from sqlalchemy import ForeignKeyConstraint, Table, text

from server.citus.distribute import distribute, is_citus, placed_tables
from server.citus.layout import DISTRIBUTION_COLUMN, ForeignKey, Placement, foreign_key


def _placed(operations: Operations) -> dict[str, Placement]:
    """The tables Citus holds, when this migration runs on a database with distributed
    tables (``agent-memory migrate --citus`` ran); else nothing (Alembic's own then)."""
    conn = operations.get_bind()
    if not is_citus(conn):
        return {}
    placed = placed_tables(conn)
    return placed if Placement.DISTRIBUTED in placed.values() else {}


@Operations.implementation_for(ops.CreateTableOp, replace=True)
def create_table(operations: Operations, operation: ops.CreateTableOp) -> Table:
    placed = _placed(operations)
    if not placed:
        return toimpl.create_table(operations, operation)
    conn = operations.get_bind()
    table = operation.to_table(operations.migration_context)
    held = [fk for fk in table.foreign_key_constraints if _target(fk) in placed]
    for fk in held:
        table.constraints.discard(fk)
    kw: dict[str, Any] = {}
    if operation.if_not_exists is not None:
        kw["if_not_exists"] = operation.if_not_exists
    operations.impl.create_table(table, **kw)
    placed.update(_placed_now(conn, table.name))
    for fk in held:
        named = _foreign_key(fk, table.name)
        sql = foreign_key(named, placed[table.name], placed[named.target], table.name)
        conn.execute(text(sql))
    return table


@Operations.implementation_for(ops.CreateIndexOp, replace=True)
def create_index(operations: Operations, operation: ops.CreateIndexOp) -> None:
    placed = _placed(operations)
    columns = list(operation.columns)
    if (
        operation.unique
        and placed.get(operation.table_name) is Placement.DISTRIBUTED
        and DISTRIBUTION_COLUMN not in columns
    ):
        operation = ops.CreateIndexOp(
            operation.index_name,
            operation.table_name,
            [*columns, DISTRIBUTION_COLUMN],
            schema=operation.schema,
            unique=True,
            if_not_exists=operation.if_not_exists,
            **operation.kw,
        )
    toimpl.create_index(operations, operation)


@Operations.implementation_for(ops.CreateForeignKeyOp, replace=True)
def create_foreign_key(operations: Operations, operation: ops.CreateForeignKeyOp) -> None:
    placed = _placed(operations)
    source, target = operation.source_table, operation.referent_table
    if source not in placed or target not in placed:
        operations.impl.add_constraint(operation.to_constraint(operations.migration_context))
        return
    fk = _foreign_key(operation.to_constraint(operations.migration_context), source)
    operations.get_bind().execute(text(foreign_key(fk, placed[source], placed[target], source)))


def _target(fk: ForeignKeyConstraint) -> str:
    return str(fk.elements[0].target_fullname.split(".")[-2])


def _foreign_key(fk: ForeignKeyConstraint, table: str) -> ForeignKey:
    name = fk.name if isinstance(fk.name, str) else f"{table}_{fk.column_keys[0]}_fkey"
    return ForeignKey(
        name=name,
        columns=tuple(fk.column_keys),
        target=_target(fk),
        target_columns=tuple(e.target_fullname.split(".")[-1] for e in fk.elements),
        on_delete=(fk.ondelete or "NO ACTION").upper(),
        on_update=(fk.onupdate or "NO ACTION").upper(),
    )


def _placed_now(conn: Any, name: str) -> dict[str, Placement]:
    distribute(conn)
    now = placed_tables(conn)
    return {name: now[name]}
