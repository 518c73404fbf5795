"""Transcript events and executions of a turn."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, cast, column, func, insert, literal, null, select, true, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

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
    """Append one event to the turn's transcript (:func:`appending`)."""
    row = {
        "type": type,
        "payload": payload,
        "execution_id": execution_id,
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
    }
    await db.execute(appending(turn.id, turn.agent_id, [row]))


def appending(turn_id: uuid.UUID, agent_id: uuid.UUID, rows: list[dict[str, Any]]) -> Any:
    """The one statement that appends ``rows`` (``type``, ``payload`` and optionally
    ``execution_id``, ``tool_name``, ``tool_call_id``) to the turn's transcript: the turn's
    ``event_seq`` is advanced by their number and they take the numbers before it, in
    order. The rows travel as one JSON array, so the statement is the same whatever
    their number (prepared once)."""
    allocated = (
        update(Turn)
        .where(col(Turn.id) == turn_id)
        .values(event_seq=Turn.event_seq + len(rows))
        .returning(col(Turn.event_seq))
        .cte("allocated")
    )
    given = [
        {**row, "execution_id": str(row["execution_id"]) if row.get("execution_id") else None}
        for row in rows
    ]
    event = (
        func.jsonb_array_elements(bindparam("events", given, type_=JSONB))
        .table_valued(column("value", JSONB), with_ordinality="n")
        .render_derived(name="event")
    )
    value = event.c.value
    table = TranscriptEvent.__table__  # type: ignore[attr-defined]
    return (
        insert(TranscriptEvent)
        .from_select(
            ["id", "agent_id", "turn_id", "execution_id", "sequence", "type", "payload",
             "tool_name", "tool_call_id"],
            select(
                func.gen_random_uuid(),
                literal(agent_id, type_=table.c.agent_id.type),
                literal(turn_id, type_=table.c.turn_id.type),
                cast(value["execution_id"].astext, table.c.execution_id.type),
                allocated.c.event_seq - len(rows) + event.c.n,
                value["type"].astext,
                value.op("->", return_type=JSONB)("payload"),
                value["tool_name"].astext,
                value["tool_call_id"].astext,
            ).select_from(allocated.join(event, true())),
        )
    )  # fmt: skip


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
