"""The data model of DESIGN.md §1 as SQLModel tables.

Every table carries ``agent_id`` (or ``namespace``) so the schema can be
distributed by agent without changing queries (docs/scaling.md).
"""

from sqlalchemy import Table, inspect
from sqlmodel import SQLModel

from server.models.agents import (
    Agent,
    AgentVersion,
    Execution,
    Invocation,
    Session,
    TranscriptEvent,
    Turn,
)
from server.models.auth import (
    Grant,
    GrantsVersion,
    IdempotencyKey,
    MemoryDeletion,
    Policy,
    PolicyBinding,
    Principal,
)
from server.models.history import HistoryEvent, HistoryPart
from server.models.memory import EMBEDDING_DIM, MemoryRecord, MemoryVersion, OutputUse
from server.models.postings import (
    HISTORY_POSTINGS,
    HISTORY_TERM_STATS,
    MEMORY_POSTINGS,
    MEMORY_TERM_DELTAS,
    MEMORY_TERM_FLUSHES,
    MEMORY_TERM_STATS,
)
from server.models.review import MemoryReview

metadata = SQLModel.metadata


def table(model: type[SQLModel]) -> Table:
    """The model's table, typed (SQLModel leaves ``__table__`` untyped)."""
    found = inspect(model).local_table
    assert isinstance(found, Table)
    return found


__all__ = [
    "EMBEDDING_DIM",
    "HISTORY_POSTINGS",
    "HISTORY_TERM_STATS",
    "MEMORY_POSTINGS",
    "MEMORY_TERM_DELTAS",
    "MEMORY_TERM_FLUSHES",
    "MEMORY_TERM_STATS",
    "Agent",
    "AgentVersion",
    "Execution",
    "Grant",
    "GrantsVersion",
    "HistoryEvent",
    "HistoryPart",
    "IdempotencyKey",
    "Invocation",
    "MemoryDeletion",
    "MemoryRecord",
    "MemoryReview",
    "MemoryVersion",
    "OutputUse",
    "Policy",
    "PolicyBinding",
    "Principal",
    "Session",
    "TranscriptEvent",
    "Turn",
    "metadata",
    "table",
]
