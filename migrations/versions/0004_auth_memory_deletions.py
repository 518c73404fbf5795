"""memory deletions through the API (R71)

Downgrade drops who deleted which record and when (the records stay DELETED; upgrading
again through 0007 gives each a deletion by an unknown caller, dated by that upgrade):
refused unless forced (server/migrate.py, docs/operations.md "Downgrades").

Revision ID: 0004
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

from server.migrate import note_losses

revision: str = "0004"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_deletions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("record_id", sa.Uuid(), nullable=False),
        sa.Column("principal_id", sa.Uuid(), nullable=True),
        sa.Column("caller", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["record_id"], ["memory_records.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["principal_id"], ["principals.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_memory_deletions_agent_id"), "memory_deletions", ["agent_id"], unique=False
    )
    op.create_index(
        op.f("ix_memory_deletions_record_id"), "memory_deletions", ["record_id"], unique=False
    )
    op.create_index(
        op.f("ix_memory_deletions_principal_id"),
        "memory_deletions",
        ["principal_id"],
        unique=False,
    )


def downgrade() -> None:
    note_losses(
        "0004",
        {
            "API deletions: who deleted which record and when (the records stay DELETED;"
            " upgrading again gives each a deletion by an unknown caller, dated by the"
            " upgrade)": "SELECT count(*) FROM memory_deletions"
        },
    )
    op.drop_index(op.f("ix_memory_deletions_principal_id"), table_name="memory_deletions")
    op.drop_index(op.f("ix_memory_deletions_record_id"), table_name="memory_deletions")
    op.drop_index(op.f("ix_memory_deletions_agent_id"), table_name="memory_deletions")
    op.drop_table("memory_deletions")
