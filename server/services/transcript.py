"""Transcript events and executions of a turn."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Integer, bindparam, cast, column, func, insert, select, true, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.models import Execution, TranscriptEvent, Turn, table
from server.models._columns import CHANGED_AT
from server.storage.built import built_once
from server.storage.owners import remember

AS_WRITTEN = {"dml_strategy": "orm"}
"""Execution options of an ORM INSERT or UPDATE built once and run with parameters:
given parameters, it would otherwise be a bulk one (rows by primary key); with these it
runs as written. An UPDATE among them returns the rows it changes (``populate_existing``)
or fetches their keys (``synchronize_session="fetch"``), never evaluates its WHERE in
Python: that would read the parameters as NULL."""


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
    """Append one event to the turn's transcript (:data:`APPEND`)."""
    row = {
        "type": type,
        "payload": payload,
        "execution_id": execution_id,
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
    }
    await db.execute(APPEND, appending(turn.id, turn.agent_id, [row]))


def _append() -> Any:
    """The one statement that appends rows to a turn's transcript: the turn's
    ``event_seq`` is advanced by their number and they take the numbers before it, in
    order. The rows travel as one JSON array, so the statement is the same whatever
    their number: it is built, compiled and prepared once."""
    events = table(TranscriptEvent)
    count = bindparam("count", type_=Integer)
    turn_id = bindparam("turn", type_=events.c.turn_id.type)
    agent_id = bindparam("agent", type_=events.c.agent_id.type)
    allocated = (
        update(Turn)
        .where(col(Turn.id) == turn_id, col(Turn.agent_id) == agent_id)
        .values(event_seq=Turn.event_seq + count)
        .returning(col(Turn.event_seq))
        .cte("allocated")
    )
    event = (
        func.jsonb_array_elements(bindparam("events", type_=JSONB))
        .table_valued(column("value", JSONB), with_ordinality="n")
        .render_derived(name="event")
    )
    value = event.c.value
    return (
        insert(TranscriptEvent)
        .from_select(
            [
                "id",
                "agent_id",
                "turn_id",
                "execution_id",
                "sequence",
                "type",
                "payload",
                "tool_name",
                "tool_call_id",
            ],
            select(
                func.gen_random_uuid(),
                agent_id,
                turn_id,
                cast(value["execution_id"].astext, events.c.execution_id.type),
                allocated.c.event_seq - count + event.c.n,
                value["type"].astext,
                value.op("->", return_type=JSONB)("payload"),
                value["tool_name"].astext,
                value["tool_call_id"].astext,
            ).select_from(allocated.join(event, true())),
        )
        .execution_options(**AS_WRITTEN)
    )


APPEND = _append()
"""Appends :func:`appending`'s rows to a turn's transcript."""
APPEND_RETURNING = APPEND.returning(TranscriptEvent)
""":data:`APPEND`, returning the new events."""


def appending(turn_id: uuid.UUID, agent_id: uuid.UUID, rows: list[dict[str, Any]]) -> Any:
    """The parameters of :data:`APPEND` that append ``rows`` (``type``, ``payload`` and
    optionally ``execution_id``, ``tool_name``, ``tool_call_id``) to the turn's
    transcript."""
    given = [
        {**row, "execution_id": str(row["execution_id"]) if row.get("execution_id") else None}
        for row in rows
    ]
    return {"turn": turn_id, "agent": agent_id, "count": len(rows), "events": given}


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
    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "agent_id": turn.agent_id,
        "turn_id": turn.id,
        "parent_id": parent_id,
        "kind": kind,
        "name": name,
        "status": "running",
    }
    if input is not None:  # left out, it is SQL NULL (given, None would be JSON null)
        values["input"] = input
    execution: Execution | None = await db.scalar(_start(), values)
    assert execution is not None
    remember(db, execution.id, execution.agent_id)
    return execution


@built_once
def _start() -> Any:
    return insert(Execution).returning(Execution).execution_options(**AS_WRITTEN)


async def end_execution(db: AsyncSession, execution: Execution, *, output: Any) -> Execution:
    """The execution succeeded with ``output``: :func:`_end`."""
    return await _end(db, execution, status="succeeded", output=output)


async def fail_execution(db: AsyncSession, execution: Execution, *, error: str) -> Execution:
    """The execution failed with ``error``: :func:`_end`."""
    return await _end(db, execution, status="failed", error=error)


async def _end(db: AsyncSession, execution: Execution, **values: Any) -> Execution:
    """The execution ended with ``values``, by the database's clock (as every time in
    the transcript), and read back into ``execution`` in the same statement."""
    ended = await db.scalar(
        update(Execution)
        .where(col(Execution.id) == execution.id, col(Execution.agent_id) == execution.agent_id)
        .values(**values, ended_at=CHANGED_AT)
        .returning(Execution)
        .execution_options(populate_existing=True, synchronize_session=False)
    )
    assert ended is not None
    return ended
