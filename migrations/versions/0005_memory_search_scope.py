"""memory search without the records join: search_scope on versions (R10-R14, R41)

Adds ``memory_versions.search_scope``, what the visibility gate would decide for
a version of a record that no open turn is changing, kept by triggers:

- ``'AGENT'`` / ``'SESSION'``: the version in force of a committed, live (not
  preview), ACTIVE record that no open turn is changing, of that scope (for
  ``'SESSION'``: written in the record's session, ``session_id``); every reader
  allowed that scope (and that session) finds it;
- ``'NONE'``: no reader's search finds it (an earlier version, or a record
  SUPERSEDED or DELETED);
- NULL: the answer depends on the reader (a record an open turn wrote or is
  changing, a preview record): the search asks the full gate.

``memory_search_scope(record, version_id, version_session)`` computes it;
after a record is inserted or one of the columns the gate reads changes, its
versions are brought up to date, and a new version gets it before it is
inserted. Whatever path changes a record (a tool, a commit, a rollback, an API
delete), the column follows in the same statement.

Also: the embedding and the full-text vector are stored inline (``STORAGE
PLAIN`` and ``MAIN``): a 1.5 kB vector and a few hundred bytes of text pass the
2 kB at which PostgreSQL moves values out of line, and then every distance and
every ``ts_rank_cd`` computed from the heap reads the TOAST table (the text of
``summary`` and ``content`` is moved out instead). Rows written before the
migration keep their layout until rewritten (``VACUUM FULL memory_versions``).
And an index over ``(agent_id, search_tsv)`` (``btree_gin``), so that keyword
candidates come from one agent's rows in the index itself.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FUNCTION = """
CREATE FUNCTION memory_search_scope(r memory_records, version_id uuid, version_session uuid)
RETURNS varchar LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN r.id IS NULL OR NOT r.committed OR r.preview OR r.pending_turn_id IS NOT NULL
            THEN NULL
        WHEN r.status <> 'ACTIVE' OR r.current_version_id IS DISTINCT FROM version_id
            THEN 'NONE'
        WHEN r.scope = 'AGENT' THEN 'AGENT'
        WHEN r.scope = 'SESSION' AND version_session IS NOT NULL
            AND r.session_id IS NOT DISTINCT FROM version_session THEN 'SESSION'
    END
$$
"""

_RECORD_TRIGGER = """
CREATE FUNCTION memory_records_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_versions v
       SET search_scope = memory_search_scope(NEW, v.id, v.session_id)
     WHERE v.record_id = NEW.id
       AND v.search_scope IS DISTINCT FROM memory_search_scope(NEW, v.id, v.session_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_records_search_scope
    AFTER INSERT OR UPDATE OF committed, preview, pending_turn_id, status, current_version_id,
        scope, session_id
    ON memory_records FOR EACH ROW EXECUTE FUNCTION memory_records_search_scope();
"""

_VERSION_TRIGGER = """
CREATE FUNCTION memory_versions_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r memory_records;
BEGIN
    SELECT * INTO r FROM memory_records WHERE id = NEW.record_id;
    NEW.search_scope := memory_search_scope(r, NEW.id, NEW.session_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_versions_search_scope
    BEFORE INSERT OR UPDATE OF record_id, session_id, search_scope
    ON memory_versions FOR EACH ROW EXECUTE FUNCTION memory_versions_search_scope();
"""


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.add_column("memory_versions", sa.Column("search_scope", sa.String(), nullable=True))
    op.create_check_constraint(
        "version_search_scope",
        "memory_versions",
        "search_scope IN ('AGENT', 'SESSION', 'NONE')",
    )
    op.execute(_FUNCTION)
    op.execute(
        "UPDATE memory_versions v SET search_scope = memory_search_scope(r, v.id, v.session_id)"
        " FROM memory_records r WHERE r.id = v.record_id"
    )
    op.execute(_RECORD_TRIGGER)
    op.execute(_VERSION_TRIGGER)
    op.execute("ALTER TABLE memory_versions ALTER COLUMN embedding SET STORAGE PLAIN")
    op.execute("ALTER TABLE memory_versions ALTER COLUMN search_tsv SET STORAGE MAIN")
    op.drop_index("ix_memory_versions_tsv", table_name="memory_versions")
    op.create_index(
        "ix_memory_versions_agent_tsv",
        "memory_versions",
        ["agent_id", "search_tsv"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_index(
        "ix_memory_versions_agent_unsettled",
        "memory_versions",
        ["agent_id"],
        unique=False,
        postgresql_where=sa.text("search_scope IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_memory_versions_agent_unsettled", table_name="memory_versions")
    op.drop_index("ix_memory_versions_agent_tsv", table_name="memory_versions")
    op.create_index(
        "ix_memory_versions_tsv",
        "memory_versions",
        ["search_tsv"],
        unique=False,
        postgresql_using="gin",
    )
    op.execute("ALTER TABLE memory_versions ALTER COLUMN search_tsv SET STORAGE EXTENDED")
    op.execute("ALTER TABLE memory_versions ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("DROP TRIGGER memory_versions_search_scope ON memory_versions")
    op.execute("DROP FUNCTION memory_versions_search_scope()")
    op.execute("DROP TRIGGER memory_records_search_scope ON memory_records")
    op.execute("DROP FUNCTION memory_records_search_scope()")
    op.execute("DROP FUNCTION memory_search_scope(memory_records, uuid, uuid)")
    op.drop_constraint("version_search_scope", "memory_versions", type_="check")
    op.drop_column("memory_versions", "search_scope")
