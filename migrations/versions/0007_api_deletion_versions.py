"""a deletion through the API is a version of the record (R21, R25, R71)

``deleteAgentMemory`` wrote only the record's status and a ``memory_deletions``
row, so the record's versions, and every reader of its version in force
(``readMemory``'s sources among them), still said ACTIVE. Now it writes a
version of status DELETED like a tool's deletion, whose provenance is the
deletion (``deletion_id``: who deleted it, through which caller, when) instead
of an execution, turn and agent version, which an API call does not have: those
three columns become nullable, and a version has one provenance or the other
(``version_provenance``).

Upgrade gives every API deletion that has no version yet (one made before this
migration, or carried through a downgrade) its version: the text of the version in
force before it, status DELETED, numbered after it, at the deletion's time, with
the deletion's id. A record DELETED with no DELETED version and no deletion (its
deletion dropped by a forced downgrade below 0004, which says so) first gets a
deletion by an unknown caller, dated now: who deleted it, and when, are lost, but
every reader of its version in force says DELETED, as its status does.

Downgrade removes the API deletions' versions (the record keeps its DELETED status,
its version in force going back to the one before, as before this migration), and
keeps each version's id as its deletion's, so that upgrading again brings back the
same versions: nothing is lost either way (a deletion made through the API since
has its version's id already: server/services/memory_api.py).

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# the caller of a deletion whose own was dropped by a forced downgrade below 0004
LOST = "unknown: its deletion was dropped by a downgrade below 0004"
_PROVENANCE = (
    "deletion_id IS NOT NULL OR "
    "(execution_id IS NOT NULL AND agent_version_id IS NOT NULL AND turn_id IS NOT NULL)"
)


def upgrade() -> None:
    op.add_column("memory_versions", sa.Column("deletion_id", sa.Uuid(), nullable=True))
    op.create_foreign_key(
        "memory_versions_deletion_id_fkey",
        "memory_versions",
        "memory_deletions",
        ["deletion_id"],
        ["id"],
        ondelete="CASCADE",
    )
    for column in ("execution_id", "agent_version_id", "turn_id"):
        op.alter_column("memory_versions", column, existing_type=sa.Uuid(), nullable=True)
    op.create_check_constraint("version_provenance", "memory_versions", _PROVENANCE)
    op.execute(
        sa.text(
            "INSERT INTO memory_deletions (id, agent_id, record_id, principal_id, caller)"
            " SELECT gen_random_uuid(), r.agent_id, r.id, NULL, :caller"
            " FROM memory_records r JOIN memory_versions p"
            " ON p.id = r.current_version_id AND p.agent_id = r.agent_id"
            " WHERE r.status = 'DELETED' AND p.status <> 'DELETED'"
            " AND NOT EXISTS (SELECT 1 FROM memory_deletions d WHERE d.record_id = r.id)"
        ).bindparams(caller=LOST)
    )
    op.execute(
        "INSERT INTO memory_versions (id, record_id, agent_id, number, status, summary,"
        " content, kind, labels, embedding, deletion_id, created_at)"
        " SELECT d.id, r.id, r.agent_id, p.number + 1, 'DELETED', p.summary, p.content,"
        " p.kind, p.labels, p.embedding, d.id, d.created_at"
        " FROM memory_deletions d JOIN memory_records r ON r.id = d.record_id"
        " JOIN memory_versions p ON p.id = r.current_version_id"
        " WHERE NOT EXISTS (SELECT 1 FROM memory_versions v WHERE v.deletion_id = d.id)"
        " AND NOT EXISTS (SELECT 1 FROM memory_versions v"
        "  WHERE v.record_id = r.id AND v.number > p.number)"
    )
    op.execute(
        "UPDATE memory_records r SET current_version_id = v.id FROM memory_versions v"
        " WHERE v.record_id = r.id AND v.deletion_id IS NOT NULL"
        " AND v.number = (SELECT max(n.number) FROM memory_versions n WHERE n.record_id = r.id)"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE memory_records r SET current_version_id = ("
        " SELECT p.id FROM memory_versions p WHERE p.record_id = r.id AND p.deletion_id IS NULL"
        " ORDER BY p.number DESC LIMIT 1)"
        " WHERE EXISTS (SELECT 1 FROM memory_versions v"
        " WHERE v.id = r.current_version_id AND v.deletion_id IS NOT NULL)"
    )
    op.drop_constraint("memory_versions_deletion_id_fkey", "memory_versions", type_="foreignkey")
    # carried: the deletion takes its version's id, which upgrade gives the version back
    op.execute(
        "UPDATE memory_deletions d SET id = v.id FROM memory_versions v WHERE v.deletion_id = d.id"
    )
    op.execute("DELETE FROM memory_versions WHERE deletion_id IS NOT NULL")
    op.drop_constraint("version_provenance", "memory_versions", type_="check")
    for column in ("execution_id", "agent_version_id", "turn_id"):
        op.alter_column("memory_versions", column, existing_type=sa.Uuid(), nullable=False)
    op.drop_column("memory_versions", "deletion_id")
