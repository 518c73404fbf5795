"""An agent's memory records as they stood at a moment: at a turn (what that turn could
see when it began) or at a time (what the listing showed then). The rule is
:mod:`server.domain.as_of`; the SQL :mod:`server.storage.as_of`. Who may ask is
decided by the caller's grants (R71, and for a turn the session's), before this runs.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import cursor
from server.domain.visibility import Reader
from server.errors import BadInputError, NotFoundError
from server.models import Agent, AgentVersion, MemoryRecord, MemoryVersion, Turn
from server.services.agents import config_of
from server.services.reads import Page, RecordFilter, check_first, counter
from server.storage.as_of import standing_condition, version_at
from server.storage.owners import of_agent


@dataclass(frozen=True, slots=True)
class Moment:
    """When, and as whom: the reader whose view of the memory is shown."""

    at: datetime
    reader: Reader


def moment_at(*, agent_id: uuid.UUID, at: datetime) -> Moment:
    """The memory at a time, as the API's listing shows it (every record of the agent)."""
    if at.utcoffset() is None:
        raise BadInputError("asOf.time needs its UTC offset, e.g. +00:00", field="asOf.time")
    return Moment(at=at, reader=Reader.for_api(agent_id=agent_id))


async def moment_of_turn(db: AsyncSession, *, agent_id: uuid.UUID, turn_id: uuid.UUID) -> Moment:
    """The memory as turn ``turn_id`` could see it when it began: its session, the scopes
    its agent version reads, live or preview (R11, R13). A turn of another agent is
    answered as one that does not exist."""
    # read with the agent named: the turn of another agent is not found (R10)
    turn = await db.get(Turn, turn_id, options=of_agent(Turn, agent_id))
    if turn is None or turn.agent_id != agent_id:
        raise NotFoundError(f"no turn {turn_id} of this agent", field="asOf.turnId")
    version = await db.get(
        AgentVersion, turn.agent_version_id, options=of_agent(AgentVersion, agent_id)
    )
    agent = await db.get(Agent, agent_id)
    assert version is not None and agent is not None
    memory = config_of(version, agent).memory
    reader = Reader.for_turn(
        agent_id=agent_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        preview=turn.preview,
        read_scopes=memory.read_scopes,
        write_scopes=memory.write_scopes,
    )
    return Moment(at=turn.created_at, reader=reader)


def _listed(moment: Moment, filter: RecordFilter, *columns: Any) -> Select[Any]:
    stmt: Select[Any] = (
        select(*columns)
        .select_from(MemoryRecord)
        .join(
            MemoryVersion,
            and_(
                col(MemoryVersion.id) == version_at(moment.at, moment.reader.agent_id),
                col(MemoryVersion.agent_id) == col(MemoryRecord.agent_id),
            ),
        )
        .where(standing_condition(moment.reader, moment.at))
    )
    if filter.status:
        stmt = stmt.where(col(MemoryVersion.status) == filter.status)
    if filter.scope:
        stmt = stmt.where(col(MemoryRecord.scope) == filter.scope)
    if filter.session_id:
        stmt = stmt.where(col(MemoryRecord.session_id) == filter.session_id)
    if filter.preview is not None:
        stmt = stmt.where(col(MemoryRecord.preview).is_(filter.preview))
    if filter.kind:
        stmt = stmt.where(col(MemoryVersion.kind) == filter.kind)
    if filter.labels:
        stmt = stmt.where(col(MemoryVersion.labels).contains(dict(filter.labels)))
    return stmt


async def list_records_as_of(
    db: AsyncSession,
    *,
    moment: Moment,
    first: int,
    after: str | None,
    filter: RecordFilter,
    maximum: int = 100,
) -> Page[tuple[MemoryRecord, MemoryVersion]]:
    """A page of the records standing at the moment, newest first, each with the version
    in force then."""
    check_first(first, maximum=maximum)
    stmt = _listed(moment, filter, MemoryRecord, MemoryVersion)
    if after is not None:
        (seq,) = cursor.decode("record", after, cursor.seq)
        stmt = stmt.where(col(MemoryRecord.seq) < seq)
    rows = (await db.execute(stmt.order_by(col(MemoryRecord.seq).desc()).limit(first + 1))).all()
    return Page(
        items=[(cursor.encode("record", r.seq), (r, v)) for r, v in rows[:first]],
        has_next=len(rows) > first,
        has_previous=after is not None,
        total=counter(db, _listed(moment, filter, col(MemoryRecord.id))),
    )
