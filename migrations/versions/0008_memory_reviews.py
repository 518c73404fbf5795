"""turn-end memory reviews and their watermark (R8, R50)

One row per review (server/models/review.py). The watermark of a session (or of an
agent without sessions) is read from these rows: the last review applied in a turn
that committed.

Downgrade drops the reviews, and so each session's watermark: refused unless forced
(server/migrate.py, docs/operations.md "Downgrades").

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

from server.migrate import note_losses

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_reviews",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=True),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("execution_id", sa.Uuid(), nullable=False),
        sa.Column("after_number", sa.Integer(), nullable=False),
        sa.Column("through_number", sa.Integer(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("preview", sa.Boolean(), nullable=False),
        sa.Column("replay", sa.Boolean(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('open', 'applied')", name="review_status"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_memory_reviews_place",
        "memory_reviews",
        ["agent_id", "session_id", "through_number"],
        unique=False,
    )
    op.create_index("ix_memory_reviews_turn", "memory_reviews", ["turn_id"], unique=True)
    op.create_index(
        op.f("ix_memory_reviews_execution_id"), "memory_reviews", ["execution_id"], unique=False
    )


def downgrade() -> None:
    note_losses(
        "0008",
        {
            "memory reviews, and with them each session's review watermark": (
                "SELECT count(*) FROM memory_reviews"
            )
        },
    )
    op.drop_index(op.f("ix_memory_reviews_execution_id"), table_name="memory_reviews")
    op.drop_index("ix_memory_reviews_turn", table_name="memory_reviews")
    op.drop_index("ix_memory_reviews_place", table_name="memory_reviews")
    op.drop_table("memory_reviews")
