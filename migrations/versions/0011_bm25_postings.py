"""BM25 for memory and history: impact-ordered postings and term statistics (R41, R62)

The keyword leg of a search ranks by BM25 (``server/domain/bm25.py``). Its
index, kept by the database in the statements that write what it indexes:

- ``memory_postings`` / ``history_postings``: one row per lexeme of a searchable
  version (or history part): the term, its BM25 impact (``bm25_impact``: the term
  frequency part, with its constants), the
  document's key, its time and who may find it. Ordered by
  ``(reach, term, impact DESC, created_at DESC, key)``, so a term's best postings
  for a reader are the first rows of one index range.
- ``memory_term_stats`` / ``history_term_stats``: per reach (memory: the AGENT
  scope of an agent, the SESSION scope of each session; history: a session's
  live and preview parts) how many documents hold each term, and, under the term
  ``''``, how many documents there are: a query's inverse document frequencies
  are one index probe per term.

Memory: a version has postings unless its ``search_scope`` (migration 0005) is
``'NONE'``; they carry ``search_scope`` and, for ``'SESSION'``, the session, and
follow it: the triggers below run in the statement that changes the version, so
a rolled-back turn leaves nothing, and a superseded or deleted record leaves the
search. Statistics count the settled versions (``'AGENT'``, ``'SESSION'``). A
transaction's changes to them are queued in ``memory_term_deltas`` (with one row
in ``memory_term_flushes`` per agent it changed) and applied at commit, in term
order, by one deferred trigger: a transaction that changes several records takes
no statistics lock until its last step, and then takes them in one order, so
concurrent writers of one agent never deadlock on them, and different agents
never share a row.

History: parts are written once, by the statement that keeps a committed turn;
the postings and the statistics (in term order, one statement) follow it.

The postings are derived: the downgrade drops them, and an upgrade rebuilds them
from ``search_tsv``.

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# BM25's term-frequency part (server/domain/bm25.py, impact), with the constants both
# kinds store (bm25.BM25: k1 3, b 0, a reference length of 15 lexemes); a test checks
# the SQL and the Python agree.
_IMPACT = """
CREATE FUNCTION bm25_impact(tf integer, dl integer, k1 float8, b float8, avgdl float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT tf * (k1 + 1.0::float8) / (tf + k1 * (1.0::float8 - b + b * dl / avgdl))
$$;
CREATE FUNCTION bm25_terms(tsv tsvector, k1 float8, b float8, avgdl float8)
RETURNS TABLE (term text, impact float8) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH l AS (
        SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(tsv)
    )
    SELECT lexeme, bm25_impact(tf, (SELECT sum(tf)::integer FROM l), k1, b, avgdl) FROM l
$$;
"""

_TABLES = """
CREATE TABLE memory_postings (
    agent_id uuid NOT NULL,
    version_id uuid NOT NULL,
    term text NOT NULL,
    impact float8 NOT NULL,
    search_scope varchar,
    session_id uuid,
    record_id uuid NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT memory_postings_pkey PRIMARY KEY (agent_id, version_id, term) INCLUDE (impact)
);
CREATE TABLE memory_term_stats (
    agent_id uuid NOT NULL,
    term text NOT NULL,
    search_scope varchar NOT NULL,
    session_id uuid,
    docs bigint NOT NULL,
    CONSTRAINT memory_term_stats_scope CHECK (search_scope IN ('AGENT', 'SESSION'))
);
CREATE UNIQUE INDEX ix_memory_term_stats_key
    ON memory_term_stats (agent_id, term, search_scope, session_id) NULLS NOT DISTINCT;
CREATE TABLE memory_term_deltas (
    agent_id uuid NOT NULL,
    term text NOT NULL,
    search_scope varchar NOT NULL,
    session_id uuid,
    docs bigint NOT NULL
);
CREATE INDEX ix_memory_term_deltas_agent ON memory_term_deltas (agent_id);
CREATE TABLE memory_term_flushes (
    agent_id uuid NOT NULL,
    tx bigint NOT NULL,
    CONSTRAINT memory_term_flushes_pkey PRIMARY KEY (agent_id, tx)
);
CREATE TABLE history_postings (
    agent_id uuid NOT NULL,
    part_id uuid NOT NULL,
    term text NOT NULL,
    impact float8 NOT NULL,
    session_id uuid NOT NULL,
    preview boolean NOT NULL,
    turn_number integer NOT NULL,
    created_at timestamptz NOT NULL,
    CONSTRAINT history_postings_pkey PRIMARY KEY (agent_id, part_id, term) INCLUDE (impact)
);
CREATE TABLE history_term_stats (
    agent_id uuid NOT NULL,
    session_id uuid NOT NULL,
    preview boolean NOT NULL,
    term text NOT NULL,
    docs bigint NOT NULL,
    CONSTRAINT history_term_stats_pkey PRIMARY KEY (agent_id, session_id, preview, term)
);
"""

# A version's postings, and the statistics rows it counts in (its settled scope).
_MEMORY_FUNCTIONS = """
CREATE FUNCTION memory_postings_of(v memory_versions) RETURNS SETOF memory_postings
LANGUAGE sql STABLE AS $$
    SELECT v.agent_id, v.id, t.term, t.impact, v.search_scope,
           CASE WHEN v.search_scope = 'SESSION' THEN v.session_id END, v.record_id, v.created_at
      FROM bm25_terms(v.search_tsv, 3.0, 0.0, 15.0) t
     WHERE v.search_scope IS DISTINCT FROM 'NONE'
$$;
-- the top-level transaction (a savepoint's work commits with it)
CREATE FUNCTION memory_tx() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT pg_current_xact_id()::text::bigint
$$;
CREATE FUNCTION memory_counted_terms(v memory_versions) RETURNS TABLE (term text)
LANGUAGE sql STABLE AS $$
    SELECT '' WHERE v.search_scope IN ('AGENT', 'SESSION')
    UNION ALL
    SELECT unnest(tsvector_to_array(v.search_tsv)) WHERE v.search_scope IN ('AGENT', 'SESSION')
$$;
CREATE FUNCTION memory_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_postings SELECT p.* FROM new_versions v, memory_postings_of(v) p;
    WITH queued AS (
        INSERT INTO memory_term_deltas (agent_id, term, search_scope, session_id, docs)
        SELECT v.agent_id, t.term, v.search_scope,
               CASE WHEN v.search_scope = 'SESSION' THEN v.session_id END, count(*)
          FROM new_versions v, memory_counted_terms(v) t
         GROUP BY 1, 2, 3, 4
        RETURNING agent_id)
    INSERT INTO memory_term_flushes SELECT DISTINCT agent_id, memory_tx() FROM queued
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE FUNCTION memory_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the versions whose postings or counts change: delete what the old row had,
    -- insert what the new row has
    DELETE FROM memory_postings p
     USING old_versions o JOIN new_versions n ON n.id = o.id
     WHERE p.agent_id = o.agent_id AND p.version_id = o.id
       AND (o.search_scope, o.session_id, o.record_id, o.created_at, o.search_tsv)
           IS DISTINCT FROM (n.search_scope, n.session_id, n.record_id, n.created_at, n.search_tsv);
    INSERT INTO memory_postings
    SELECT p.* FROM old_versions o JOIN new_versions n ON n.id = o.id, memory_postings_of(n) p
     WHERE (o.search_scope, o.session_id, o.record_id, o.created_at, o.search_tsv)
           IS DISTINCT FROM (n.search_scope, n.session_id, n.record_id, n.created_at, n.search_tsv);
    WITH queued AS (
        INSERT INTO memory_term_deltas (agent_id, term, search_scope, session_id, docs)
        SELECT c.agent_id, c.term, c.search_scope, c.session_id, sum(c.docs)
          FROM (SELECT o.agent_id, t.term, o.search_scope,
                       CASE WHEN o.search_scope = 'SESSION' THEN o.session_id END AS session_id,
                       -1 AS docs
                  FROM old_versions o JOIN new_versions n ON n.id = o.id, memory_counted_terms(o) t
                 WHERE (o.search_scope, o.session_id, o.search_tsv)
                       IS DISTINCT FROM (n.search_scope, n.session_id, n.search_tsv)
                UNION ALL
                SELECT n.agent_id, t.term, n.search_scope,
                       CASE WHEN n.search_scope = 'SESSION' THEN n.session_id END, 1
                  FROM old_versions o JOIN new_versions n ON n.id = o.id, memory_counted_terms(n) t
                 WHERE (o.search_scope, o.session_id, o.search_tsv)
                       IS DISTINCT FROM (n.search_scope, n.session_id, n.search_tsv)) c
         GROUP BY 1, 2, 3, 4
        HAVING sum(c.docs) <> 0
        RETURNING agent_id)
    INSERT INTO memory_term_flushes SELECT DISTINCT agent_id, memory_tx() FROM queued
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE FUNCTION memory_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_postings p USING old_versions o
     WHERE p.agent_id = o.agent_id AND p.version_id = o.id;
    WITH queued AS (
        INSERT INTO memory_term_deltas (agent_id, term, search_scope, session_id, docs)
        SELECT o.agent_id, t.term, o.search_scope,
               CASE WHEN o.search_scope = 'SESSION' THEN o.session_id END, -count(*)
          FROM old_versions o, memory_counted_terms(o) t
         GROUP BY 1, 2, 3, 4
        RETURNING agent_id)
    INSERT INTO memory_term_flushes SELECT DISTINCT agent_id, memory_tx() FROM queued
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- At commit (deferred), once per agent a transaction changed: its queued changes of
-- the agent's statistics, in term order.
CREATE FUNCTION memory_term_deltas_applied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH queued AS (
        DELETE FROM memory_term_deltas WHERE agent_id = NEW.agent_id RETURNING *
    )
    INSERT INTO memory_term_stats AS s (agent_id, term, search_scope, session_id, docs)
    SELECT agent_id, term, search_scope, session_id, sum(docs) FROM queued
     GROUP BY agent_id, term, search_scope, session_id
     ORDER BY term, search_scope, session_id
    ON CONFLICT (agent_id, term, search_scope, session_id)
        DO UPDATE SET docs = s.docs + excluded.docs;
    DELETE FROM memory_term_flushes WHERE agent_id = NEW.agent_id AND tx = NEW.tx;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_postings_inserted AFTER INSERT ON memory_versions
    REFERENCING NEW TABLE AS new_versions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_inserted();
CREATE TRIGGER memory_postings_updated AFTER UPDATE ON memory_versions
    REFERENCING OLD TABLE AS old_versions NEW TABLE AS new_versions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_updated();
CREATE TRIGGER memory_postings_deleted AFTER DELETE ON memory_versions
    REFERENCING OLD TABLE AS old_versions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_postings_deleted();
CREATE CONSTRAINT TRIGGER memory_term_deltas_applied AFTER INSERT ON memory_term_flushes
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION memory_term_deltas_applied();
"""

# A part's postings; its statistics rows (its session, live or preview), changed in one
# statement in key order.
_HISTORY_FUNCTIONS = """
CREATE FUNCTION history_postings_of(p history_parts) RETURNS SETOF history_postings
LANGUAGE sql STABLE AS $$
    SELECT p.agent_id, p.id, t.term, t.impact, p.session_id, p.preview, p.turn_number,
           p.created_at
      FROM bm25_terms(p.search_tsv, 3.0, 0.0, 15.0) t
$$;
CREATE FUNCTION history_counted_terms(p history_parts) RETURNS TABLE (term text)
LANGUAGE sql STABLE AS $$
    SELECT '' UNION ALL SELECT unnest(tsvector_to_array(p.search_tsv))
$$;
CREATE FUNCTION history_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO history_postings SELECT h.* FROM new_parts p, history_postings_of(p) h;
    INSERT INTO history_term_stats AS s (agent_id, session_id, preview, term, docs)
    SELECT p.agent_id, p.session_id, p.preview, t.term, count(*)
      FROM new_parts p, history_counted_terms(p) t
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (agent_id, session_id, preview, term) DO UPDATE SET docs = s.docs + excluded.docs;
    RETURN NULL;
END
$$;
CREATE FUNCTION history_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM history_postings h
     USING old_parts o JOIN new_parts n ON n.id = o.id
     WHERE h.agent_id = o.agent_id AND h.part_id = o.id
       AND (o.agent_id, o.session_id, o.preview, o.turn_number, o.created_at, o.search_tsv)
           IS DISTINCT FROM (n.agent_id, n.session_id, n.preview, n.turn_number, n.created_at,
                             n.search_tsv);
    INSERT INTO history_postings
    SELECT h.* FROM old_parts o JOIN new_parts n ON n.id = o.id, history_postings_of(n) h
     WHERE (o.agent_id, o.session_id, o.preview, o.turn_number, o.created_at, o.search_tsv)
           IS DISTINCT FROM (n.agent_id, n.session_id, n.preview, n.turn_number, n.created_at,
                             n.search_tsv);
    INSERT INTO history_term_stats AS s (agent_id, session_id, preview, term, docs)
    SELECT c.agent_id, c.session_id, c.preview, c.term, sum(c.docs)
      FROM (SELECT o.agent_id, o.session_id, o.preview, t.term, -1 AS docs
              FROM old_parts o JOIN new_parts n ON n.id = o.id, history_counted_terms(o) t
             WHERE (o.agent_id, o.session_id, o.preview, o.search_tsv)
                   IS DISTINCT FROM (n.agent_id, n.session_id, n.preview, n.search_tsv)
            UNION ALL
            SELECT n.agent_id, n.session_id, n.preview, t.term, 1
              FROM old_parts o JOIN new_parts n ON n.id = o.id, history_counted_terms(n) t
             WHERE (o.agent_id, o.session_id, o.preview, o.search_tsv)
                   IS DISTINCT FROM (n.agent_id, n.session_id, n.preview, n.search_tsv)) c
     GROUP BY 1, 2, 3, 4
    HAVING sum(c.docs) <> 0
     ORDER BY 1, 2, 3, 4
    ON CONFLICT (agent_id, session_id, preview, term) DO UPDATE SET docs = s.docs + excluded.docs;
    RETURN NULL;
END
$$;
CREATE FUNCTION history_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM history_postings h USING old_parts o
     WHERE h.agent_id = o.agent_id AND h.part_id = o.id;
    INSERT INTO history_term_stats AS s (agent_id, session_id, preview, term, docs)
    SELECT o.agent_id, o.session_id, o.preview, t.term, -count(*)
      FROM old_parts o, history_counted_terms(o) t
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (agent_id, session_id, preview, term) DO UPDATE SET docs = s.docs + excluded.docs;
    RETURN NULL;
END
$$;
CREATE TRIGGER history_postings_inserted AFTER INSERT ON history_parts
    REFERENCING NEW TABLE AS new_parts
    FOR EACH STATEMENT EXECUTE FUNCTION history_postings_inserted();
CREATE TRIGGER history_postings_updated AFTER UPDATE ON history_parts
    REFERENCING OLD TABLE AS old_parts NEW TABLE AS new_parts
    FOR EACH STATEMENT EXECUTE FUNCTION history_postings_updated();
CREATE TRIGGER history_postings_deleted AFTER DELETE ON history_parts
    REFERENCING OLD TABLE AS old_parts
    FOR EACH STATEMENT EXECUTE FUNCTION history_postings_deleted();
"""

_BACKFILL = """
INSERT INTO memory_postings SELECT p.* FROM memory_versions v, memory_postings_of(v) p;
INSERT INTO memory_term_stats (agent_id, term, search_scope, session_id, docs)
SELECT v.agent_id, t.term, v.search_scope,
       CASE WHEN v.search_scope = 'SESSION' THEN v.session_id END, count(*)
  FROM memory_versions v, memory_counted_terms(v) t
 GROUP BY 1, 2, 3, 4;
INSERT INTO history_postings SELECT h.* FROM history_parts p, history_postings_of(p) h;
INSERT INTO history_term_stats (agent_id, session_id, preview, term, docs)
SELECT p.agent_id, p.session_id, p.preview, t.term, count(*)
  FROM history_parts p, history_counted_terms(p) t
 GROUP BY 1, 2, 3, 4;
"""

# Built after the backfill (faster than row by row). A reader's range of one term is
# ordered best first: impact, then newer, then key (server/storage/bm25.py).
_INDEXES = """
CREATE INDEX ix_memory_postings_agent
    ON memory_postings (agent_id, term, impact DESC, created_at DESC, version_id)
    INCLUDE (record_id) WHERE search_scope = 'AGENT';
CREATE INDEX ix_memory_postings_session
    ON memory_postings (agent_id, session_id, term, impact DESC, created_at DESC, version_id)
    INCLUDE (record_id) WHERE search_scope = 'SESSION';
CREATE INDEX ix_memory_postings_unsettled
    ON memory_postings (agent_id, term) WHERE search_scope IS NULL;
CREATE INDEX ix_history_postings_session
    ON history_postings (agent_id, session_id, term, impact DESC, created_at DESC, part_id)
    INCLUDE (preview, turn_number);
"""


def upgrade() -> None:
    op.execute(_IMPACT)
    op.execute(_TABLES)
    op.execute(_MEMORY_FUNCTIONS)
    op.execute(_HISTORY_FUNCTIONS)
    op.execute(_BACKFILL)
    op.execute(_INDEXES)
    op.execute("ANALYZE memory_postings, memory_term_stats, history_postings, history_term_stats")


def downgrade() -> None:
    for table, triggers in (
        ("memory_versions", ("inserted", "updated", "deleted")),
        ("history_parts", ("inserted", "updated", "deleted")),
    ):
        kind = table.split("_")[0]
        for trigger in triggers:
            op.execute(f"DROP TRIGGER {kind}_postings_{trigger} ON {table}")
            op.execute(f"DROP FUNCTION {kind}_postings_{trigger}()")
    op.execute("DROP TRIGGER memory_term_deltas_applied ON memory_term_flushes")
    op.execute("DROP FUNCTION memory_term_deltas_applied()")
    op.execute("DROP FUNCTION memory_tx()")
    op.execute("DROP FUNCTION memory_postings_of(memory_versions)")
    op.execute("DROP FUNCTION memory_counted_terms(memory_versions)")
    op.execute("DROP FUNCTION history_postings_of(history_parts)")
    op.execute("DROP FUNCTION history_counted_terms(history_parts)")
    for table in (
        "history_term_stats",
        "history_postings",
        "memory_term_flushes",
        "memory_term_deltas",
        "memory_term_stats",
        "memory_postings",
    ):
        op.drop_table(table)
    op.execute("DROP FUNCTION bm25_terms(tsvector, float8, float8, float8)")
    op.execute("DROP FUNCTION bm25_impact(integer, integer, float8, float8, float8)")
