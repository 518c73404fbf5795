"""Recording a turn's conversation (R60): ``recordEvents``.

The event vocabulary (docs/history.md). The runtime appends,
to an open turn, what the agent saw and said, in order:

==============  =================  ==============================================
input type      transcript type    what it carries
==============  =================  ==============================================
USER_MESSAGE    ``message.user``   the incoming message, as the agent received it
AGENT_MESSAGE   ``message.agent``  a reply: its text and the tool calls it made,
                                   each with an id, a tool name and arguments
TOOL_RESULT     ``tool.result``    the result of the call ``toolCallId`` names
TOOL_ERROR      ``tool.error``     the error of the call ``toolCallId`` names
SKILL_LOAD      ``skill.load``     a skill's instructions loaded into context
RETRIEVAL       ``retrieval``      memory or history the runtime put before the
                                   model (a recall): the agent's own retrieval
==============  =================  ==============================================

A result names a call an earlier reply of the turn made, and takes the tool's
name from it. A native tool call (``add_memory``, ``search_memory``, ...) is
recorded by the server as it runs, as a ``tool.result`` or ``tool.error`` of
its execution; the runtime links it to the model's call with a TOOL_RESULT or
TOOL_ERROR that names that execution in ``toolExecutionId`` instead of giving
a text, so that the kept result names its call.

The whole batch is checked before anything is appended; a bad event is a
BAD_INPUT naming it (``events[2].toolCallId``) and records nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import history as rules
from server.domain.counts import check_count
from server.domain.history import ToolCall
from server.domain.text import check_text
from server.errors import BadInputError
from server.models import Execution, TranscriptEvent
from server.services.transcript import APPEND_RETURNING, appending
from server.services.turn_scope import open_scope
from server.storage.owners import of_agent

MAX_EVENTS = 100
MAX_TEXT = 100_000
MAX_CALLS = 64
MAX_CALL_ID = 200
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}")

# recordEvents input type -> transcript type
EVENT_TYPES = {
    "USER_MESSAGE": rules.USER_MESSAGE,
    "AGENT_MESSAGE": rules.AGENT_MESSAGE,
    "TOOL_RESULT": rules.TOOL_RESULT,
    "TOOL_ERROR": rules.TOOL_ERROR,
    "SKILL_LOAD": rules.SKILL_LOAD,
    "RETRIEVAL": rules.RETRIEVAL,
}


@dataclass(frozen=True, slots=True)
class EventInput:
    """One event as the runtime sends it; ``type`` is a key of ``EVENT_TYPES``."""

    type: str
    text: str | None = None
    name: str | None = None
    tool_calls: Sequence[ToolCall] | None = None
    tool_call_id: str | None = None
    tool_execution_id: uuid.UUID | None = None


async def record_events(
    db: AsyncSession,
    *,
    turn_id: uuid.UUID,
    events: Sequence[EventInput],
    execution_id: uuid.UUID | None = None,
) -> list[TranscriptEvent]:
    """Append the runtime's events to an open turn's transcript, in order.

    ``execution_id`` is the execution whose conversation they are (default: the
    turn's own). The whole batch is checked first; a bad event fails the call
    and records nothing.
    """
    # exclusive: recorders of one turn take turns, so call ids stay unique and answered once
    scope = await open_scope(db, turn_id=turn_id, caller_execution_id=execution_id, exclusive=True)
    check_count(events, field="events", maximum=MAX_EVENTS)
    # plain messages neither make nor answer calls: the turn's calls are read only for
    # a batch that does
    with_calls = any(
        e.tool_calls or e.tool_call_id is not None or e.tool_execution_id is not None
        for e in events
    )
    agent_id = scope.turn.agent_id
    so_far = (
        await _so_far(db, turn_id, agent_id) if with_calls else _SoFar(turn_id, agent_id, {}, set())
    )
    rows: list[dict[str, Any]] = []
    for i, event in enumerate(events):
        row = await _check_event(db, event, f"events[{i}]", so_far)
        rows.append({"execution_id": scope.caller.id, **row})
    inserted = await db.scalars(APPEND_RETURNING, appending(turn_id, scope.turn.agent_id, rows))
    return sorted(inserted.all(), key=lambda e: e.sequence)


@dataclass(slots=True)
class _SoFar:
    """The turn a batch is checked against, as of the event being checked: the tool calls
    its replies made, by id, and what is already answered: call ids, and (as
    ``execution:<id>``) the native executions already linked to a call. Each event
    checked adds to them."""

    turn_id: uuid.UUID
    agent_id: uuid.UUID
    calls: dict[str, ToolCall]
    answered: set[str]


async def _so_far(db: AsyncSession, turn_id: uuid.UUID, agent_id: uuid.UUID) -> _SoFar:
    """The turn's calls and answers as its transcript holds them."""
    rows = (
        await db.execute(
            select(
                col(TranscriptEvent.type),
                col(TranscriptEvent.tool_call_id),
                col(TranscriptEvent.payload),
                col(TranscriptEvent.execution_id),
            )
            .where(
                col(TranscriptEvent.agent_id) == agent_id,
                col(TranscriptEvent.turn_id) == turn_id,
                col(TranscriptEvent.type).in_(
                    (rules.AGENT_MESSAGE, rules.TOOL_RESULT, rules.TOOL_ERROR)
                ),
            )
            .order_by(col(TranscriptEvent.sequence))
        )
    ).all()
    so_far = _SoFar(turn_id, agent_id, {}, set())
    for type_, call_id, payload, execution_id in rows:
        if type_ == rules.AGENT_MESSAGE:
            for raw in payload.get("toolCalls", []):
                call = ToolCall.from_json(raw)
                so_far.calls[call.id] = call
        elif call_id is not None:
            so_far.answered.add(call_id)
            if "execution" in payload:
                so_far.answered.add(f"execution:{execution_id}")
    return so_far


def _refused(field: str, says: str) -> BadInputError:
    """The error of an input ``field`` that is not as it must be: it ``says`` why."""
    return BadInputError(f"{field} {says}", field=field)


def _text(value: str | None, field: str, *, required: bool) -> str | None:
    if value is None:
        if required:
            raise _refused(field, "is required for this event type")
        return None
    if len(value) > MAX_TEXT:
        raise _refused(field, f"is over {MAX_TEXT} characters")
    if required and not value.strip():
        raise _refused(field, "must not be blank")
    return value


def _only(event: EventInput, at: str, allowed: set[str]) -> None:
    given = {
        "text": event.text is not None,
        "name": event.name is not None,
        "toolCalls": event.tool_calls is not None,
        "toolCallId": event.tool_call_id is not None,
        "toolExecutionId": event.tool_execution_id is not None,
    }
    for key, present in given.items():
        if present and key not in allowed:
            raise _refused(f"{at}.{key}", f"is not used by {event.type}")


async def _check_event(
    db: AsyncSession, event: EventInput, at: str, so_far: _SoFar
) -> dict[str, Any]:
    """Validate one event against the turn so far; the transcript row's columns."""
    if event.type not in EVENT_TYPES:
        raise _refused(f"{at}.type", f"must be one of {', '.join(EVENT_TYPES)}")
    kind = EVENT_TYPES[event.type]
    if event.type == "USER_MESSAGE":
        _only(event, at, {"text"})
        return {"type": kind, "payload": {"text": _text(event.text, f"{at}.text", required=True)}}
    if event.type == "AGENT_MESSAGE":
        _only(event, at, {"text", "toolCalls"})
        text = _text(event.text, f"{at}.text", required=False)
        made = _check_calls(event.tool_calls or [], f"{at}.toolCalls", so_far.calls)
        if not (text and text.strip()) and not made:
            raise BadInputError(f"{at} needs a text or tool calls", field=f"{at}.text")
        return {
            "type": kind,
            "payload": {"text": text or "", "toolCalls": [c.to_json() for c in made]},
        }
    if event.type in ("SKILL_LOAD", "RETRIEVAL"):
        _only(event, at, {"text", "name"})
        name = _name(event.name, f"{at}.name", required=event.type == "SKILL_LOAD")
        text = _text(event.text, f"{at}.text", required=False)
        return {"type": kind, "payload": {"name": name, "text": text or ""}}
    _only(event, at, {"text", "toolCallId", "toolExecutionId"})
    return await _check_result(db, event, at, kind, so_far)


def _name(value: str | None, field: str, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if value is None or not _TOOL_NAME.fullmatch(value):
        raise _refused(field, "must be 1 to 128 letters, digits or _ . : -")
    return value


def _check_calls(made: Sequence[ToolCall], at: str, calls: dict[str, ToolCall]) -> list[ToolCall]:
    if len(made) > MAX_CALLS:
        raise _refused(at, f"holds more than {MAX_CALLS} calls")
    out = []
    for j, call in enumerate(made):
        here = f"{at}[{j}]"
        check_text(call.id, field=f"{here}.id", maximum=MAX_CALL_ID)
        if call.id in calls:
            raise BadInputError(
                f"tool call id {call.id!r} is already used in this turn", field=f"{here}.id"
            )
        _name(call.name, f"{here}.name", required=True)
        arguments = {} if call.arguments is None else call.arguments
        if len(rules.compact_json(arguments)) > MAX_TEXT:
            raise _refused(f"{here}.arguments", f"must be JSON of at most {MAX_TEXT} characters")
        checked = ToolCall(id=call.id, name=call.name, arguments=arguments)
        calls[call.id] = checked
        out.append(checked)
    return out


async def _check_result(
    db: AsyncSession, event: EventInput, at: str, kind: str, so_far: _SoFar
) -> dict[str, Any]:
    """Validate a tool result or error: it answers a call of the turn, once, with a text
    or by naming the native execution that ran the call."""
    call_id = event.tool_call_id
    if call_id is None:
        raise _refused(f"{at}.toolCallId", f"is required for {event.type}")
    call = so_far.calls.get(call_id)
    if call is None:
        raise BadInputError(
            f"no tool call {call_id!r} in this turn: record the agent message that made it first",
            field=f"{at}.toolCallId",
        )
    if call_id in so_far.answered:
        raise BadInputError(f"tool call {call_id!r} already has a result", field=f"{at}.toolCallId")
    so_far.answered.add(call_id)
    columns = {"type": kind, "tool_name": call.name, "tool_call_id": call_id}
    if event.tool_execution_id is None:
        text = _text(event.text, f"{at}.text", required=False)
        if text is None:
            raise _refused(
                f"{at}.text", "is required unless toolExecutionId names a native tool call"
            )
        key = "error" if kind == rules.TOOL_ERROR else "text"
        return {**columns, "payload": {key: text}}
    if event.text is not None:
        raise _refused(f"{at}.text", "is taken from the native tool call; leave it out")
    native = await db.get(
        Execution, event.tool_execution_id, options=of_agent(Execution, so_far.agent_id)
    )
    field = f"{at}.toolExecutionId"
    if native is None or native.turn_id != so_far.turn_id or native.kind != "tool":
        raise BadInputError(
            f"no native tool call {event.tool_execution_id} in this turn", field=field
        )
    if native.name != call.name:
        raise BadInputError(
            f"call {call_id!r} is to {call.name}, but execution {native.id} ran {native.name}",
            field=field,
        )
    if f"execution:{native.id}" in so_far.answered:
        raise BadInputError(f"execution {native.id} already answers another call", field=field)
    so_far.answered.add(f"execution:{native.id}")
    expected = "failed" if kind == rules.TOOL_ERROR else "succeeded"
    if native.status != expected:
        other = "TOOL_RESULT" if native.status == "succeeded" else "TOOL_ERROR"
        raise BadInputError(
            f"execution {native.id} {native.status}: record it as {other}", field=field
        )
    return {**columns, "execution_id": native.id, "payload": {"execution": str(native.id)}}
