"""Rows as plain dataclasses: what a statement the hot path sends through psycopg reads,
in the columns' order, with no ORM object (docs/architecture.md, "The request path").

Each has the attributes of its table's model, so the GraphQL types that show a model's
row show these alike, and :attr:`model` names the table, so the access gate decides on
them as on the model's rows (:mod:`resolvers.kinds`). A version leaves out its
embedding and search columns: nothing shows them, and reading a vector costs more than
the rest of the row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from server.models.agents import Execution
from server.models.memory import MemoryRecord, MemoryVersion


@dataclass(frozen=True, slots=True)
class VersionRow:
    """A ``memory_versions`` row but its embedding, signs and full-text vector."""

    model: ClassVar[type[Any]] = MemoryVersion
    COLUMNS: ClassVar[str] = (
        "id, record_id, agent_id, number, status, summary, content, kind, labels, "
        "execution_id, invocation_id, agent_version_id, session_id, turn_id, deletion_id, "
        "created_at, search_scope"
    )

    id: uuid.UUID
    record_id: uuid.UUID
    agent_id: uuid.UUID
    number: int
    status: str
    summary: str
    content: str | None
    kind: str
    labels: dict[str, Any]
    execution_id: uuid.UUID | None
    invocation_id: uuid.UUID | None
    agent_version_id: uuid.UUID | None
    session_id: uuid.UUID | None
    turn_id: uuid.UUID | None
    deletion_id: uuid.UUID | None
    created_at: datetime
    search_scope: str


@dataclass(frozen=True, slots=True)
class RecordRow:
    """A ``memory_records`` row."""

    model: ClassVar[type[Any]] = MemoryRecord
    COLUMNS: ClassVar[str] = (
        "id, seq, agent_id, session_id, scope, status, preview, pinned, replaces_id, "
        "replaced_by_id, current_version_id, turn_id, committed, pending_turn_id, "
        "prior_status, prior_version_id, created_at"
    )

    id: uuid.UUID
    seq: int
    agent_id: uuid.UUID
    session_id: uuid.UUID | None
    scope: str
    status: str
    preview: bool
    pinned: bool
    replaces_id: uuid.UUID | None
    replaced_by_id: uuid.UUID | None
    current_version_id: uuid.UUID | None
    turn_id: uuid.UUID | None
    committed: bool
    pending_turn_id: uuid.UUID | None
    prior_status: str | None
    prior_version_id: uuid.UUID | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ExecutionRow:
    """An ``executions`` row."""

    model: ClassVar[type[Any]] = Execution
    COLUMNS: ClassVar[str] = (
        "id, agent_id, turn_id, parent_id, kind, name, status, input, output, error, "
        "created_at, ended_at, recall_digest"
    )

    id: uuid.UUID
    agent_id: uuid.UUID
    turn_id: uuid.UUID
    parent_id: uuid.UUID | None
    kind: str
    name: str
    status: str
    input: dict[str, Any] | None
    output: dict[str, Any] | None
    error: str | None
    created_at: datetime
    ended_at: datetime | None
    recall_digest: bytes | None


def width(row: type[Any]) -> int:
    """How many columns a row class reads."""
    return len(row.COLUMNS.split(","))


__all__ = ["ExecutionRow", "RecordRow", "VersionRow", "width"]
