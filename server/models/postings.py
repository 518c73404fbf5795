"""The BM25 index of memory versions and history parts (R41, R62; migration 0011).

Derived data, kept by the database in the statements that write what it indexes
(the triggers of migration 0011), never written here, so plain tables rather than
models. A posting is one lexeme of one searchable document with its BM25 impact
(:func:`server.domain.bm25.impact`) and who may find the document; the statistics
count, per reach, the documents that hold each term, and under the term ``''`` the
documents. How a search reads them: :mod:`server.storage.bm25`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Double,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    Uuid,
    text,
)
from sqlmodel import SQLModel


def _best_first(key: str) -> tuple[Any, ...]:
    """A term's postings best first: impact, then newer, then the document's key."""
    return ("term", text("impact DESC"), text("created_at DESC"), key)


MEMORY_POSTINGS = Table(
    "memory_postings",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("version_id", Uuid(), nullable=False),
    Column("term", Text(), nullable=False),
    Column("impact", Double(), nullable=False),
    # the version's search_scope (migration 0005), and its session when 'SESSION'
    Column("search_scope", String(), nullable=True),
    Column("session_id", Uuid(), nullable=True),
    Column("record_id", Uuid(), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(
        "agent_id", "version_id", "term", name="memory_postings_pkey", postgresql_include=["impact"]
    ),
    Index(
        "ix_memory_postings_agent",
        "agent_id",
        *_best_first("version_id"),
        postgresql_include=["record_id"],
        postgresql_where=text("search_scope = 'AGENT'"),
    ),
    Index(
        "ix_memory_postings_session",
        "agent_id",
        "session_id",
        *_best_first("version_id"),
        postgresql_include=["record_id"],
        postgresql_where=text("search_scope = 'SESSION'"),
    ),
    Index(
        "ix_memory_postings_unsettled",
        "agent_id",
        "term",
        postgresql_where=text("search_scope IS NULL"),
    ),
)

MEMORY_TERM_STATS = Table(
    "memory_term_stats",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("term", Text(), nullable=False),
    Column("search_scope", String(), nullable=False),
    Column("session_id", Uuid(), nullable=True),
    Column("docs", BigInteger(), nullable=False),
    CheckConstraint("search_scope IN ('AGENT', 'SESSION')", name="memory_term_stats_scope"),
    Index(
        "ix_memory_term_stats_key",
        "agent_id",
        "term",
        "search_scope",
        "session_id",
        unique=True,
        postgresql_nulls_not_distinct=True,
    ),
)

# A transaction's changes of memory_term_stats, applied at its commit (migration 0011).
MEMORY_TERM_DELTAS = Table(
    "memory_term_deltas",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("term", Text(), nullable=False),
    Column("search_scope", String(), nullable=False),
    Column("session_id", Uuid(), nullable=True),
    Column("docs", BigInteger(), nullable=False),
    Index("ix_memory_term_deltas_agent", "agent_id"),
)

# One row per agent whose statistics a transaction changed: its deferred trigger applies
# the queued changes at commit (migration 0011).
MEMORY_TERM_FLUSHES = Table(
    "memory_term_flushes",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("tx", BigInteger(), nullable=False),
    PrimaryKeyConstraint("agent_id", "tx", name="memory_term_flushes_pkey"),
)

HISTORY_POSTINGS = Table(
    "history_postings",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("part_id", Uuid(), nullable=False),
    Column("term", Text(), nullable=False),
    Column("impact", Double(), nullable=False),
    Column("session_id", Uuid(), nullable=False),
    Column("preview", Boolean(), nullable=False),
    Column("turn_number", Integer(), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(
        "agent_id", "part_id", "term", name="history_postings_pkey", postgresql_include=["impact"]
    ),
    Index(
        "ix_history_postings_session",
        "agent_id",
        "session_id",
        *_best_first("part_id"),
        postgresql_include=["preview", "turn_number"],
    ),
)

HISTORY_TERM_STATS = Table(
    "history_term_stats",
    SQLModel.metadata,
    Column("agent_id", Uuid(), nullable=False),
    Column("session_id", Uuid(), nullable=False),
    Column("preview", Boolean(), nullable=False),
    Column("term", Text(), nullable=False),
    Column("docs", BigInteger(), nullable=False),
    PrimaryKeyConstraint(
        "agent_id", "session_id", "preview", "term", name="history_term_stats_pkey"
    ),
)

__all__ = [
    "HISTORY_POSTINGS",
    "HISTORY_TERM_STATS",
    "MEMORY_POSTINGS",
    "MEMORY_TERM_DELTAS",
    "MEMORY_TERM_FLUSHES",
    "MEMORY_TERM_STATS",
]
