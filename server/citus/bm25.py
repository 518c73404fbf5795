"""The BM25 index kept on Citus (R41, R62): migration 0011's triggers, row by row.

On one PostgreSQL, statement-level triggers with transition tables keep the postings
and term statistics of ``memory_versions`` and ``history_parts`` (migration 0011,
:mod:`server.storage.bm25`). On Citus a trigger of a distributed table runs on its
shards, and a statement in it that reads a transition table and writes another
distributed table fails: Citus plans that statement again, apart, where the
transition table does not exist ("could not find named tuplestore"). So on Citus the
same maintenance is done by row-level triggers (:data:`ROW_TRIGGERS`), installed by
``agent-memory migrate --citus`` in place of 0011's (:func:`row_triggers`):

- each row's postings are written and deleted as the statement-level ones write
  them, from the row's own columns (``NEW.search_tsv``, ...): on a shard the row has
  the shard's type, which the functions of 0011 that take a whole row refuse;
- memory statistics changes are queued in ``memory_term_deltas`` and flagged in
  ``memory_term_flushes``, as on one node, and applied at commit by 0011's deferred
  trigger (unchanged): concurrent writers of one agent still take its statistics
  rows in one order, at the end;
- history statistics change at once, per part (a committed turn's parts are kept by
  one call, under its turn's lock).

Every statement names the row's agent: it runs on the shard colocated with the row's,
on the same node. The functions are created before the triggers (Citus copies them to
every node for the shards' triggers).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

# (table, trigger, events, function): the triggers of migration 0011 on the searched
# tables, replaced on Citus by row-level ones of the same name
ROW_TRIGGERS: tuple[tuple[str, str, str, str], ...] = (
    ("memory_versions", "memory_postings_inserted", "INSERT", "memory_postings_row_inserted"),
    ("memory_versions", "memory_postings_updated", "UPDATE", "memory_postings_row_updated"),
    ("memory_versions", "memory_postings_deleted", "DELETE", "memory_postings_row_deleted"),
    ("history_parts", "history_postings_inserted", "INSERT", "history_postings_row_inserted"),
    ("history_parts", "history_postings_updated", "UPDATE", "history_postings_row_updated"),
    ("history_parts", "history_postings_deleted", "DELETE", "history_postings_row_deleted"),
)

# A version's postings (none when its scope is NONE) and its counted terms (the term ''
# and each lexeme, when its scope is settled), from a row's columns.
_MEMORY = """
CREATE OR REPLACE FUNCTION memory_postings_row_add(
    agent uuid, version uuid, tsv tsvector, scope varchar, session uuid, record uuid,
    created timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF scope IS DISTINCT FROM 'NONE' THEN
        INSERT INTO memory_postings
            (agent_id, version_id, term, impact, search_scope, session_id, record_id, created_at)
        SELECT agent, version, t.term, t.impact, scope,
               CASE WHEN scope = 'SESSION' THEN session END, record, created
          FROM bm25_terms(tsv, 3.0, 0.0, 15.0) t;
    END IF;
END
$$;
CREATE OR REPLACE FUNCTION memory_postings_row_count(
    agent uuid, tsv tsvector, scope varchar, session uuid, docs bigint
) RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF scope IN ('AGENT', 'SESSION') THEN
        INSERT INTO memory_term_deltas (agent_id, term, search_scope, session_id, docs)
        SELECT agent, t.term, scope, CASE WHEN scope = 'SESSION' THEN session END, docs
          FROM (SELECT '' AS term UNION ALL SELECT unnest(tsvector_to_array(tsv))) t;
        INSERT INTO memory_term_flushes (agent_id, tx) VALUES (agent, memory_tx())
        ON CONFLICT DO NOTHING;
    END IF;
END
$$;
CREATE OR REPLACE FUNCTION memory_postings_row_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memory_postings_row_add(NEW.agent_id, NEW.id, NEW.search_tsv, NEW.search_scope,
                                    NEW.session_id, NEW.record_id, NEW.created_at);
    PERFORM memory_postings_row_count(NEW.agent_id, NEW.search_tsv, NEW.search_scope,
                                      NEW.session_id, 1);
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION memory_postings_row_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.search_scope, OLD.session_id, OLD.record_id, OLD.created_at, OLD.search_tsv)
       IS DISTINCT FROM
       (NEW.search_scope, NEW.session_id, NEW.record_id, NEW.created_at, NEW.search_tsv) THEN
        DELETE FROM memory_postings WHERE agent_id = OLD.agent_id AND version_id = OLD.id;
        PERFORM memory_postings_row_add(NEW.agent_id, NEW.id, NEW.search_tsv,
                                        NEW.search_scope, NEW.session_id, NEW.record_id,
                                        NEW.created_at);
    END IF;
    IF (OLD.search_scope, OLD.session_id, OLD.search_tsv)
       IS DISTINCT FROM (NEW.search_scope, NEW.session_id, NEW.search_tsv) THEN
        PERFORM memory_postings_row_count(OLD.agent_id, OLD.search_tsv, OLD.search_scope,
                                          OLD.session_id, -1);
        PERFORM memory_postings_row_count(NEW.agent_id, NEW.search_tsv, NEW.search_scope,
                                          NEW.session_id, 1);
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION memory_postings_row_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_postings WHERE agent_id = OLD.agent_id AND version_id = OLD.id;
    PERFORM memory_postings_row_count(OLD.agent_id, OLD.search_tsv, OLD.search_scope,
                                      OLD.session_id, -1);
    RETURN NULL;
END
$$;
"""

_HISTORY = """
CREATE OR REPLACE FUNCTION history_postings_row_add(
    agent uuid, part uuid, tsv tsvector, session uuid, preview boolean, turn integer,
    created timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    INSERT INTO history_postings
        (agent_id, part_id, term, impact, session_id, preview, turn_number, created_at)
    SELECT agent, part, t.term, t.impact, session, preview, turn, created
      FROM bm25_terms(tsv, 3.0, 0.0, 15.0) t;
END
$$;
CREATE OR REPLACE FUNCTION history_postings_row_count(
    agent uuid, tsv tsvector, session uuid, preview boolean, docs bigint
) RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    INSERT INTO history_term_stats AS s (agent_id, session_id, preview, term, docs)
    SELECT agent, session, preview, t.term, docs
      FROM (SELECT '' AS term UNION ALL SELECT unnest(tsvector_to_array(tsv))) t
     ORDER BY t.term
    ON CONFLICT (agent_id, session_id, preview, term) DO UPDATE SET docs = s.docs + excluded.docs;
END
$$;
CREATE OR REPLACE FUNCTION history_postings_row_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM history_postings_row_add(NEW.agent_id, NEW.id, NEW.search_tsv, NEW.session_id,
                                     NEW.preview, NEW.turn_number, NEW.created_at);
    PERFORM history_postings_row_count(NEW.agent_id, NEW.search_tsv, NEW.session_id,
                                       NEW.preview, 1);
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION history_postings_row_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.agent_id, OLD.session_id, OLD.preview, OLD.turn_number, OLD.created_at,
        OLD.search_tsv)
       IS DISTINCT FROM
       (NEW.agent_id, NEW.session_id, NEW.preview, NEW.turn_number, NEW.created_at,
        NEW.search_tsv) THEN
        DELETE FROM history_postings WHERE agent_id = OLD.agent_id AND part_id = OLD.id;
        PERFORM history_postings_row_add(NEW.agent_id, NEW.id, NEW.search_tsv,
                                         NEW.session_id, NEW.preview, NEW.turn_number,
                                         NEW.created_at);
    END IF;
    IF (OLD.agent_id, OLD.session_id, OLD.preview, OLD.search_tsv)
       IS DISTINCT FROM (NEW.agent_id, NEW.session_id, NEW.preview, NEW.search_tsv) THEN
        PERFORM history_postings_row_count(OLD.agent_id, OLD.search_tsv, OLD.session_id,
                                           OLD.preview, -1);
        PERFORM history_postings_row_count(NEW.agent_id, NEW.search_tsv, NEW.session_id,
                                           NEW.preview, 1);
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION history_postings_row_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM history_postings WHERE agent_id = OLD.agent_id AND part_id = OLD.id;
    PERFORM history_postings_row_count(OLD.agent_id, OLD.search_tsv, OLD.session_id,
                                       OLD.preview, -1);
    RETURN NULL;
END
$$;
"""

_STATEMENT_LEVEL = text(
    "SELECT tgname FROM pg_trigger WHERE tgrelid = CAST(:table AS regclass)"
    " AND tgname = :trigger AND NOT tgisinternal AND (tgtype & 1) = 0"
)


def row_triggers(conn: Connection) -> list[str]:
    """Replace each statement-level trigger of :data:`ROW_TRIGGERS` that exists by its
    row-level form (the module docstring); returns the triggers replaced. Run on the
    coordinator with ``citus.enable_unsafe_triggers`` on, the tables distributed."""
    todo = [
        (table, trigger, events, function)
        for table, trigger, events, function in ROW_TRIGGERS
        if conn.scalar(_STATEMENT_LEVEL, {"table": table, "trigger": trigger}) is not None
    ]
    if not todo:
        return []
    conn.exec_driver_sql(_MEMORY)
    conn.exec_driver_sql(_HISTORY)
    for table, trigger, events, function in todo:
        conn.exec_driver_sql(f'DROP TRIGGER "{trigger}" ON "{table}"')
        conn.exec_driver_sql(
            f'CREATE TRIGGER "{trigger}" AFTER {events} ON "{table}"'
            f" FOR EACH ROW EXECUTE FUNCTION {function}()"
        )
    return [trigger for _, trigger, _, _ in todo]


__all__ = ["ROW_TRIGGERS", "row_triggers"]
