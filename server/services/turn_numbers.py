"""Numbering a new turn: the next of its session or agent, or, for a retry or a
replay, the number of the turn it repeats (R12)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.errors import BadInputError, ConflictError, NotFoundError
from server.models import Agent, Session, Turn, table
from server.services.transcript import AS_WRITTEN
from server.storage.built import built_once


async def turn_number(
    db: AsyncSession,
    *,
    agent: Agent,
    session: Session | None,
    replay_of: uuid.UUID | None,
    retry_of: uuid.UUID | None,
    preview: bool,
) -> tuple[int | None, int, uuid.UUID | None]:
    """Turn number, attempt and the replayed turn: a retry keeps the number (and, for a
    retried replay, what it replays); a replay takes the original's number. A new turn's
    number (``None`` here) is the next after its place's last, counted by the INSERT
    itself (the place, session or agent, is locked: turns are numbered one at a time)."""
    if replay_of is None and retry_of is None:
        return None, 1, None
    same_place = col(Turn.session_id) == session.id if session else col(Turn.agent_id) == agent.id
    for ref, what in ((replay_of, "replayOf"), (retry_of, "retryOf")):
        if ref is None:
            continue
        original = await db.scalar(
            select(Turn).where(col(Turn.agent_id) == agent.id, col(Turn.id) == ref, same_place)
        )
        if original is None:
            raise NotFoundError(f"no turn {ref} in this session", field=what)
        if what == "retryOf":
            if original.status != "failed":
                raise ConflictError("only a failed turn can be retried", field=what)
            retried = await db.scalar(
                select(col(Turn.id)).where(
                    col(Turn.agent_id) == agent.id, col(Turn.retry_of_id) == original.id
                )
            )
            if retried is not None:
                raise ConflictError("this attempt was already retried", field=what)
            if original.preview != preview:
                raise BadInputError("a retry keeps the original's preview flag", field=what)
            return original.number, original.attempt + 1, original.replay_of_id
        if original.status != "committed":
            raise ConflictError("only a committed turn can be replayed", field=what)
        return original.number, 1, original.id
    raise AssertionError("unreachable: a replay or a retry was named")


# a new turn's values, all given but its number
_GIVEN = (
    "id",
    "agent_id",
    "session_id",
    "agent_version_id",
    "attempt",
    "status",
    "preview",
    "replay_of_id",
    "retry_of_id",
)


@built_once
def next_turn_statement(*, in_session: bool) -> Any:
    """A new turn, numbered the next after the last of its place (its session, or its
    agent: the column equal to the ``place`` parameter), returned. An INSERT of a SELECT
    over the agent's turns: Citus takes no subquery in an INSERT's VALUES."""
    place = col(Turn.session_id) if in_session else col(Turn.agent_id)
    columns = table(Turn).c
    last = func.coalesce(func.max(col(Turn.number)), 0)
    numbered = select(
        *(bindparam(name, type_=columns[name].type) for name in _GIVEN), last + 1
    ).where(
        col(Turn.agent_id) == bindparam("agent_id"),
        place == bindparam("place"),
        col(Turn.replay_of_id).is_(None),
    )
    return (
        insert(Turn)
        .from_select([*_GIVEN, "number"], numbered)
        .returning(Turn)
        .execution_options(**AS_WRITTEN)
    )


@built_once
def numbered_turn_statement() -> Any:
    return insert(Turn).returning(Turn).execution_options(**AS_WRITTEN)
