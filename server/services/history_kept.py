"""What of a turn's transcript session history keeps (R60), per
``harness.history.index`` of the turn's agent version.

The agent's own conversation is kept: the events of the turn's execution and of
the native tools it called (a helper's or a program's are its own):

- ``messages``: user messages and agent replies (text and tool calls);
- ``messages_and_tools``: also tool results and errors, the agent's own tools
  and the native tools that write (``add_memory``, ``delete_memory``);
- never: skill loads, retrievals, and the native tools that retrieve
  (``RETRIEVAL_TOOLS``: ``search_memory``, ``recall``, ``read_memory``,
  ``search_history``), whether they succeeded or failed.

Which event is kept under which role, and its text, are the rules of
:mod:`server.domain.history`; this module reads a turn's transcript and applies
them. Keeping the events is :mod:`server.services.history`; the memory review
reads the same conversation (:func:`conversation`, R50).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import history as rules
from server.domain.history import ToolCall
from server.models import Execution, TranscriptEvent, Turn
from server.storage.built import built_once
from server.storage.owners import agent_of


class _EventColumns(Protocol):
    """What keeping reads of a transcript event, and of its execution (``run_*``)."""

    id: uuid.UUID
    sequence: int
    type: str
    tool_name: str | None
    tool_call_id: str | None
    execution_id: uuid.UUID | None
    payload: dict[str, Any]
    run_kind: str | None
    run_parent: uuid.UUID | None
    run_name: str | None
    run_status: str | None
    run_output: dict[str, Any] | None
    run_error: str | None


@dataclass(frozen=True, slots=True)
class KeptEvent:
    """A transcript event as kept: where it comes from (plain values: a prepared keep
    outlives the rows it was read from), its role, tool and text."""

    transcript_event_id: uuid.UUID
    sequence: int
    tool_call_id: str | None
    role: rules.Role
    tool_name: str | None
    is_error: bool
    execution_id: uuid.UUID | None
    text: str


# a turn's transcript events in order, each with its execution and the turn's own, as
# columns (read now: as prepared, an execution may since have ended)
@built_once
def _events_to_keep() -> Any:
    return (
        select(
            col(TranscriptEvent.id),
            col(TranscriptEvent.sequence),
            col(TranscriptEvent.type),
            col(TranscriptEvent.tool_name),
            col(TranscriptEvent.tool_call_id),
            col(TranscriptEvent.execution_id),
            col(TranscriptEvent.payload),
            col(Execution.kind).label("run_kind"),
            col(Execution.parent_id).label("run_parent"),
            col(Execution.name).label("run_name"),
            col(Execution.status).label("run_status"),
            col(Execution.output).label("run_output"),
            col(Execution.error).label("run_error"),
            select(col(Execution.id))
            .where(
                col(Execution.agent_id) == bindparam("agent"),
                col(Execution.turn_id) == bindparam("turn"),
                col(Execution.kind) == "turn",
            )
            .scalar_subquery()
            .label("own"),
        )
        .outerjoin(
            Execution,
            and_(
                col(Execution.id) == col(TranscriptEvent.execution_id),
                col(Execution.agent_id) == bindparam("agent"),
            ),
        )
        .where(
            col(TranscriptEvent.agent_id) == bindparam("agent"),
            col(TranscriptEvent.turn_id) == bindparam("turn"),
        )
        .order_by(col(TranscriptEvent.sequence))
    )


async def conversation(
    db: AsyncSession, turn_id: uuid.UUID, index: rules.HistoryIndex
) -> list[tuple[rules.Role, str | None, str]]:
    """What of a turn's transcript ``index`` keeps, in order, whether or not the turn is
    kept: each event's role, tool and text (the memory review reads it, R50)."""
    return [(k.role, k.tool_name, k.text) for k in await kept_events(db, turn_id, index)]


async def kept_events(
    db: AsyncSession, turn_id: uuid.UUID, index: rules.HistoryIndex
) -> list[KeptEvent]:
    """The events of a turn's transcript that ``index`` keeps, in order (R60)."""
    # columns, not ORM rows: nothing here changes them
    agent_id = await agent_of(db, Turn, turn_id)
    rows = (await db.execute(_events_to_keep(), {"turn": turn_id, "agent": agent_id})).all()
    events: Sequence[_EventColumns] = rows
    own = rows[0].own if rows else None
    linked = {e.execution_id for e in events if e.tool_call_id is not None}
    kept: list[KeptEvent] = []
    for event in events:
        role = rules.kept_role(event.type, event.tool_name, index=index)
        run = event.execution_id
        if role is None or run is None:
            continue
        if event.run_kind == "tool":
            # a native call: the agent's own, once (the runtime's link, if any, names the call)
            if event.run_parent != own or (event.tool_call_id is None and run in linked):
                continue
            failed = event.run_status == "failed"
            text = rules.native_result_text(event.run_output, event.run_error if failed else None)
            kept.append(_kept(event, role, event.run_name, failed, text))
        elif run == own:
            is_error = event.type == rules.TOOL_ERROR
            kept.append(_kept(event, role, event.tool_name, is_error, _runtime_text(event)))
    return [k for k in kept if k.text.strip()]


def _kept(
    event: _EventColumns, role: rules.Role, tool_name: str | None, is_error: bool, text: str
) -> KeptEvent:
    return KeptEvent(
        event.id,
        event.sequence,
        event.tool_call_id,
        role,
        tool_name,
        is_error,
        event.execution_id,
        text,
    )


def _runtime_text(event: _EventColumns) -> str:
    payload = event.payload
    if event.type == rules.AGENT_MESSAGE:
        calls = [ToolCall.from_json(c) for c in payload.get("toolCalls", [])]
        return rules.agent_message_text(payload.get("text"), calls)
    return str(payload.get("error" if event.type == rules.TOOL_ERROR else "text") or "")


__all__ = ["KeptEvent", "conversation", "kept_events"]
