"""Transcript events and executions of a turn."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from server.models import Execution, TranscriptEvent, Turn


async def next_sequence(db: AsyncSession, *, turn_id: uuid.UUID) -> int:
    """Allocate the next transcript sequence number of a turn (atomic)."""
    value = await db.scalar(
        update(Turn)
        .where(Turn.id == turn_id)  # type: ignore[arg-type]
        .values(event_seq=Turn.event_seq + 1)
        .returning(Turn.event_seq)  # type: ignore[call-overload]
    )
    assert value is not None
    return int(value)


async def append_event(
    db: AsyncSession,
    *,
    turn: Turn,
    type: str,
    payload: dict[str, Any],
    execution_id: uuid.UUID | None = None,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
) -> TranscriptEvent:
    event = TranscriptEvent(
        agent_id=turn.agent_id,
        turn_id=turn.id,
        execution_id=execution_id,
        sequence=await next_sequence(db, turn_id=turn.id),
        type=type,
        payload=payload,
        tool_name=tool_name,
        tool_call_id=tool_call_id,
    )
    db.add(event)
    await db.flush()
    return event


async def start_execution(
    db: AsyncSession,
    *,
    turn: Turn,
    kind: str,
    name: str,
    parent_id: uuid.UUID | None,
    input: dict[str, Any] | None = None,
) -> Execution:
    execution = Execution(
        agent_id=turn.agent_id,
        turn_id=turn.id,
        parent_id=parent_id,
        kind=kind,
        name=name,
        input=input,
    )
    db.add(execution)
    await db.flush()
    return execution
