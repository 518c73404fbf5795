"""What a native tool call records, written in one statement when it ends (R25, R26,
R43, R63).

A call records its execution (input, then output or error), the usage of each query
it embedded (an ``embed`` invocation and its ``usage`` event), the RETRIEVED output
uses of what it put before the model, and its ``tool.result`` or ``tool.error``
event. Written as the call went, that was a statement each, one after the other (the
execution inserted, then updated; the invocation; each event; the uses). A
:class:`Ledger` gathers them instead, and :func:`close_call` writes them all in one
statement, in the call's transaction: the transcript's sequence numbers are taken
from the turn in that statement (as :data:`server.services.transcript.APPEND` takes
them), and the rows are the ones the statements wrote before.

A call that writes no memory (``search_memory``, a recall, ``read_memory``,
``search_history``) inserts its execution there too, started when the call's scope
was read (:attr:`server.services.turn_scope.TurnScope.started_at`, the database's
clock). A call that writes memory needs its execution's row before its versions name
it, so that row is inserted first (:func:`server.services.transcript.start_execution`)
and :func:`close_call` updates it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    Boolean,
    Integer,
    String,
    Uuid,
    bindparam,
    cast,
    column,
    func,
    insert,
    literal_column,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.sql.dml import Insert, Update

from server.models import Execution, Invocation, OutputUse, TranscriptEvent, Turn, table
from server.models._columns import CHANGED_AT
from server.storage.built import built_once
from server.storage.owners import remember

_OPEN = "agent_memory.ledgers"  # where a session keeps its calls' open ledgers

How = Literal["insert", "update", "none"]
"""What :func:`close_call` does with the execution: insert it, update it, or neither
(usage recorded on an execution that is not the call's own)."""


@dataclass
class Ledger:
    """The rows one call records, gathered until it ends."""

    execution: Execution
    inserted: bool  # the execution's row exists already (a call that writes memory)
    started_at: datetime | None = None
    invocations: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    uses: list[dict[str, Any]] = field(default_factory=list)

    def discard(self) -> None:
        """Forget what the call gathered: a refused call records none of it."""
        self.invocations.clear()
        self.events.clear()
        self.uses.clear()


def open_ledger(db: AsyncSession, execution_id: uuid.UUID) -> Ledger | None:
    """The ledger of the call whose execution is ``execution_id``, while it runs."""
    ledgers: dict[uuid.UUID, Ledger] = db.info.get(_OPEN, {})
    return ledgers.get(execution_id)


@contextmanager
def gathering(db: AsyncSession, ledger: Ledger) -> Iterator[Ledger]:
    """While the block runs, what is recorded on ``ledger.execution`` goes to ``ledger``."""
    ledgers: dict[uuid.UUID, Ledger] = db.info.setdefault(_OPEN, {})
    # the id taken now: after a failed flush the row's attributes are expired, and
    # reading one would need the database
    key = ledger.execution.id
    ledgers[key] = ledger
    try:
        yield ledger
    finally:
        ledgers.pop(key, None)


async def close_call(
    db: AsyncSession,
    ledger: Ledger,
    *,
    status: Literal["succeeded", "failed"],
    output: dict[str, Any] | None = None,
    error: str | None = None,
) -> Execution:
    """Write what the call recorded and end its execution with ``status``, in one
    statement; the execution as written."""
    execution = ledger.execution
    how: How = "update" if ledger.inserted else "insert"
    params = _params(ledger, execution.turn_id, execution.agent_id)
    # named apart from every column: a parameter named as a column of an UPDATE in the
    # statement would be taken as a value to set
    params.update(call_status=status, call_output=output, call_error=error)
    if how == "insert":
        params.update(
            call_parent=execution.parent_id,
            call_kind=execution.kind,
            call_name=execution.name,
            call_input=execution.input,
            call_started=ledger.started_at,
        )
    ended: Execution | None = await db.scalar(_closing(how), params)
    assert ended is not None
    remember(db, ended.id, ended.agent_id)  # the call's answer names it
    return ended


async def record_now(db: AsyncSession, ledger: Ledger) -> None:
    """Write what ``ledger`` gathered on an execution that already ended or belongs to
    another call."""
    execution = ledger.execution
    await db.execute(_closing("none"), _params(ledger, execution.turn_id, execution.agent_id))


def _params(ledger: Ledger, turn_id: uuid.UUID, agent_id: uuid.UUID) -> dict[str, Any]:
    return {
        "turn": turn_id,
        "agent": agent_id,
        "execution": ledger.execution.id,
        "count": len(ledger.events),
        # the rows' ids made here: no volatile function in the statement, which Citus
        # would refuse (docs/scaling.md)
        "events": [
            {
                **e,
                "id": str(uuid.uuid4()),
                "execution_id": str(e["execution_id"]) if e.get("execution_id") else None,
            }
            for e in ledger.events
        ],
        "invocations": ledger.invocations,
        "uses": [{**u, "id": str(uuid.uuid4())} for u in ledger.uses],
    }


def _elements(name: str, *, numbered: bool = False) -> Any:
    """The elements of the JSON array parameter ``name``, as rows of one column
    (``value``), and their positions (``n``, from 1) if ``numbered``."""
    return (
        func.jsonb_array_elements(bindparam(name, type_=JSONB))
        .table_valued(column("value", JSONB), with_ordinality="n" if numbered else None)
        .render_derived(name=name)
    )


@built_once
def _closing(how: How) -> Any:
    """The statement of :func:`close_call` (``how``: insert or update the execution) or
    of :func:`record_now` (``none``), built once and run with parameters."""
    uid: Uuid[Any] = Uuid()
    json = JSONB(none_as_null=True)
    agent = bindparam("agent", type_=uid)
    turn = bindparam("turn", type_=uid)
    execution_id = bindparam("execution", type_=uid)
    count = bindparam("count", type_=Integer)

    turns = table(Turn)
    allocated = (
        update(turns)
        .where(turns.c.id == turn, turns.c.agent_id == agent, count > literal_column("0"))
        .values(event_seq=turns.c.event_seq + count)
        .returning(turns.c.event_seq)
        .cte("allocated")
    )
    event = _elements("events", numbered=True)
    events = insert(table(TranscriptEvent)).from_select(
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
            cast(event.c.value["id"].astext, uid),
            agent,
            turn,
            cast(event.c.value["execution_id"].astext, uid),
            allocated.c.event_seq - count + event.c.n,
            event.c.value["type"].astext,
            event.c.value.op("->", return_type=JSONB)("payload"),
            event.c.value["tool_name"].astext,
            event.c.value["tool_call_id"].astext,
        ).select_from(allocated.join(event, true())),
    )
    invocation = _elements("invocations")
    invocations = insert(table(Invocation)).from_select(
        [
            "id",
            "agent_id",
            "execution_id",
            "purpose",
            "model",
            "input_tokens",
            "output_tokens",
            "counted",
        ],
        select(
            cast(invocation.c.value["id"].astext, uid),
            agent,
            execution_id,
            invocation.c.value["purpose"].astext,
            invocation.c.value["model"].astext,
            cast(invocation.c.value["input_tokens"].astext, Integer),
            literal_column("0"),
            cast(invocation.c.value["counted"].astext, Boolean),
        ),
    )
    use = _elements("uses")
    uses = insert(table(OutputUse)).from_select(
        ["id", "agent_id", "execution_id", "kind", "memory_version_id", "history_part_id", "rank"],
        select(
            cast(use.c.value["id"].astext, uid),
            agent,
            execution_id,
            literal_column("'RETRIEVED'"),
            cast(use.c.value["memory_version_id"].astext, uid),
            cast(use.c.value["history_part_id"].astext, uid),
            cast(use.c.value["rank"].astext, Integer),
        ),
    )
    writes = [
        events.cte("events"),
        invocations.cte("invocations"),
        uses.cte("uses"),
    ]
    if how == "none":
        return select(literal_column("1")).add_cte(*writes)
    executions = table(Execution)
    ends = {
        "status": bindparam("call_status", type_=String()),
        "output": bindparam("call_output", type_=json),
        "error": bindparam("call_error", type_=String()),
        "ended_at": CHANGED_AT,  # the database's clock
    }
    written: Insert | Update
    if how == "insert":
        written = insert(executions).values(
            id=execution_id,
            agent_id=agent,
            turn_id=turn,
            parent_id=bindparam("call_parent", type_=uid),
            kind=bindparam("call_kind", type_=String()),
            name=bindparam("call_name", type_=String()),
            input=bindparam("call_input", type_=json),
            created_at=bindparam("call_started", type_=executions.c.created_at.type),
            **ends,
        )
    else:
        written = (
            update(executions)
            .where(executions.c.id == execution_id, executions.c.agent_id == agent)
            .values(**ends)
        )
    ended = written.returning(*executions.c).cte("ended")
    return (
        select(aliased(Execution, ended, adapt_on_names=True))
        # the execution first: on Citus each write runs as a statement of its own, in
        # this order, and the other rows' foreign keys name the execution
        .add_cte(ended, *writes)
        .execution_options(populate_existing=True)
    )
