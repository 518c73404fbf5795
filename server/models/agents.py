"""Agents, their immutable versions, sessions, turns, executions, invocations and
the turn transcript (DESIGN.md §1)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index, LargeBinary, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from server.models._columns import (
    created_at_field,
    fk,
    id_field,
    json_field,
    one_of,
    optional_time_field,
)

TURN_STATUSES = ("open", "committed", "rolled_back", "failed")
EXECUTION_KINDS = ("turn", "tool", "helper", "program")
EXECUTION_STATUSES = ("running", "succeeded", "failed")
INVOCATION_PURPOSES = ("turn", "memory", "embed")


class Agent(SQLModel, table=True):
    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("namespace", "name"),)

    id: uuid.UUID = id_field()
    namespace: str = Field(index=True)
    name: str
    sessionless: bool = False
    created_at: datetime = created_at_field()


class AgentVersion(SQLModel, table=True):
    """An immutable configuration of an agent (R1–R8)."""

    __tablename__ = "agent_versions"
    __table_args__ = (UniqueConstraint("agent_id", "number"),)

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    number: int
    label: str | None = None
    config: dict[str, Any] = json_field(nullable=False)
    created_at: datetime = created_at_field()


class Session(SQLModel, table=True):
    __tablename__ = "sessions"
    __table_args__ = (UniqueConstraint("agent_id", "external_id"),)

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    external_id: str | None = None
    created_at: datetime = created_at_field()


class Turn(SQLModel, table=True):
    """One step of a session (or of a session-less agent).

    ``number`` counts the turns of the session; a retried attempt keeps the
    number and increments ``attempt``; a replay of turn N carries ``replay_of``.
    """

    __tablename__ = "turns"
    __table_args__ = (
        one_of("status", TURN_STATUSES, name="turn_status"),
        Index("ix_turns_session_number", "session_id", "number"),
        Index("ix_turns_agent_number", "agent_id", "number"),
    )

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    session_id: uuid.UUID | None = fk("sessions.id", nullable=True)
    agent_version_id: uuid.UUID = fk("agent_versions.id", ondelete="RESTRICT")
    number: int
    attempt: int = 1
    status: str = "open"
    preview: bool = False
    replay_of_id: uuid.UUID | None = fk("turns.id", nullable=True, ondelete="SET NULL")
    retry_of_id: uuid.UUID | None = fk("turns.id", nullable=True, ondelete="SET NULL")
    error: str | None = None
    event_seq: int = Field(default=0, sa_column_kwargs={"server_default": text("0")})
    created_at: datetime = created_at_field()
    ended_at: datetime | None = optional_time_field()


class Execution(SQLModel, table=True):
    """A run: the agent's run of a turn, one native tool call, or a helper/program.

    Executions nest through ``parent_id``. Helpers (subagents) and programs run by
    a programmatic tool caller are read-only (R23).
    """

    __tablename__ = "executions"
    __table_args__ = (
        one_of("kind", EXECUTION_KINDS, name="execution_kind"),
        one_of("status", EXECUTION_STATUSES, name="execution_status"),
        # a conversation's recorded recalls by the set of versions each returned (R42)
        Index(
            "ix_executions_recall_digest",
            "parent_id",
            "recall_digest",
            postgresql_where=text("recall_digest IS NOT NULL"),
        ),
    )

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    turn_id: uuid.UUID = fk("turns.id")
    parent_id: uuid.UUID | None = fk("executions.id", nullable=True)
    kind: str
    name: str
    status: str = "running"
    input: dict[str, Any] | None = json_field()
    output: dict[str, Any] | None = json_field()
    error: str | None = None
    created_at: datetime = created_at_field()
    ended_at: datetime | None = optional_time_field()
    # A recorded recall: the digest of the set of record versions it returned, so that
    # a repeat is found by one indexed lookup (R42, server/memory_search/recall.py).
    recall_digest: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))


class Invocation(SQLModel, table=True):
    """One model call inside an execution, with its purpose and usage."""

    __tablename__ = "invocations"
    __table_args__ = (one_of("purpose", INVOCATION_PURPOSES, name="invocation_purpose"),)

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    execution_id: uuid.UUID = fk("executions.id")
    purpose: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    # how long the call took, as the runtime measured it; null: not given (embeddings)
    latency_ms: int | None = None
    counted: bool = Field(default=True, sa_column_kwargs={"server_default": text("true")})
    created_at: datetime = created_at_field()


class TranscriptEvent(SQLModel, table=True):
    """What a turn's transcript holds: messages, tool calls and results, skill
    loads, retrievals, ``memory.pinned`` and ``usage``; ordered by ``sequence``."""

    __tablename__ = "transcript_events"
    __table_args__ = (UniqueConstraint("turn_id", "sequence"),)

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    turn_id: uuid.UUID = fk("turns.id", index=False)
    execution_id: uuid.UUID | None = fk("executions.id", nullable=True)
    sequence: int
    type: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    payload: dict[str, Any] = json_field(nullable=False)
    created_at: datetime = created_at_field()
