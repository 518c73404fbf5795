"""What a turn-end review reads (R50): the conversation of its place (a session, or
an agent without sessions) since the place's watermark, one review of a place at a
time."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import review as rules
from server.domain.history import HistoryIndex
from server.errors import ConflictError
from server.models import MemoryReview, Turn
from server.services.history_kept import conversation
from server.services.turn_scope import TurnScope


async def lock_place(db: AsyncSession, scope: TurnScope) -> None:
    """Reviews of the turn's place take turns, until this transaction ends."""
    place = scope.turn.session_id or scope.turn.agent_id
    await db.execute(select(func.pg_advisory_xact_lock(_lock_key(place))))


async def refuse_concurrent(db: AsyncSession, scope: TurnScope) -> None:
    """One review of a place at a time: another open turn's review wins."""
    turn = scope.turn
    other = await db.scalar(
        select(col(MemoryReview.turn_id))
        .join(Turn, _review_turn())
        .where(*_same_place(scope), col(Turn.status) == "open", col(Turn.id) != turn.id)
        .limit(1)
    )
    if other is not None:
        raise ConflictError(
            f"turn {other} of this {'session' if turn.session_id else 'agent'} is reviewing "
            "its memory; review after it ends"
        )


def _same_place(scope: TurnScope) -> list[Any]:
    turn = scope.turn
    place = col(MemoryReview.session_id)
    return [
        col(MemoryReview.agent_id) == turn.agent_id,
        place == turn.session_id if turn.session_id is not None else place.is_(None),
    ]


def _review_turn() -> ColumnElement[bool]:
    """A review's turn (of its agent: on Citus, in the same shard)."""
    return and_(
        col(Turn.id) == col(MemoryReview.turn_id), col(Turn.agent_id) == col(MemoryReview.agent_id)
    )


async def watermark(db: AsyncSession, scope: TurnScope) -> int:
    """The last turn number an applied review of a committed turn before this one
    covered; 0 when none did. Preview reviews count for preview turns only; a replay's
    never counts."""
    turn = scope.turn
    conds = [
        *_same_place(scope),
        col(MemoryReview.status) == "applied",
        col(MemoryReview.replay).is_(False),
        col(MemoryReview.through_number) < turn.number,
        col(Turn.status) == "committed",
    ]
    if not turn.preview:
        conds.append(col(MemoryReview.preview).is_(False))
    found = await db.scalar(
        select(func.max(col(MemoryReview.through_number))).join(Turn, _review_turn()).where(*conds)
    )
    return int(found or 0)


async def conversation_since(
    db: AsyncSession, scope: TurnScope, *, after: int
) -> list[rules.Entry]:
    """The committed turns after ``after`` and before this one, then this turn: what the
    review reads. A live turn never reads a preview turn's conversation (R64)."""
    turn = scope.turn
    place = (
        col(Turn.session_id) == turn.session_id
        if turn.session_id is not None
        else col(Turn.agent_id) == turn.agent_id
    )
    conds = [
        col(Turn.agent_id) == turn.agent_id,
        place,
        col(Turn.status) == "committed",
        col(Turn.replay_of_id).is_(None),
        col(Turn.number) > after,
        col(Turn.number) < turn.number,
    ]
    if not turn.preview:
        conds.append(col(Turn.preview).is_(False))
    earlier = (
        await db.execute(
            select(col(Turn.id), col(Turn.number)).where(*conds).order_by(col(Turn.number))
        )
    ).all()
    history = scope.config.history
    index: HistoryIndex = history.index if history is not None else "messages"
    entries: list[rules.Entry] = []
    for turn_id, number in [*earlier, (turn.id, turn.number)]:
        entries.extend(
            rules.Entry(number, role, tool, text)
            for role, tool, text in await conversation(db, turn_id, index)
        )
    return entries


def _lock_key(place: uuid.UUID) -> int:
    """The place's advisory lock key for reviews (a signed 64-bit number)."""
    return int.from_bytes(place.bytes[8:], "big", signed=True)
