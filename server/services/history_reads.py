"""The dashboard's reads of kept history (R60, R62): a session's events a page at a
time, and what each event links to (its parts, transcript event and tool calls)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, and_, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import cursor
from server.domain import history as rules
from server.domain.history import ToolCall
from server.models import HistoryEvent, HistoryPart, TranscriptEvent
from server.services.reads import Page, check_first, counter


@dataclass(frozen=True, slots=True)
class EventDetails:
    """What a kept event links to: its parts, its transcript event, its calls."""

    parts: list[HistoryPart] = field(default_factory=list)
    transcript: TranscriptEvent | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)  # an agent reply's calls
    call: ToolCall | None = None  # the call a tool result answers


async def events_by_id(
    db: AsyncSession, ids: set[uuid.UUID], *, agent_id: uuid.UUID | None = None
) -> dict[uuid.UUID, HistoryEvent]:
    """Kept events by id (of ``agent_id`` when the caller knows it)."""
    if not ids:
        return {}
    of_agent = [] if agent_id is None else [col(HistoryEvent.agent_id) == agent_id]
    rows = await db.scalars(select(HistoryEvent).where(col(HistoryEvent.id).in_(ids), *of_agent))
    return {r.id: r for r in rows.all()}


async def event_details(
    db: AsyncSession, events: Sequence[HistoryEvent]
) -> dict[uuid.UUID, EventDetails]:
    """Parts, transcript event and tool calls of ``events``, in two statements."""
    if not events:
        return {}
    ids = [e.id for e in events]
    agents = sorted({e.agent_id for e in events})
    parts: dict[uuid.UUID, list[HistoryPart]] = defaultdict(list)
    for p in (
        await db.scalars(
            select(HistoryPart)
            .where(col(HistoryPart.agent_id).in_(agents), col(HistoryPart.event_id).in_(ids))
            .order_by(col(HistoryPart.event_id), col(HistoryPart.part))
        )
    ).all():
        parts[p.event_id].append(p)
    answer_turns = {e.turn_id for e in events if e.tool_call_id is not None}
    sources = (
        await db.scalars(
            select(TranscriptEvent).where(
                col(TranscriptEvent.agent_id).in_(agents),
                or_(
                    col(TranscriptEvent.id).in_([e.transcript_event_id for e in events]),
                    and_(
                        col(TranscriptEvent.turn_id).in_(answer_turns),
                        col(TranscriptEvent.type) == rules.AGENT_MESSAGE,
                    ),
                ),
            )
        )
    ).all()
    by_id = {t.id: t for t in sources}
    calls: dict[tuple[uuid.UUID, str], ToolCall] = {}
    for t in sources:
        if t.type == rules.AGENT_MESSAGE:
            for raw in t.payload.get("toolCalls", []):
                call = ToolCall.from_json(raw)
                calls[(t.turn_id, call.id)] = call
    out = {}
    for e in events:
        transcript = by_id.get(e.transcript_event_id)
        made = (
            [ToolCall.from_json(c) for c in transcript.payload.get("toolCalls", [])]
            if transcript is not None and e.role == "agent"
            else []
        )
        answers = calls.get((e.turn_id, e.tool_call_id)) if e.tool_call_id else None
        out[e.id] = EventDetails(
            parts=parts[e.id], transcript=transcript, tool_calls=made, call=answers
        )
    return out


async def list_session_history(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    first: int,
    after: str | None,
    turn_number: int | None = None,
    maximum: int = 100,
) -> Page[HistoryEvent]:
    """A session's kept events, newest first (by turn, then transcript order)."""
    check_first(first, maximum=maximum)
    stmt: Select[Any] = select(HistoryEvent).where(col(HistoryEvent.session_id) == session_id)
    if turn_number is not None:
        stmt = stmt.where(col(HistoryEvent.turn_number) == turn_number)
    listed = stmt
    if after:
        position = cursor.decode("history", after, int, int, uuid.UUID)
        key = (col(HistoryEvent.turn_number), col(HistoryEvent.sequence), col(HistoryEvent.id))
        stmt = stmt.where(tuple_(*key) < tuple_(*position))
    rows = (
        await db.scalars(
            stmt.order_by(
                col(HistoryEvent.turn_number).desc(),
                col(HistoryEvent.sequence).desc(),
                col(HistoryEvent.id).desc(),
            ).limit(first + 1)
        )
    ).all()
    return Page(
        items=[
            (cursor.encode("history", r.turn_number, r.sequence, r.id), r) for r in rows[:first]
        ],
        has_next=len(rows) > first,
        has_previous=bool(after),
        total=counter(db, listed),
    )


async def transcript_events(db: AsyncSession, ids: Sequence[uuid.UUID]) -> list[TranscriptEvent]:
    """Transcript events by id, in the order given (one statement)."""
    rows = await db.scalars(select(TranscriptEvent).where(col(TranscriptEvent.id).in_(ids)))
    found = {r.id: r for r in rows.all()}
    return [found[i] for i in ids if i in found]
