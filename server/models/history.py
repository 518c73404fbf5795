"""Kept session history: events of committed turns, split into searchable parts
(R60–R64). Rows are written only when a turn commits."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Column, Computed, Index
from sqlalchemy.dialects.postgresql import BIT, TSVECTOR
from sqlalchemy.orm import Unmapped, unmapped_column
from sqlmodel import Field, SQLModel

from server.models._columns import Embedding, created_at_field, fk, id_field
from server.models.memory import BITS_EXPRESSION, EMBEDDING_DIM

PART_TSV_EXPRESSION = "to_tsvector('english'::regconfig, text)"


class HistoryEvent(SQLModel, table=True):
    __tablename__ = "history_events"
    __table_args__ = (Index("ix_history_events_session_turn", "session_id", "turn_number"),)

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    session_id: uuid.UUID = fk("sessions.id", index=False)
    turn_id: uuid.UUID = fk("turns.id")
    turn_number: int
    transcript_event_id: uuid.UUID = fk("transcript_events.id")
    execution_id: uuid.UUID | None = fk("executions.id", nullable=True)
    sequence: int
    role: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    is_error: bool = False
    preview: bool = False
    text: str
    created_at: datetime = created_at_field()


class HistoryPart(SQLModel, table=True):
    """A searchable piece of a kept event. No vector index: a history search ranks its
    session's parts itself (migrations 0006, 0012)."""

    __tablename__ = "history_parts"
    __table_args__ = (
        # A session's parts as one range of small tuples: what the history gate reads and
        # the embedding's bits, so ranking them by Hamming distance reads no heap row.
        Index(
            "ix_history_parts_session_turn",
            "session_id",
            "turn_number",
            postgresql_include=["agent_id", "preview", "id", "embedding_bits"],
        ),
        Index("ix_history_parts_tsv", "search_tsv", postgresql_using="gin"),
    )

    id: uuid.UUID = id_field()
    event_id: uuid.UUID = fk("history_events.id")
    agent_id: uuid.UUID = fk("agents.id", index=False)
    session_id: uuid.UUID = fk("sessions.id", index=False)
    turn_number: int
    preview: bool = False
    part: int
    parts: int
    text: str
    embedding: Any = Field(default=None, sa_column=Column(Embedding(EMBEDDING_DIM), nullable=False))
    search_tsv: Any = Field(
        default=None,
        sa_column=Column(TSVECTOR, Computed(PART_TSV_EXPRESSION, persisted=True), nullable=True),
    )
    created_at: datetime = created_at_field()
    # Kept by the database (migration 0012) and read by searches only, never loaded with
    # a part: the embedding's signs.
    embedding_bits: ClassVar[Unmapped[str]] = unmapped_column(
        BIT(EMBEDDING_DIM), Computed(BITS_EXPRESSION, persisted=True), nullable=False
    )
