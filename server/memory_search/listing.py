"""Listing memory records newest first (R40, ``search_memory`` without a query).

A page is ``limit`` records by record creation, ``after`` the opaque cursor of
the previous page's last record. The cursor is a keyset position, so records
written meanwhile neither repeat nor shift later pages. Only records the reader
may find are listed (:func:`server.storage.gate.record_condition`,
``Purpose.SEARCH``), each as the version in force for it
(:func:`server.storage.gate.version_in_force`, R12).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import cursor
from server.domain.visibility import Purpose, Reader
from server.memory_search.ranking import Found
from server.memory_search.statement import NO_FILTERS, Filters
from server.models import MemoryRecord, MemoryVersion
from server.storage.gate import record_condition, version_in_force


def _where(reader: Reader, filters: Filters) -> ColumnElement[bool]:
    shown: ColumnElement[bool] = col(MemoryVersion.id) == version_in_force(reader)
    conds: list[ColumnElement[bool]] = [
        record_condition(reader, purpose=Purpose.SEARCH),
        shown,
        # Implied by the gate (a version belongs to its record's agent); stated so that the
        # planner can read the agent's versions from their index before joining records.
        col(MemoryVersion.agent_id) == reader.agent_id,
    ]
    if filters.kind is not None:
        conds.append(col(MemoryVersion.kind) == filters.kind)
    if filters.labels:
        conds.append(col(MemoryVersion.labels).contains(dict(filters.labels)))
    if filters.ids is not None:
        conds.append(col(MemoryRecord.id).in_(filters.ids))
    return and_(*conds)


async def listed(
    db: AsyncSession,
    *,
    reader: Reader,
    limit: int,
    after: str | None,
    filters: Filters = NO_FILTERS,
) -> tuple[list[Found], str | None]:
    """A page of records newest first, and the cursor of the next page (None: no more)."""
    stmt = (
        select(MemoryRecord, MemoryVersion)
        .join(MemoryVersion, col(MemoryVersion.record_id) == col(MemoryRecord.id))
        .where(_where(reader, filters))
    )
    if after is not None:
        (seq,) = cursor.decode("memory", after, cursor.seq)
        stmt = stmt.where(col(MemoryRecord.seq) < seq)
    rows = (await db.execute(stmt.order_by(col(MemoryRecord.seq).desc()).limit(limit + 1))).all()
    items = [Found(record=r, version=v) for r, v in rows[:limit]]
    more = len(rows) > limit
    return items, cursor.encode("memory", items[-1].record.seq) if more else None
