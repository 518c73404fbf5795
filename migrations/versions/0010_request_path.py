"""what a request checks in one lookup: the grants' version, a recall's digest

- ``grants_version``: one row counting the changes of policies, grants and policy
  bindings, counted up in the transaction that changes them
  (``server/services/policies.py``). The server keeps the callers it built from
  tokens and reuses one while its principal's row and this number are unchanged,
  checked by one indexed lookup per request (docs/security.md, "Tokens checked on
  every request").
- ``executions.recall_digest``: the SHA-256 of the sorted ids of the record versions
  a recorded recall returned, indexed with the calling execution, so that the
  repeat check of R42 is one index probe however many recalls the conversation
  made. Every recorded recall is given its own (a downgrade drops them).

The downgrade drops both: derived, they are made again on the way up. The counter
starts from the clock (microseconds since 1970), not from 0, so that it never
repeats a number a server kept a caller under before the round trip.

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The digest of each recorded recall: SHA-256 of its versions' ids, sorted, as
# server.services.recall.version_set_digest computes it.
BACKFILL = """
UPDATE executions e SET recall_digest = d.digest
FROM (
    SELECT u.agent_id, u.execution_id,
           sha256(string_agg(uuid_send(u.memory_version_id), ''::bytea
                             ORDER BY u.memory_version_id)) AS digest
    FROM output_uses u
    JOIN executions x ON x.id = u.execution_id AND x.agent_id = u.agent_id
    WHERE x.name = 'search_memory' AND x.status = 'succeeded'
      AND x.input @> '{"recall": true}' AND u.memory_version_id IS NOT NULL
    GROUP BY u.agent_id, u.execution_id
) d
WHERE e.id = d.execution_id AND e.agent_id = d.agent_id
"""


def upgrade() -> None:
    op.create_table(
        "grants_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        sa.CheckConstraint("id = 1", name="grants_version_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute(
        "INSERT INTO grants_version (id, version)"
        " VALUES (1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)"
    )

    op.add_column("executions", sa.Column("recall_digest", sa.LargeBinary(), nullable=True))
    op.create_index(
        "ix_executions_recall_digest",
        "executions",
        ["parent_id", "recall_digest"],
        unique=False,
        postgresql_where=sa.text("recall_digest IS NOT NULL"),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_index("ix_executions_recall_digest", table_name="executions")
    op.drop_column("executions", "recall_digest")
    op.drop_table("grants_version")
