"""Redaction of memory in what a response carries (R12, R70, R71): the memory tools'
own inputs and outputs, the memory events of a transcript, and the arguments of the
memory calls an agent reply names. Without the memory read grant they are redacted;
in an open turn they are staged, shown to no one but that turn's own operations until
it commits (as its records are NOT_FOUND to every reader); in a rolled-back or failed
turn they are discarded memory that only the agent itself reads. The masking itself is
:mod:`server.domain.redaction`."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import and_, select
from sqlmodel import col

from resolvers.context import Context
from resolvers.grants import Resource, decide, namespace_of, read_columns
from server import models
from server.domain.grants import AGENT_SELF
from server.domain.history import AGENT_MESSAGE
from server.domain.redaction import (
    MEMORY_TOOLS,
    argument_spans,
    calls_of_payload,
    carries_memory_calls,
    mask,
    mask_window,
    redact_payload,
)
from server.models.rows import ExecutionRow

_MEMORY_EVENTS = frozenset({"memory.pinned", "retrieval"})
# rows of a turn's own record, which its end may discard (R12); kept history is of
# committed turns only
_TURN_ROWS = (models.Execution, ExecutionRow, models.TranscriptEvent)
REDACTED = "redacted: needs SELECT on {ns}.AgentMemory.indexes.* and {ns}.AgentMemory.document"
DISCARDED = {
    "rolled_back": "discarded: the turn rolled back",
    "failed": "discarded: the turn failed",
}
STAGED = "staged: the turn has not committed"
_WITHHELD = frozenset({*DISCARDED.values(), STAGED})  # shown as {"redacted": ...}, not null


def carries_memory(row: Any, field: str) -> bool | None:
    """Whether this field's value is memory (the memory tools' own input and output):
    ``True`` for all of it, ``None`` when it may hold some (an agent reply naming memory
    calls, or a history part, which depends on its event), ``False`` for none."""
    if isinstance(row, models.Execution | ExecutionRow) and field in ("input", "output"):
        return row.kind == "tool" and row.name in MEMORY_TOOLS
    if isinstance(row, models.TranscriptEvent) and field == "payload":
        if row.type in _MEMORY_EVENTS or row.tool_name in MEMORY_TOOLS:
            return True
        if row.type == AGENT_MESSAGE and carries_memory_calls(calls_of_payload(row.payload)):
            return None
        return False
    if isinstance(row, models.HistoryEvent) and field == "text":
        if row.tool_name in MEMORY_TOOLS:
            return True
        return None if row.role == "agent" else False
    if isinstance(row, models.HistoryPart) and field == "text":
        return None
    return False


async def _memory_note(
    context: Context, agent_id: uuid.UUID, turn_id: uuid.UUID | None = None
) -> str | None:
    """``None`` when the caller may read this memory of the agent; else what to show
    instead. What the memory tools of an open turn (``turn_id``) were given and gave is
    staged (R12): shown to no one but that turn's own operations until it commits, as
    its records are. In a rolled-back or failed turn it is discarded memory: only the
    agent itself still reads it."""
    decision = await decide(context, Resource.MEMORY, agent_id)
    if not decision.allowed:
        return REDACTED.format(ns=await namespace_of(context, agent_id) or "?")
    if turn_id is None:
        return None
    status = await context.loaders.turn_status.load(turn_id) or ""
    if status == "open":
        return None if turn_id == context.acting_turn else STAGED
    if decision is AGENT_SELF:
        return None
    return DISCARDED.get(status)


async def _reply_of(context: Context, event_id: uuid.UUID) -> tuple[str | None, str, Any] | None:
    """A kept event's tool name, text and the payload of the agent reply it keeps."""
    found = await read_columns(
        context,
        select(
            col(models.HistoryEvent.tool_name),
            col(models.HistoryEvent.text),
            col(models.TranscriptEvent.payload),
        )
        .join(
            models.TranscriptEvent,
            and_(
                col(models.TranscriptEvent.id) == col(models.HistoryEvent.transcript_event_id),
                col(models.TranscriptEvent.agent_id) == col(models.HistoryEvent.agent_id),
            ),
        )
        .where(col(models.HistoryEvent.id) == event_id),
    )
    return None if found is None else (found[0], found[1], found[2])


async def redacted(context: Context, row: Any, field: str, value: Any) -> Any:
    carries = carries_memory(row, field)
    if carries is False:
        return value
    turn_id = row.turn_id if isinstance(row, _TURN_ROWS) else None
    note = await _memory_note(context, row.agent_id, turn_id)
    if note is None:
        return value
    if carries is None:
        return await _masked(context, row, value, note)
    if field == "payload":
        return {"redacted": note}
    if field in ("input", "output"):
        return {"redacted": note} if note in _WITHHELD else None
    return f"[{note}]"


async def _masked(context: Context, row: Any, value: Any, note: str) -> Any:
    """An agent reply's payload or kept text (or a part of it) without the arguments of
    its memory calls (server/domain/redaction.py)."""
    if isinstance(row, models.TranscriptEvent):
        return redact_payload(value, note)
    event_id = row.id if isinstance(row, models.HistoryEvent) else row.event_id
    reply = await _reply_of(context, event_id)
    if reply is None:
        return f"[{note}]"
    tool_name, whole, payload = reply
    if tool_name in MEMORY_TOOLS:
        return f"[{note}]"
    spans = argument_spans(whole, calls_of_payload(payload))
    if isinstance(row, models.HistoryEvent):
        return mask(value, spans)
    return mask_window(whole, value, spans)


async def redacted_arguments(context: Context, agent_id: uuid.UUID, value: Any) -> Any:
    note = await _memory_note(context, agent_id)
    return value if note is None else {"redacted": note}


PAYLOAD_FIELDS = frozenset({"input", "output", "payload", "text"})
