"""a model call's latency: how long the call took, as the runtime measured it

Adds ``invocations.latency_ms integer NULL``: the milliseconds from the request to the
model's last token, given to ``recordInvocation(latencyMs)``. Calls recorded before,
and the server's own embeddings, have none (null). A nullable column with no default:
no table rewrite.

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from server.migrate import note_losses

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("invocations", sa.Column("latency_ms", sa.Integer(), nullable=True))


def downgrade() -> None:
    note_losses(
        "0014",
        {"model call latencies": "SELECT count(*) FROM invocations WHERE latency_ms IS NOT NULL"},
    )
    op.drop_column("invocations", "latency_ms")
