"""the embedding's bits beside it, in covering indexes: searches rank an agent's versions
and a session's parts by Hamming distance first (R41, R62)

Adds ``embedding_bits bit(384)``, kept by the database
(``binary_quantize(embedding)``: one bit a dimension, set when the value is
positive), to memory versions and history parts, and an index on each that
holds, for one agent (versions) or one session (parts), what the search gate
reads and the bits:

- ``ix_memory_versions_agent_bits``: ``(agent_id) INCLUDE (id, record_id,
  search_scope, session_id, kind, embedding_bits)``;
- ``ix_history_parts_session_turn``: ``(session_id, turn_number) INCLUDE
  (agent_id, preview, id, embedding_bits)`` (it replaces the index of the same
  name without the included columns).

An agent's versions are then one contiguous range of ~130-byte index tuples, so
ranking them by Hamming distance is an index-only scan that reads no heap row;
the best of them by that distance are ranked again by the exact cosine
(``server/storage/candidates.py``). Adding the columns rewrites both tables.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BITS = "(binary_quantize(embedding))::bit(384)"


def _bits() -> sa.Column[str]:
    return sa.Column(
        "embedding_bits",
        postgresql.BIT(384),
        sa.Computed(_BITS, persisted=True),
        nullable=False,
    )


def upgrade() -> None:
    op.add_column("memory_versions", _bits())
    op.create_index(
        "ix_memory_versions_agent_bits",
        "memory_versions",
        ["agent_id"],
        unique=False,
        postgresql_include=[
            "id",
            "record_id",
            "search_scope",
            "session_id",
            "kind",
            "embedding_bits",
        ],
    )
    op.add_column("history_parts", _bits())
    op.drop_index("ix_history_parts_session_turn", table_name="history_parts")
    op.create_index(
        "ix_history_parts_session_turn",
        "history_parts",
        ["session_id", "turn_number"],
        unique=False,
        postgresql_include=["agent_id", "preview", "id", "embedding_bits"],
    )


def downgrade() -> None:
    op.drop_index("ix_history_parts_session_turn", table_name="history_parts")
    op.drop_column("history_parts", "embedding_bits")
    op.create_index(
        "ix_history_parts_session_turn",
        "history_parts",
        ["session_id", "turn_number"],
        unique=False,
    )
    op.drop_index("ix_memory_versions_agent_bits", table_name="memory_versions")
    op.drop_column("memory_versions", "embedding_bits")
