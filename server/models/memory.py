"""Memory records, their immutable versions, and output uses (DESIGN.md §1).

A record's state changes (supersede, delete) are versions too, so a record's
versions are its full history: who created it, and who superseded or deleted
it, each with provenance (R25). A change staged by an open turn is kept in the
``pending_*`` columns so that other readers still see the prior state until
the turn commits (R12); rollback restores the prior state and removes the
turn's new records and versions without trace.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Computed,
    FetchedValue,
    Identity,
    Index,
    String,
    text,
)
from sqlalchemy.dialects.postgresql import BIT, TSVECTOR
from sqlalchemy.orm import Unmapped, unmapped_column
from sqlmodel import Field, SQLModel

from server.models._columns import Embedding, created_at_field, fk, id_field, json_field, one_of

EMBEDDING_DIM = 384
SCOPES = ("SESSION", "AGENT")
TSV_EXPRESSION = "to_tsvector('english'::regconfig, summary || ' ' || coalesce(content, ''))"
# The embedding's signs, one bit a dimension (pgvector's binary_quantize): a search ranks an
# agent's versions by Hamming distance on these first, then its best by cosine (migration
# 0012, server/storage/candidates.py).
BITS_EXPRESSION = f"(binary_quantize(embedding))::bit({EMBEDDING_DIM})"


class MemoryRecord(SQLModel, table=True):
    __tablename__ = "memory_records"
    __table_args__ = (
        one_of("scope", ("SESSION", "AGENT"), name="record_scope"),
        one_of("status", ("ACTIVE", "SUPERSEDED", "DELETED"), name="record_status"),
        Index("ix_memory_records_agent_seq", "agent_id", "seq"),
        Index("ix_memory_records_agent_session", "agent_id", "session_id"),
    )

    id: uuid.UUID = id_field()
    seq: int | None = Field(
        default=None,
        sa_column=Column(BigInteger, Identity(always=True), nullable=False, unique=True),
    )
    agent_id: uuid.UUID = fk("agents.id", index=False)
    session_id: uuid.UUID | None = fk("sessions.id", nullable=True, index=False)
    scope: str
    status: str = "ACTIVE"
    preview: bool = False
    pinned: bool = False
    replaces_id: uuid.UUID | None = fk("memory_records.id", nullable=True, ondelete="SET NULL")
    replaced_by_id: uuid.UUID | None = fk(
        "memory_records.id", nullable=True, ondelete="SET NULL", index=False
    )
    current_version_id: uuid.UUID | None = Field(default=None, nullable=True)
    turn_id: uuid.UUID = fk("turns.id")
    committed: bool = False
    pending_turn_id: uuid.UUID | None = fk("turns.id", nullable=True, ondelete="SET NULL")
    prior_status: str | None = None
    prior_version_id: uuid.UUID | None = None
    created_at: datetime = created_at_field()


class MemoryVersion(SQLModel, table=True):
    """One immutable version: the text, kind, labels, status, embedding and
    full-text vector, and the provenance of the call that wrote it (R25)."""

    __tablename__ = "memory_versions"
    __table_args__ = (
        Index("ix_memory_versions_record_number", "record_id", "number", unique=True),
        Index(
            "ix_memory_versions_embedding",
            "embedding",
            postgresql_using="hnsw",
            postgresql_with={"m": 16, "ef_construction": 64},
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index("ix_memory_versions_agent_tsv", "agent_id", "search_tsv", postgresql_using="gin"),
        Index("ix_memory_versions_labels", "labels", postgresql_using="gin"),
        Index(
            "ix_memory_versions_agent_unsettled",
            "agent_id",
            postgresql_where=text("search_scope IS NULL"),
        ),
        # An agent's versions as one range of small tuples: what the search gate reads and
        # the embedding's bits, so ranking them by Hamming distance reads no heap row.
        Index(
            "ix_memory_versions_agent_bits",
            "agent_id",
            postgresql_include=[
                "id",
                "record_id",
                "search_scope",
                "session_id",
                "kind",
                "embedding_bits",
            ],
        ),
        one_of("search_scope", ("AGENT", "SESSION", "NONE"), name="version_search_scope"),
        CheckConstraint(
            "deletion_id IS NOT NULL OR (execution_id IS NOT NULL AND agent_version_id IS NOT "
            "NULL AND turn_id IS NOT NULL)",
            name="version_provenance",
        ),
    )

    id: uuid.UUID = id_field()
    record_id: uuid.UUID = fk("memory_records.id", index=False)
    agent_id: uuid.UUID = fk("agents.id")
    number: int
    status: str
    summary: str
    content: str | None = None
    kind: str
    labels: dict[str, Any] = json_field(nullable=False)
    embedding: Any = Field(default=None, sa_column=Column(Embedding(EMBEDDING_DIM), nullable=False))
    search_tsv: Any = Field(
        default=None,
        sa_column=Column(TSVECTOR, Computed(TSV_EXPRESSION, persisted=True), nullable=True),
    )
    # Provenance (R25): the tool call that wrote the version, or, for a deletion through
    # the API (R71), which has no execution, turn or agent version, that deletion.
    execution_id: uuid.UUID | None = fk("executions.id", nullable=True)
    invocation_id: uuid.UUID | None = fk("invocations.id", nullable=True, ondelete="SET NULL")
    agent_version_id: uuid.UUID | None = fk(
        "agent_versions.id", nullable=True, ondelete="RESTRICT", index=False
    )
    session_id: uuid.UUID | None = fk("sessions.id", nullable=True, index=False)
    turn_id: uuid.UUID | None = fk("turns.id", nullable=True)
    deletion_id: uuid.UUID | None = fk("memory_deletions.id", nullable=True, index=False)
    created_at: datetime = created_at_field()
    # Kept by the database (migration 0005), never written here: what the visibility gate
    # decides for this version while no open turn changes its record. 'AGENT' / 'SESSION':
    # found by every reader of that scope (and session); 'NONE': found by none; NULL:
    # depends on the reader. Searches filter on it instead of joining records (R10-R14).
    search_scope: str | None = Field(
        default=None, sa_column=Column(String, FetchedValue(), FetchedValue(), nullable=True)
    )
    # Kept by the database (migration 0012) and read by searches only, never loaded with
    # a version: the embedding's signs.
    embedding_bits: ClassVar[Unmapped[str]] = unmapped_column(
        BIT(EMBEDDING_DIM), Computed(BITS_EXPRESSION, persisted=True), nullable=False
    )


class OutputUse(SQLModel, table=True):
    """RETRIEVED: an execution's output put these record versions or history
    parts before the model (R43, R63)."""

    __tablename__ = "output_uses"
    __table_args__ = (
        CheckConstraint(
            "(memory_version_id IS NULL) <> (history_part_id IS NULL)", name="output_use_target"
        ),
    )

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    execution_id: uuid.UUID = fk("executions.id")
    kind: str = "RETRIEVED"
    memory_version_id: uuid.UUID | None = fk("memory_versions.id", nullable=True)
    history_part_id: uuid.UUID | None = fk("history_parts.id", nullable=True)
    rank: int = 0
    created_at: datetime = created_at_field()
