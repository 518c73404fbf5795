"""what a request checks in one lookup: the grants' version

- ``grants_version``: one row counting the changes of policies, grants and policy
  bindings, counted up in the transaction that changes them
  (``server/services/policies.py``). The server keeps the callers it built from
  tokens and reuses one while its principal's row and this number are unchanged,
  checked by one indexed lookup per request (docs/security.md, "Tokens checked on
  every request").

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "grants_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        sa.CheckConstraint("id = 1", name="grants_version_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO grants_version (id, version) VALUES (1, 0)")


def downgrade() -> None:
    op.drop_table("grants_version")
