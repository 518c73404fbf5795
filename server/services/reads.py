"""Dashboard reads: pages of sessions, turns and memory records, newest first.

Memory listing goes through the visibility gate with an API reader (committed
records of the agent, preview or live, any status); grants decide who may ask.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import cursor
from server.domain.visibility import Purpose, Reader
from server.errors import BadInputError
from server.models import (
    Agent,
    Execution,
    MemoryRecord,
    MemoryVersion,
    Session,
    TranscriptEvent,
    Turn,
)
from server.storage.gate import effective_status, record_condition

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[tuple[str, T]]  # (cursor, item)
    has_next: bool
    # read after a cursor: the items up to it come before this page
    has_previous: bool = False
    # counts the whole list under the page's own condition, when asked; None: not counted
    total: Callable[[], Awaitable[int]] | None = None


def counter(db: AsyncSession, stmt: Select[Any]) -> Callable[[], Awaitable[int]]:
    """The COUNT of what ``stmt`` (a list's condition, before its cursor) selects: one
    statement, run only when a reader asks for it."""

    async def count() -> int:
        found = await db.scalar(select(func.count()).select_from(stmt.order_by(None).subquery()))
        return int(found or 0)

    return count


@dataclass(frozen=True, slots=True)
class RecordFilter:
    status: str | None = None
    kind: str | None = None
    scope: str | None = None
    session_id: uuid.UUID | None = None
    preview: bool | None = None
    labels: tuple[tuple[str, str], ...] = ()


def check_first(first: int, *, maximum: int) -> int:
    if not 1 <= first <= maximum:
        raise BadInputError(f"first must be from 1 to {maximum}", field="first")
    return first


async def list_records(
    db: AsyncSession,
    *,
    agent_id: uuid.UUID,
    first: int,
    after: str | None,
    filter: RecordFilter,
    maximum: int = 100,
) -> Page[MemoryRecord]:
    check_first(first, maximum=maximum)
    reader = Reader.for_api(agent_id=agent_id)
    stmt: Select[Any] = select(MemoryRecord).where(record_condition(reader, purpose=Purpose.READ))
    if filter.status:
        stmt = stmt.where(effective_status(reader) == filter.status)
    if filter.scope:
        stmt = stmt.where(col(MemoryRecord.scope) == filter.scope)
    if filter.session_id:
        stmt = stmt.where(col(MemoryRecord.session_id) == filter.session_id)
    if filter.preview is not None:
        stmt = stmt.where(col(MemoryRecord.preview).is_(filter.preview))
    if filter.kind or filter.labels:
        stmt = stmt.join(
            MemoryVersion,
            and_(
                col(MemoryVersion.id) == col(MemoryRecord.current_version_id),
                col(MemoryVersion.agent_id) == col(MemoryRecord.agent_id),
            ),
        )
        if filter.kind:
            stmt = stmt.where(col(MemoryVersion.kind) == filter.kind)
        if filter.labels:
            stmt = stmt.where(col(MemoryVersion.labels).contains(dict(filter.labels)))
    listed = stmt
    if after is not None:
        (seq,) = cursor.decode("record", after, cursor.seq)
        stmt = stmt.where(col(MemoryRecord.seq) < seq)
    rows = (await db.scalars(stmt.order_by(col(MemoryRecord.seq).desc()).limit(first + 1))).all()
    return Page(
        items=[(cursor.encode("record", r.seq), r) for r in rows[:first]],
        has_next=len(rows) > first,
        has_previous=after is not None,
        total=counter(db, listed),
    )


def _time_keyset(model: Any, kind: str, after: str | None, *, oldest_first: bool = False) -> Any:
    if after is None:
        return None
    when, key = cursor.decode(kind, after, datetime.fromisoformat, uuid.UUID)
    if oldest_first:
        return or_(model.created_at > when, and_(model.created_at == when, model.id > key))
    return or_(model.created_at < when, and_(model.created_at == when, model.id < key))


async def _time_page(
    db: AsyncSession,
    model: Any,
    kind: str,
    where: Any,
    first: int,
    after: str | None,
    maximum: int,
    *,
    oldest_first: bool = False,
    counted: bool = True,
) -> Page[Any]:
    """A page by time (newest first, or oldest first), counted unless ``counted`` is
    False."""
    check_first(first, maximum=maximum)
    listed = stmt = select(model).where(where)
    keyset = _time_keyset(model, kind, after, oldest_first=oldest_first)
    if keyset is not None:
        stmt = stmt.where(keyset)
    if oldest_first:
        order = (model.created_at.asc(), model.id.asc())
    else:
        order = (model.created_at.desc(), model.id.desc())
    rows = (await db.scalars(stmt.order_by(*order).limit(first + 1))).all()
    return Page(
        items=[(cursor.encode(kind, r.created_at.isoformat(), r.id), r) for r in rows[:first]],
        has_next=len(rows) > first,
        has_previous=after is not None,
        total=counter(db, listed) if counted else None,
    )


async def _numbered_page(
    db: AsyncSession,
    model: Any,
    kind: str,
    where: Any,
    number: Any,
    first: int,
    after: str | None,
    maximum: int,
) -> Page[Any]:
    """A page in the order of ``number`` (an integer column unique under ``where``),
    lowest first."""
    check_first(first, maximum=maximum)
    listed = stmt = select(model).where(where)
    if after is not None:
        (position,) = cursor.decode(kind, after, cursor.seq)
        stmt = stmt.where(number > position)
    rows = (await db.scalars(stmt.order_by(number.asc()).limit(first + 1))).all()
    name = number.key
    return Page(
        items=[(cursor.encode(kind, getattr(r, name)), r) for r in rows[:first]],
        has_next=len(rows) > first,
        has_previous=after is not None,
        total=counter(db, listed),
    )


async def list_transcript(
    db: AsyncSession, *, turn_id: uuid.UUID, first: int, after: str | None, maximum: int = 100
) -> Page[TranscriptEvent]:
    """A turn's transcript events, in order."""
    return await _numbered_page(
        db,
        TranscriptEvent,
        "event",
        TranscriptEvent.turn_id == turn_id,
        TranscriptEvent.sequence,
        first,
        after,
        maximum,
    )


async def list_versions(
    db: AsyncSession,
    *,
    record_id: uuid.UUID,
    staged_by: uuid.UUID | None,
    first: int,
    after: str | None,
    maximum: int = 100,
    through: int | None = None,
) -> Page[MemoryVersion]:
    """A record's versions, oldest first, but those ``staged_by`` (the open turn that
    changes the record) wrote: an API reader does not see them before it commits.
    ``through``: only the versions up to that number (the record as it stood then)."""
    where: Any = MemoryVersion.record_id == record_id
    if through is not None:
        where = and_(where, col(MemoryVersion.number) <= through)
    if staged_by is not None:
        turn = col(MemoryVersion.turn_id)
        where = and_(where, or_(turn.is_(None), turn != staged_by))
    return await _numbered_page(
        db,
        MemoryVersion,
        "version",
        where,
        MemoryVersion.number,
        first,
        after,
        maximum,
    )


async def list_executions(
    db: AsyncSession, *, turn_id: uuid.UUID, first: int, after: str | None, maximum: int = 100
) -> Page[Execution]:
    """A turn's executions, oldest first."""
    return await _time_page(
        db,
        Execution,
        "execution",
        Execution.turn_id == turn_id,
        first,
        after,
        maximum,
        oldest_first=True,
    )


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions to list; ``None`` matches every session."""

    started_after: datetime | None = None  # created at or after
    started_before: datetime | None = None  # created before
    has_failed_turns: bool | None = None  # a turn that failed or rolled back
    preview: bool | None = None  # a turn in preview mode


def _has_turn(*where: Any) -> Any:
    """A session has a turn that matches ``where`` (one probe of the turns' index by
    session)."""
    return (
        select(col(Turn.id))
        .where(col(Turn.session_id) == col(Session.id), col(Turn.agent_id) == col(Session.agent_id))
        .where(*where)
        .exists()
    )


def session_conditions(found: SessionFilter) -> list[Any]:
    """The conditions on sessions ``found`` names."""
    conds: list[Any] = []
    if found.started_after is not None:
        conds.append(col(Session.created_at) >= found.started_after)
    if found.started_before is not None:
        conds.append(col(Session.created_at) < found.started_before)
    if found.has_failed_turns is not None:
        failed = _has_turn(col(Turn.status).in_(("failed", "rolled_back")))
        conds.append(failed if found.has_failed_turns else ~failed)
    if found.preview is not None:
        preview = _has_turn(col(Turn.preview).is_(True))
        conds.append(preview if found.preview else ~preview)
    return conds


async def list_sessions(
    db: AsyncSession,
    *,
    agent_id: uuid.UUID,
    first: int,
    after: str | None,
    maximum: int = 100,
    filter: SessionFilter | None = None,
) -> Page[Session]:
    """An agent's sessions, newest first: those ``filter`` matches."""
    where = and_(col(Session.agent_id) == agent_id, *session_conditions(filter or SessionFilter()))
    return await _time_page(db, Session, "session", where, first, after, maximum)


async def session_by_external_id(
    db: AsyncSession, *, agent_id: uuid.UUID, external_id: str
) -> Session | None:
    """The agent's session its caller names ``external_id`` (unique per agent)."""
    found: Session | None = await db.scalar(
        select(Session).where(
            col(Session.agent_id) == agent_id, col(Session.external_id) == external_id
        )
    )
    return found


async def list_turns(
    db: AsyncSession,
    *,
    session_id: uuid.UUID | None = None,
    agent_id: uuid.UUID | None = None,
    first: int,
    after: str | None,
    maximum: int = 100,
    oldest_first: bool = False,
) -> Page[Turn]:
    """A session's (or an agent's) turns by when they began, newest first unless
    ``oldest_first``; a cursor is read in the order it was made in."""
    where = Turn.session_id == session_id if session_id else Turn.agent_id == agent_id
    kind = "turn-oldest" if oldest_first else "turn"
    return await _time_page(db, Turn, kind, where, first, after, maximum, oldest_first=oldest_first)


async def turn_memories(
    db: AsyncSession, *, agent_id: uuid.UUID, turn_id: uuid.UUID
) -> list[MemoryRecord]:
    """What a turn wrote (spec's ``Action.memories``): records it created or changed,
    live and preview; a preview deletion is a preview record of status DELETED.

    Read as an API reader: what an open turn has staged is not shown until it
    commits (R12), and a rolled-back turn wrote nothing."""
    reader = Reader.for_api(agent_id=agent_id)
    touched = select(col(MemoryVersion.record_id)).where(
        col(MemoryVersion.agent_id) == agent_id, col(MemoryVersion.turn_id) == turn_id
    )
    rows = await db.scalars(
        select(MemoryRecord)
        .where(
            col(MemoryRecord.id).in_(touched),
            record_condition(reader, purpose=Purpose.READ),
            col(MemoryRecord.pending_turn_id).is_distinct_from(turn_id),
        )
        .order_by(col(MemoryRecord.seq))
    )
    return list(rows.all())


async def list_agents(
    db: AsyncSession, *, namespace: str, first: int, after: str | None, maximum: int = 100
) -> Page[Any]:
    # not counted: its agents are decided one by one, and a count would tell of those a
    # reader may not see
    return await _time_page(
        db, Agent, "agent", Agent.namespace == namespace, first, after, maximum, counted=False
    )


async def agent_ids_in(
    db: AsyncSession, *, namespace: str, agent_id: uuid.UUID | None = None
) -> list[uuid.UUID]:
    """The agents of a namespace (or the one of them ``agent_id`` names), oldest first."""
    stmt = select(col(Agent.id)).where(col(Agent.namespace) == namespace)
    if agent_id is not None:
        stmt = stmt.where(col(Agent.id) == agent_id)
    return list((await db.scalars(stmt.order_by(col(Agent.created_at), col(Agent.id)))).all())


async def agent_by_name(db: AsyncSession, *, namespace: str, name: str) -> Agent | None:
    return await db.scalar(
        select(Agent).where(
            col(Agent.namespace) == namespace,
            col(Agent.name) == name,
        )
    )
