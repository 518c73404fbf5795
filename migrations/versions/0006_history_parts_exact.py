"""history search ranks a session's parts exactly: no HNSW index on history parts (R62)

A history search reads one session's parts (``ix_history_parts_session_turn``).
An HNSW graph over every session's parts answers that filter badly: the
session's parts are a sliver of the table, so a filtered walk visits mostly
other sessions' rows before it fills its pool, and may stop short of them. The
session's parts are ranked exactly instead, which never misses one. The index
also cost each kept part its graph insertion, about half of PostgreSQL's work
in keeping a turn (``bench history-ingest``).

Also: the embedding and the full-text vector are stored inline (``STORAGE
PLAIN`` and ``MAIN``), as migration 0005 does for memory versions: a part's
1.5 kB vector and its text pass the 2 kB at which PostgreSQL moves values out
of line, and then every distance computed in an exact ranking reads the TOAST
table (the text is moved out instead). Rows written before the migration keep
their layout until rewritten (``VACUUM FULL history_parts``).

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_history_parts_embedding", table_name="history_parts")
    op.execute("ALTER TABLE history_parts ALTER COLUMN embedding SET STORAGE PLAIN")
    op.execute("ALTER TABLE history_parts ALTER COLUMN search_tsv SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE history_parts ALTER COLUMN search_tsv SET STORAGE EXTENDED")
    op.execute("ALTER TABLE history_parts ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.create_index(
        "ix_history_parts_embedding",
        "history_parts",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_with={"m": 16, "ef_construction": 64},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
