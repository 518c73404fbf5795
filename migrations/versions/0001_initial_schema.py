"""initial schema

Revision ID: 0001
Revises:
"""

from collections.abc import Sequence

import pgvector.sqlalchemy
import sqlalchemy as sa
import sqlmodel
from alembic import op
from sqlalchemy.dialects import postgresql

from server.migrate import note_losses

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "agents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("sessionless", sa.Boolean(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("namespace", "name"),
    )
    op.create_index(op.f("ix_agents_namespace"), "agents", ["namespace"], unique=False)
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("caller", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("operation", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("caller", "operation", "key"),
    )
    op.create_table(
        "policies",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("namespace", "name"),
    )
    op.create_table(
        "agent_versions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("label", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("config", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("agent_id", "number"),
    )
    op.create_index(
        op.f("ix_agent_versions_agent_id"), "agent_versions", ["agent_id"], unique=False
    )
    op.create_table(
        "grants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("policy_id", sa.Uuid(), nullable=False),
        sa.Column("privilege", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("pattern", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "privilege IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')", name="grant_privilege"
        ),
        sa.ForeignKeyConstraint(["policy_id"], ["policies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("policy_id", "privilege", "pattern"),
    )
    op.create_index(op.f("ix_grants_policy_id"), "grants", ["policy_id"], unique=False)
    op.create_table(
        "policy_bindings",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("policy_id", sa.Uuid(), nullable=False),
        sa.Column("subject_type", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("subject", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "subject_type IN ('principal', 'agent', 'tool')", name="binding_subject_type"
        ),
        sa.ForeignKeyConstraint(["policy_id"], ["policies.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("policy_id", "subject_type", "subject"),
    )
    op.create_index(
        op.f("ix_policy_bindings_policy_id"), "policy_bindings", ["policy_id"], unique=False
    )
    op.create_index(
        op.f("ix_policy_bindings_subject"), "policy_bindings", ["subject"], unique=False
    )
    op.create_table(
        "principals",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("namespace", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("agent_id", sa.Uuid(), nullable=True),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("token_prefix", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('admin', 'client', 'runtime')", name="principal_kind"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index(op.f("ix_principals_agent_id"), "principals", ["agent_id"], unique=False)
    op.create_index(op.f("ix_principals_namespace"), "principals", ["namespace"], unique=False)
    op.create_table(
        "sessions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("external_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("agent_id", "external_id"),
    )
    op.create_index(op.f("ix_sessions_agent_id"), "sessions", ["agent_id"], unique=False)
    op.create_table(
        "turns",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=True),
        sa.Column("agent_version_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("preview", sa.Boolean(), nullable=False),
        sa.Column("replay_of_id", sa.Uuid(), nullable=True),
        sa.Column("retry_of_id", sa.Uuid(), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("event_seq", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('open', 'committed', 'rolled_back', 'failed')", name="turn_status"
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["agent_version_id"], ["agent_versions.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["replay_of_id"], ["turns.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["retry_of_id"], ["turns.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_turns_agent_id"), "turns", ["agent_id"], unique=False)
    op.create_index("ix_turns_agent_number", "turns", ["agent_id", "number"], unique=False)
    op.create_index(op.f("ix_turns_agent_version_id"), "turns", ["agent_version_id"], unique=False)
    op.create_index(op.f("ix_turns_replay_of_id"), "turns", ["replay_of_id"], unique=False)
    op.create_index(op.f("ix_turns_retry_of_id"), "turns", ["retry_of_id"], unique=False)
    op.create_index(op.f("ix_turns_session_id"), "turns", ["session_id"], unique=False)
    op.create_index("ix_turns_session_number", "turns", ["session_id", "number"], unique=False)
    op.create_table(
        "executions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("input", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("output", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('turn', 'tool', 'helper', 'program')", name="execution_kind"),
        sa.CheckConstraint("status IN ('running', 'succeeded', 'failed')", name="execution_status"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["parent_id"], ["executions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_executions_agent_id"), "executions", ["agent_id"], unique=False)
    op.create_index(op.f("ix_executions_parent_id"), "executions", ["parent_id"], unique=False)
    op.create_index(op.f("ix_executions_turn_id"), "executions", ["turn_id"], unique=False)
    op.create_table(
        "memory_records",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=True),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("preview", sa.Boolean(), nullable=False),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("replaces_id", sa.Uuid(), nullable=True),
        sa.Column("replaced_by_id", sa.Uuid(), nullable=True),
        sa.Column("current_version_id", sa.Uuid(), nullable=True),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("committed", sa.Boolean(), nullable=False),
        sa.Column("pending_turn_id", sa.Uuid(), nullable=True),
        sa.Column("prior_status", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("prior_version_id", sa.Uuid(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint("scope IN ('SESSION', 'AGENT')", name="record_scope"),
        sa.CheckConstraint("status IN ('ACTIVE', 'SUPERSEDED', 'DELETED')", name="record_status"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["pending_turn_id"], ["turns.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["replaced_by_id"], ["memory_records.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["replaces_id"], ["memory_records.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("seq"),
    )
    op.create_index(
        "ix_memory_records_agent_seq", "memory_records", ["agent_id", "seq"], unique=False
    )
    op.create_index(
        "ix_memory_records_agent_session",
        "memory_records",
        ["agent_id", "session_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_memory_records_pending_turn_id"),
        "memory_records",
        ["pending_turn_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_memory_records_replaces_id"), "memory_records", ["replaces_id"], unique=False
    )
    op.create_index(op.f("ix_memory_records_turn_id"), "memory_records", ["turn_id"], unique=False)
    op.create_table(
        "invocations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("execution_id", sa.Uuid(), nullable=False),
        sa.Column("purpose", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("counted", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint("purpose IN ('turn', 'memory', 'embed')", name="invocation_purpose"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_invocations_agent_id"), "invocations", ["agent_id"], unique=False)
    op.create_index(
        op.f("ix_invocations_execution_id"), "invocations", ["execution_id"], unique=False
    )
    op.create_table(
        "transcript_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("execution_id", sa.Uuid(), nullable=True),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("type", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("tool_name", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("tool_call_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("payload", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("turn_id", "sequence"),
    )
    op.create_index(
        op.f("ix_transcript_events_agent_id"), "transcript_events", ["agent_id"], unique=False
    )
    op.create_index(
        op.f("ix_transcript_events_execution_id"),
        "transcript_events",
        ["execution_id"],
        unique=False,
    )
    op.create_table(
        "history_events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column("turn_number", sa.Integer(), nullable=False),
        sa.Column("transcript_event_id", sa.Uuid(), nullable=False),
        sa.Column("execution_id", sa.Uuid(), nullable=True),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("tool_name", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("tool_call_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("preview", sa.Boolean(), nullable=False),
        sa.Column("text", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["transcript_event_id"], ["transcript_events.id"], ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_history_events_agent_id"), "history_events", ["agent_id"], unique=False
    )
    op.create_index(
        op.f("ix_history_events_execution_id"), "history_events", ["execution_id"], unique=False
    )
    op.create_index(
        "ix_history_events_session_turn",
        "history_events",
        ["session_id", "turn_number"],
        unique=False,
    )
    op.create_index(
        op.f("ix_history_events_transcript_event_id"),
        "history_events",
        ["transcript_event_id"],
        unique=False,
    )
    op.create_index(op.f("ix_history_events_turn_id"), "history_events", ["turn_id"], unique=False)
    op.create_table(
        "memory_versions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("record_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("summary", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("content", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("labels", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("embedding", pgvector.sqlalchemy.vector.VECTOR(dim=384), nullable=False),
        sa.Column(
            "search_tsv",
            postgresql.TSVECTOR(),
            sa.Computed(
                "to_tsvector('english'::regconfig, summary || ' ' || coalesce(content, ''))",
                persisted=True,
            ),
            nullable=True,
        ),
        sa.Column("execution_id", sa.Uuid(), nullable=False),
        sa.Column("invocation_id", sa.Uuid(), nullable=True),
        sa.Column("agent_version_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=True),
        sa.Column("turn_id", sa.Uuid(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["agent_version_id"], ["agent_versions.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["invocation_id"], ["invocations.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["record_id"], ["memory_records.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        op.f("ix_memory_versions_agent_id"), "memory_versions", ["agent_id"], unique=False
    )
    op.create_index(
        "ix_memory_versions_embedding",
        "memory_versions",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_with={"m": 16, "ef_construction": 64},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index(
        op.f("ix_memory_versions_execution_id"), "memory_versions", ["execution_id"], unique=False
    )
    op.create_index(
        op.f("ix_memory_versions_invocation_id"), "memory_versions", ["invocation_id"], unique=False
    )
    op.create_index(
        "ix_memory_versions_labels",
        "memory_versions",
        ["labels"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_index(
        "ix_memory_versions_record_number", "memory_versions", ["record_id", "number"], unique=True
    )
    op.create_index(
        "ix_memory_versions_tsv",
        "memory_versions",
        ["search_tsv"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_index(
        op.f("ix_memory_versions_turn_id"), "memory_versions", ["turn_id"], unique=False
    )
    op.create_table(
        "history_parts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("turn_number", sa.Integer(), nullable=False),
        sa.Column("preview", sa.Boolean(), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("parts", sa.Integer(), nullable=False),
        sa.Column("text", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("embedding", pgvector.sqlalchemy.vector.VECTOR(dim=384), nullable=False),
        sa.Column(
            "search_tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('english'::regconfig, text)", persisted=True),
            nullable=True,
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["event_id"], ["history_events.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_history_parts_embedding",
        "history_parts",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_with={"m": 16, "ef_construction": 64},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index(op.f("ix_history_parts_event_id"), "history_parts", ["event_id"], unique=False)
    op.create_index(
        "ix_history_parts_session_turn",
        "history_parts",
        ["session_id", "turn_number"],
        unique=False,
    )
    op.create_index(
        "ix_history_parts_tsv",
        "history_parts",
        ["search_tsv"],
        unique=False,
        postgresql_using="gin",
    )
    op.create_table(
        "output_uses",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.Uuid(), nullable=False),
        sa.Column("execution_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("memory_version_id", sa.Uuid(), nullable=True),
        sa.Column("history_part_id", sa.Uuid(), nullable=True),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("clock_timestamp()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "(memory_version_id IS NULL) <> (history_part_id IS NULL)", name="output_use_target"
        ),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["execution_id"], ["executions.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["history_part_id"], ["history_parts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["memory_version_id"], ["memory_versions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_output_uses_agent_id"), "output_uses", ["agent_id"], unique=False)
    op.create_index(
        op.f("ix_output_uses_execution_id"), "output_uses", ["execution_id"], unique=False
    )
    op.create_index(
        op.f("ix_output_uses_history_part_id"), "output_uses", ["history_part_id"], unique=False
    )
    op.create_index(
        op.f("ix_output_uses_memory_version_id"), "output_uses", ["memory_version_id"], unique=False
    )


# every table this revision creates, whose rows a downgrade to base destroys
_TABLES = (
    "agents",
    "agent_versions",
    "sessions",
    "turns",
    "executions",
    "invocations",
    "transcript_events",
    "memory_records",
    "memory_versions",
    "output_uses",
    "history_events",
    "history_parts",
    "principals",
    "policies",
    "grants",
    "policy_bindings",
    "idempotency_keys",
)


def downgrade() -> None:
    note_losses("0001", {f"rows of {t}": f"SELECT count(*) FROM {t}" for t in _TABLES})
    op.drop_index(op.f("ix_output_uses_memory_version_id"), table_name="output_uses")
    op.drop_index(op.f("ix_output_uses_history_part_id"), table_name="output_uses")
    op.drop_index(op.f("ix_output_uses_execution_id"), table_name="output_uses")
    op.drop_index(op.f("ix_output_uses_agent_id"), table_name="output_uses")
    op.drop_table("output_uses")
    op.drop_index("ix_history_parts_tsv", table_name="history_parts", postgresql_using="gin")
    op.drop_index("ix_history_parts_session_turn", table_name="history_parts")
    op.drop_index(op.f("ix_history_parts_event_id"), table_name="history_parts")
    op.drop_index(
        "ix_history_parts_embedding",
        table_name="history_parts",
        postgresql_using="hnsw",
        postgresql_with={"m": 16, "ef_construction": 64},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.drop_table("history_parts")
    op.drop_index(op.f("ix_memory_versions_turn_id"), table_name="memory_versions")
    op.drop_index("ix_memory_versions_tsv", table_name="memory_versions", postgresql_using="gin")
    op.drop_index("ix_memory_versions_record_number", table_name="memory_versions")
    op.drop_index("ix_memory_versions_labels", table_name="memory_versions", postgresql_using="gin")
    op.drop_index(op.f("ix_memory_versions_invocation_id"), table_name="memory_versions")
    op.drop_index(op.f("ix_memory_versions_execution_id"), table_name="memory_versions")
    op.drop_index(
        "ix_memory_versions_embedding",
        table_name="memory_versions",
        postgresql_using="hnsw",
        postgresql_with={"m": 16, "ef_construction": 64},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.drop_index(op.f("ix_memory_versions_agent_id"), table_name="memory_versions")
    op.drop_table("memory_versions")
    op.drop_index(op.f("ix_history_events_turn_id"), table_name="history_events")
    op.drop_index(op.f("ix_history_events_transcript_event_id"), table_name="history_events")
    op.drop_index("ix_history_events_session_turn", table_name="history_events")
    op.drop_index(op.f("ix_history_events_execution_id"), table_name="history_events")
    op.drop_index(op.f("ix_history_events_agent_id"), table_name="history_events")
    op.drop_table("history_events")
    op.drop_index(op.f("ix_transcript_events_execution_id"), table_name="transcript_events")
    op.drop_index(op.f("ix_transcript_events_agent_id"), table_name="transcript_events")
    op.drop_table("transcript_events")
    op.drop_index(op.f("ix_invocations_execution_id"), table_name="invocations")
    op.drop_index(op.f("ix_invocations_agent_id"), table_name="invocations")
    op.drop_table("invocations")
    op.drop_index(op.f("ix_memory_records_turn_id"), table_name="memory_records")
    op.drop_index(op.f("ix_memory_records_replaces_id"), table_name="memory_records")
    op.drop_index(op.f("ix_memory_records_pending_turn_id"), table_name="memory_records")
    op.drop_index("ix_memory_records_agent_session", table_name="memory_records")
    op.drop_index("ix_memory_records_agent_seq", table_name="memory_records")
    op.drop_table("memory_records")
    op.drop_index(op.f("ix_executions_turn_id"), table_name="executions")
    op.drop_index(op.f("ix_executions_parent_id"), table_name="executions")
    op.drop_index(op.f("ix_executions_agent_id"), table_name="executions")
    op.drop_table("executions")
    op.drop_index("ix_turns_session_number", table_name="turns")
    op.drop_index(op.f("ix_turns_session_id"), table_name="turns")
    op.drop_index(op.f("ix_turns_retry_of_id"), table_name="turns")
    op.drop_index(op.f("ix_turns_replay_of_id"), table_name="turns")
    op.drop_index(op.f("ix_turns_agent_version_id"), table_name="turns")
    op.drop_index("ix_turns_agent_number", table_name="turns")
    op.drop_index(op.f("ix_turns_agent_id"), table_name="turns")
    op.drop_table("turns")
    op.drop_index(op.f("ix_sessions_agent_id"), table_name="sessions")
    op.drop_table("sessions")
    op.drop_index(op.f("ix_principals_namespace"), table_name="principals")
    op.drop_index(op.f("ix_principals_agent_id"), table_name="principals")
    op.drop_table("principals")
    op.drop_index(op.f("ix_policy_bindings_subject"), table_name="policy_bindings")
    op.drop_index(op.f("ix_policy_bindings_policy_id"), table_name="policy_bindings")
    op.drop_table("policy_bindings")
    op.drop_index(op.f("ix_grants_policy_id"), table_name="grants")
    op.drop_table("grants")
    op.drop_index(op.f("ix_agent_versions_agent_id"), table_name="agent_versions")
    op.drop_table("agent_versions")
    op.drop_table("policies")
    op.drop_table("idempotency_keys")
    op.drop_index(op.f("ix_agents_namespace"), table_name="agents")
    op.drop_table("agents")
