"""Transcript events and executions of a turn."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, literal, null, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server.models import Execution, TranscriptEvent, Turn


async def append_event(
    db: AsyncSession,
    *,
    turn: Turn,
    type: str,
    payload: dict[str, Any],
    execution_id: uuid.UUID | None = None,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
) -> None:
    """Append one event to the turn's transcript, in one statement: the turn's
    ``event_seq`` is advanced atomically and the event takes the new value as its
    sequence number."""
    allocated = (
        update(Turn)
        .where(Turn.id == turn.id)  # type: ignore[arg-type]
        .values(event_seq=Turn.event_seq + 1)
        .returning(Turn.event_seq)  # type: ignore[call-overload]
        .cte("allocated")
    )
    table = TranscriptEvent.__table__  # type: ignore[attr-defined]
    values = {
        "id": uuid.uuid4(),
        "agent_id": turn.agent_id,
        "turn_id": turn.id,
        "execution_id": execution_id,
        "type": type,
        "payload": payload,
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
    }
    await db.execute(
        insert(table).from_select(
            [*values, "sequence"],
            select(
                *(literal(v, type_=table.c[k].type) for k, v in values.items()),
                allocated.c.event_seq,
            ),
        )
    )


async def start_execution(
    db: AsyncSession,
    *,
    turn: Turn,
    kind: str,
    name: str,
    parent_id: uuid.UUID | None,
    input: dict[str, Any] | None = None,
) -> Execution:
    """A running execution of the turn (one INSERT … RETURNING, no unit of work)."""
    execution: Execution | None = await db.scalar(
        insert(Execution)
        .values(
            id=uuid.uuid4(),
            agent_id=turn.agent_id,
            turn_id=turn.id,
            parent_id=parent_id,
            kind=kind,
            name=name,
            status="running",
            input=null() if input is None else input,
        )
        .returning(Execution)
    )
    assert execution is not None
    return execution
