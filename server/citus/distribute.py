"""``agent-memory migrate --citus``: the migrated schema placed on a Citus coordinator
by the rule of :mod:`server.citus.layout`, read from the catalog.

It places the tables Citus does not know yet, so it runs again after every upgrade
(a later migration's new table is placed then, the others are left as they are), in
one transaction: a refusal leaves the database as it was. Then it makes sure every
function the schema defines is on every node (the triggers that keep
``memory_versions.search_scope`` run on the workers' shards, migration 0013; the BM25
index's are made row-level there, :mod:`server.citus.bm25`). A search's index settings
are set by its own statement (:mod:`server.storage.nearest`), which runs whole on the
agent's shard: nothing is set before it.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from server.citus.bm25 import row_triggers
from server.citus.layout import ForeignKey, Key, KeyKind, LayoutError, Placement, Table, plan

_ACTIONS = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_KINDS: dict[str, KeyKind] = {"p": "primary", "u": "unique"}

_TABLES = text(
    "SELECT c.oid, c.relname FROM pg_class c"
    " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')"
    " AND NOT c.relispartition ORDER BY c.relname"
)
_COLUMNS = text(
    "SELECT attrelid, attname, NOT attnotnull AS nullable FROM pg_attribute"
    " WHERE attrelid = ANY(:oids) AND attnum > 0 AND NOT attisdropped"
)
_CONSTRAINTS = text(
    "SELECT con.conrelid, con.conname, con.contype, con.confdeltype, con.confupdtype,"
    " t.relname AS target,"
    " ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i)"
    "       JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n"
    "       ORDER BY k.i) AS columns,"
    " ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i)"
    "       JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n"
    "       ORDER BY k.i) AS target_columns"
    " FROM pg_constraint con LEFT JOIN pg_class t ON t.oid = con.confrelid"
    " WHERE con.conrelid = ANY(:oids) AND con.contype IN ('p', 'u', 'f')"
)
_UNIQUE_INDEXES = text(
    "SELECT i.indrelid, c.relname, pg_get_indexdef(i.indexrelid) AS definition,"
    " ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(n, o)"
    "       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n"
    "       WHERE o <= i.indnkeyatts ORDER BY o) AS columns"
    " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE i.indrelid = ANY(:oids) AND i.indisunique"
    " AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid)"
)
# Citus's own tables: distributed (hash) or reference ('n', replicated to every node)
_PLACED = text(
    "SELECT logicalrelid::regclass::text AS name, partmethod, repmodel FROM pg_dist_partition"
)
_FUNCTIONS = text(
    "SELECT p.oid::regprocedure::text FROM pg_proc p"
    " WHERE p.pronamespace = 'public'::regnamespace"
    " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass"
    "                 AND d.objid = p.oid AND d.deptype = 'e')"
    " AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass"
    "                 AND o.objid = p.oid)"
)


def is_citus(conn: Connection) -> bool:
    """True when the database has the citus extension."""
    return bool(conn.scalar(text("SELECT count(*) FROM pg_extension WHERE extname = 'citus'")))


def placed_tables(conn: Connection) -> dict[str, Placement]:
    """The tables Citus distributes or copies to every node already."""
    out: dict[str, Placement] = {}
    for row in conn.execute(_PLACED):
        if row.partmethod == "h":
            out[row.name] = Placement.DISTRIBUTED
        elif row.partmethod == "n" and row.repmodel == "t":
            out[row.name] = Placement.REFERENCE
    return out


def tables(conn: Connection) -> list[Table]:
    """Every table of the schema, with what :mod:`server.citus.layout` reads of it."""
    found = {row.oid: row.relname for row in conn.execute(_TABLES)}
    oids = list(found)
    columns: dict[int, dict[str, bool]] = {oid: {} for oid in oids}
    for row in conn.execute(_COLUMNS, {"oids": oids}):
        columns[row.attrelid][row.attname] = row.nullable
    keys: dict[int, list[Key]] = {oid: [] for oid in oids}
    fks: dict[int, list[ForeignKey]] = {oid: [] for oid in oids}
    for row in conn.execute(_CONSTRAINTS, {"oids": oids}):
        if row.contype == "f":
            fks[row.conrelid].append(
                ForeignKey(
                    name=row.conname,
                    columns=tuple(row.columns),
                    target=row.target,
                    target_columns=tuple(row.target_columns),
                    on_delete=_ACTIONS[row.confdeltype],
                    on_update=_ACTIONS[row.confupdtype],
                )
            )
        else:
            keys[row.conrelid].append(
                Key(name=row.conname, columns=tuple(row.columns), kind=_KINDS[row.contype])
            )
    for row in conn.execute(_UNIQUE_INDEXES, {"oids": oids}):
        keys[row.indrelid].append(
            Key(
                name=row.relname,
                columns=tuple(row.columns),
                kind="index",
                definition=row.definition,
            )
        )
    return [
        Table(
            name=name,
            columns=columns[oid],
            keys=tuple(sorted(keys[oid], key=lambda k: k.name)),
            foreign_keys=tuple(sorted(fks[oid], key=lambda f: f.name)),
        )
        for oid, name in found.items()
    ]


def distribute(conn: Connection) -> list[str]:
    """Place every table Citus does not know yet (:func:`server.citus.layout.plan`) and
    the schema's functions; returns the tables placed. ``conn`` is a connection to the
    coordinator, in the transaction that holds every change (a refusal undoes them)."""
    if not is_citus(conn):
        raise LayoutError(
            "the database has no citus extension: run `agent-memory migrate --citus` on a "
            "Citus coordinator (CREATE EXTENSION citus, and its workers added)"
        )
    placed = placed_tables(conn)
    todo = [t for t in tables(conn) if t.name not in placed]
    steps = plan(todo, placed)
    # Triggers on distributed tables run on the shards; the ones of migration 0013
    # read and write only the colocated shards of the row's agent.
    conn.execute(text("SET LOCAL citus.enable_unsafe_triggers = on"))
    conn.execute(text("SET LOCAL citus.multi_shard_modify_mode = 'sequential'"))
    for statement in steps.statements():
        conn.execute(text(statement))
    row_triggers(conn)  # the BM25 index kept row by row on the shards
    for function in conn.scalars(_FUNCTIONS).all():
        conn.execute(text("SELECT create_distributed_function(:f)"), {"f": function})
    return [t.name for t in todo if t.name in _names(steps.placed)]


def _names(statements: list[str]) -> set[str]:
    return {s.split("'")[1] for s in statements}


__all__ = ["LayoutError", "distribute", "is_citus", "placed_tables", "tables"]
