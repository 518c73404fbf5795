"""Where each table goes on Citus, and what its keys become there: the rule, pure.

- A table with a ``NOT NULL`` column ``agent_id`` holds one agent's rows: it is
  **distributed** by ``agent_id``, every such table in one colocation group, so that an
  agent's rows of every table sit in the same shard on the same node and a statement
  that names the agent runs on that shard alone (R10: nothing crosses agents).
- A table named in :data:`GLOBAL_TABLES` is a **reference** table, copied to every
  node: agents (one row each; read with every per-agent row, and their names are
  unique in a namespace, which Citus cannot enforce on a table distributed by another
  column), principals, policies, grants, policy bindings, the grants' change counter
  (``grants_version``), idempotency keys.
- Any other table is an error that names it: a new per-agent table carries a
  ``NOT NULL agent_id``, a new global one is added to :data:`GLOBAL_TABLES`.

Citus enforces a primary key, unique constraint or unique index on a distributed
table only when it includes the distribution column, and a foreign key between two
distributed tables only when it pairs their distribution columns. So on a
distributed table a key without ``agent_id`` gains it (``(id)`` becomes
``(id, agent_id)``: the same rows are unique, since an id names one agent's row), and
a foreign key to another distributed table gains the pair ``agent_id → agent_id``
(``(agent_id, record_id) → memory_records (agent_id, id)``). Citus refuses ``ON
DELETE SET NULL`` on such a key (it would null ``agent_id``); those become ``NO
ACTION``: the server never deletes a row that a kept row still names (a rolled-back
turn's records are deleted together with the records that name them, after the
records it changed are restored), so the check never fires where the action did.
Foreign keys to reference tables stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from server.errors import DomainError

DISTRIBUTION_COLUMN = "agent_id"

GLOBAL_TABLES = frozenset(
    {
        "agents",
        "principals",
        "policies",
        "grants",
        "grants_version",
        "policy_bindings",
        "idempotency_keys",
    }
)

# The coordinator's own bookkeeping: read and written by Alembic there only.
LOCAL_TABLES = frozenset({"alembic_version"})


class LayoutError(DomainError):
    """The schema cannot be placed on Citus as it stands; the message says what to change."""

    code = "CITUS_LAYOUT"


class Placement(Enum):
    DISTRIBUTED = "distributed"
    REFERENCE = "reference"


KeyKind = Literal["primary", "unique", "index"]


@dataclass(frozen=True, slots=True)
class Key:
    """A primary key, a unique constraint, or a unique index that is no constraint
    (``definition``: its ``pg_get_indexdef``)."""

    name: str
    columns: tuple[str, ...]
    kind: KeyKind
    definition: str = ""


@dataclass(frozen=True, slots=True)
class ForeignKey:
    name: str
    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]
    on_delete: str = "NO ACTION"
    on_update: str = "NO ACTION"


@dataclass(frozen=True, slots=True)
class Table:
    """What the rule reads of a table: its columns (name → nullable), unique keys and
    foreign keys."""

    name: str
    columns: Mapping[str, bool]
    keys: tuple[Key, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()


def placement(table: Table) -> Placement:
    """Distributed by ``agent_id`` or reference (module docstring); anything else is a
    :class:`LayoutError` naming the table."""
    nullable = table.columns.get(DISTRIBUTION_COLUMN)
    if table.name in GLOBAL_TABLES:
        return Placement.REFERENCE
    if nullable is False:
        return Placement.DISTRIBUTED
    if nullable is True:
        raise LayoutError(
            f"table {table.name} has a nullable agent_id: a per-agent table needs "
            "agent_id NOT NULL to be distributed by it (server/citus/layout.py)"
        )
    raise LayoutError(
        f"table {table.name} has no agent_id and is not a global table: give it "
        "agent_id NOT NULL (a per-agent table) or add it to GLOBAL_TABLES in "
        "server/citus/layout.py (a reference table copied to every node)"
    )


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _with_agent(columns: tuple[str, ...]) -> tuple[str, ...]:
    return columns if DISTRIBUTION_COLUMN in columns else (*columns, DISTRIBUTION_COLUMN)


def rekeyed(table: Table) -> list[str]:
    """The statements that give each key of a distributed ``table`` the column
    ``agent_id`` (none for a key that has it). Run with the foreign keys that use the
    keys dropped."""
    out: list[str] = []
    for key in table.keys:
        if DISTRIBUTION_COLUMN in key.columns:
            continue
        columns = _quoted(_with_agent(key.columns))
        if key.kind == "index":
            out.append(f'DROP INDEX "{key.name}"')
            out.append(_index_with_agent(key))
        else:
            constraint = "PRIMARY KEY" if key.kind == "primary" else "UNIQUE"
            out.append(
                f'ALTER TABLE "{table.name}" DROP CONSTRAINT "{key.name}", '
                f'ADD CONSTRAINT "{key.name}" {constraint} ({columns})'
            )
    return out


_KEY_LIST = re.compile(r"\bUSING \w+ \(")


def _index_with_agent(key: Key) -> str:
    """``key.definition`` (``CREATE UNIQUE INDEX ... USING btree (a, b) [INCLUDE ...]
    [WHERE ...]``) with ``agent_id`` added at the end of its key columns."""
    found = _KEY_LIST.search(key.definition)
    if found is None:
        raise LayoutError(f"cannot read the definition of unique index {key.name}")
    depth, at = 1, found.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(key.definition[at], 0)
        at += 1
    return f"{key.definition[: at - 1]}, {DISTRIBUTION_COLUMN}{key.definition[at - 1 :]}"


def foreign_key(fk: ForeignKey, source: Placement, target: Placement, table: str) -> str:
    """The ``ADD CONSTRAINT`` of ``fk`` (of ``table``) as Citus can enforce it (module
    docstring)."""
    columns, target_columns = fk.columns, fk.target_columns
    on_delete, on_update = fk.on_delete, fk.on_update
    if source is Placement.REFERENCE and target is Placement.DISTRIBUTED:
        raise LayoutError(
            f"foreign key {fk.name}: reference table {table} cannot name rows of the "
            f"distributed table {fk.target}"
        )
    if source is Placement.DISTRIBUTED and target is Placement.DISTRIBUTED:
        paired = dict(zip(columns, target_columns, strict=True))
        if paired.get(DISTRIBUTION_COLUMN) != DISTRIBUTION_COLUMN:
            columns = (DISTRIBUTION_COLUMN, *columns)
            target_columns = (DISTRIBUTION_COLUMN, *target_columns)
        if on_delete in ("SET NULL", "SET DEFAULT"):
            on_delete = "NO ACTION"
        if on_update in ("SET NULL", "SET DEFAULT"):
            on_update = "NO ACTION"
    return (
        f'ALTER TABLE "{table}" ADD CONSTRAINT "{fk.name}" FOREIGN KEY ({_quoted(columns)}) '
        f'REFERENCES "{fk.target}" ({_quoted(target_columns)}) '
        f"ON DELETE {on_delete} ON UPDATE {on_update}"
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """The statements that place ``tables`` (the tables not on Citus yet), in order."""

    dropped: list[str]
    rekeyed: list[str]
    placed: list[str]
    added: list[str]

    def statements(self) -> list[str]:
        return [*self.dropped, *self.rekeyed, *self.placed, *self.added]


def plan(tables: Iterable[Table], placed: Mapping[str, Placement]) -> Plan:
    """How to place ``tables`` on Citus, given the tables ``placed`` there already.

    Their foreign keys are dropped first (Citus distributes a table only without
    foreign keys to tables it does not know yet), their keys take ``agent_id``, each
    table is distributed (colocated with the per-agent tables there already, or with
    the first of them) or made a reference table, and the foreign keys come back in
    the form of :func:`foreign_key`.
    """
    todo = sorted((t for t in tables if t.name not in LOCAL_TABLES), key=lambda t: t.name)
    where = dict(placed)
    where.update({t.name: placement(t) for t in todo})
    dropped: list[str] = []
    rekeys: list[str] = []
    reference: list[str] = []
    distributed: list[str] = []
    added: list[str] = []
    for table in todo:
        for fk in table.foreign_keys:
            if fk.target not in where:
                raise LayoutError(f"foreign key {fk.name} of {table.name} names {fk.target}")
            dropped.append(f'ALTER TABLE "{table.name}" DROP CONSTRAINT "{fk.name}"')
            added.append(foreign_key(fk, where[table.name], where[fk.target], table.name))
        if where[table.name] is Placement.DISTRIBUTED:
            rekeys.extend(rekeyed(table))
            distributed.append(table.name)
        else:
            reference.append(f"SELECT create_reference_table('{table.name}')")
    anchor = next((n for n, p in sorted(placed.items()) if p is Placement.DISTRIBUTED), None)
    creates: list[str] = []
    for name in distributed:
        colocate = anchor or "none"
        creates.append(
            f"SELECT create_distributed_table('{name}', '{DISTRIBUTION_COLUMN}', "
            f"colocate_with => '{colocate}')"
        )
        anchor = anchor or name
    return Plan(dropped=dropped, rekeyed=rekeys, placed=[*reference, *creates], added=added)
