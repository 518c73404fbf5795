"""Model usage as dashboards read it: the calls of turns, sessions and agents added up by
model (:mod:`server.domain.usage`), and an agent's activity day by day.

Each total is one grouped statement over the counted model calls (``counted``: the
runtime's, not the server's own embeddings), reached through the indexes of the rows
it starts from (a turn's executions, a session's turns, an agent's calls). Days are
UTC days.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import Date, and_, cast, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.usage import ModelTotals
from server.errors import BadInputError
from server.models import Execution, Invocation, MemoryRecord, Turn

MAX_DAYS = 366


def _totals(group: Any) -> Any:
    """The columns of a grouped statement over invocations: its key, then the totals."""
    return (
        group,
        col(Invocation.model),
        func.count(),
        func.coalesce(func.sum(col(Invocation.input_tokens)), 0),
        func.coalesce(func.sum(col(Invocation.output_tokens)), 0),
        func.coalesce(func.sum(col(Invocation.latency_ms)), 0),
        func.count(col(Invocation.latency_ms)),
    )


def _by_key(rows: Sequence[Any], keys: Sequence[Any]) -> list[list[ModelTotals]]:
    found: dict[Any, list[ModelTotals]] = defaultdict(list)
    for key, model, calls, read, wrote, latency, timed in rows:
        found[key].append(ModelTotals(model, calls, int(read), int(wrote), int(latency), timed))
    return [found.get(k, []) for k in keys]


def _of_executions() -> Any:
    return and_(
        col(Execution.id) == col(Invocation.execution_id),
        col(Execution.agent_id) == col(Invocation.agent_id),
    )


async def of_turns(db: AsyncSession, turn_ids: Sequence[uuid.UUID]) -> list[list[ModelTotals]]:
    """Each turn's counted model calls, by model (one statement for them all)."""
    rows = (
        await db.execute(
            select(*_totals(col(Execution.turn_id)))
            .join(Execution, _of_executions())
            .where(col(Execution.turn_id).in_(turn_ids), col(Invocation.counted))
            .group_by(col(Execution.turn_id), col(Invocation.model))
        )
    ).all()
    return _by_key(rows, turn_ids)


async def of_sessions(
    db: AsyncSession, session_ids: Sequence[uuid.UUID]
) -> list[list[ModelTotals]]:
    """Each session's counted model calls, every attempt of every turn, by model."""
    rows = (
        await db.execute(
            select(*_totals(col(Turn.session_id)))
            .join(Execution, _of_executions())
            .join(
                Turn,
                and_(
                    col(Turn.id) == col(Execution.turn_id),
                    col(Turn.agent_id) == col(Execution.agent_id),
                ),
            )
            .where(col(Turn.session_id).in_(session_ids), col(Invocation.counted))
            .group_by(col(Turn.session_id), col(Invocation.model))
        )
    ).all()
    return _by_key(rows, session_ids)


async def of_agent(db: AsyncSession, agent_id: uuid.UUID) -> list[ModelTotals]:
    """The agent's counted model calls, by model."""
    rows = (
        await db.execute(
            select(*_totals(col(Invocation.agent_id)))
            .where(col(Invocation.agent_id) == agent_id, col(Invocation.counted))
            .group_by(col(Invocation.agent_id), col(Invocation.model))
        )
    ).all()
    return _by_key(rows, [agent_id])[0]


@dataclass(frozen=True, slots=True)
class Day:
    """One UTC day of an agent's work."""

    day: date
    turns: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    records: int = 0


def _days(days: int, now: datetime | None) -> tuple[list[date], datetime]:
    if not 1 <= days <= MAX_DAYS:
        raise BadInputError(f"days must be from 1 to {MAX_DAYS}", field="days")
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    return [first + timedelta(days=i) for i in range(days)], datetime(
        first.year, first.month, first.day, tzinfo=UTC
    )


def _utc_day(column: Any) -> Any:
    return cast(func.timezone(literal_column("'UTC'"), column), Date)


async def daily_work(
    db: AsyncSession, *, agent_id: uuid.UUID, days: int, now: datetime | None = None
) -> list[Day]:
    """The agent's last ``days`` UTC days, oldest first: turns begun, counted model calls
    and their tokens (every day, zero when nothing happened)."""
    dates, since = _days(days, now)
    day = _utc_day(col(Turn.created_at))
    turns: dict[date, int] = {
        d: n
        for d, n in await db.execute(
            select(day, func.count())
            .where(col(Turn.agent_id) == agent_id, col(Turn.created_at) >= since)
            .group_by(day)
        )
    }
    day = _utc_day(col(Invocation.created_at))
    calls = {
        d: (n, int(read), int(wrote))
        for d, n, read, wrote in (
            await db.execute(
                select(
                    day,
                    func.count(),
                    func.sum(col(Invocation.input_tokens)),
                    func.sum(col(Invocation.output_tokens)),
                )
                .where(
                    col(Invocation.agent_id) == agent_id,
                    col(Invocation.counted),
                    col(Invocation.created_at) >= since,
                )
                .group_by(day)
            )
        ).all()
    }
    return [Day(d, turns.get(d, 0), *calls.get(d, (0, 0, 0))) for d in dates]


async def daily_records(
    db: AsyncSession, *, agent_id: uuid.UUID, days: int, now: datetime | None = None
) -> list[Day]:
    """The memory records the agent's committed turns created on each of its last
    ``days`` UTC days, oldest first (what an open turn staged is not counted, R12)."""
    dates, since = _days(days, now)
    day = _utc_day(col(MemoryRecord.created_at))
    added: dict[date, int] = {
        d: n
        for d, n in await db.execute(
            select(day, func.count())
            .where(
                col(MemoryRecord.agent_id) == agent_id,
                col(MemoryRecord.committed),
                col(MemoryRecord.created_at) >= since,
            )
            .group_by(day)
        )
    }
    return [Day(d, records=added.get(d, 0)) for d in dates]
