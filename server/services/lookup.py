"""Loading rows by id, with NOT_FOUND instead of ``None``; a per-agent row by its id and
its agent (:mod:`server.storage.owners`)."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from server.errors import NotFoundError
from server.models import Agent, AgentVersion, Execution, Session, Turn
from server.storage.owners import by_agent

T = TypeVar("T")

_NAMES: dict[type[Any], str] = {
    Agent: "agent",
    AgentVersion: "agent version",
    Session: "session",
    Turn: "turn",
    Execution: "execution",
}


async def get(
    db: AsyncSession, model: type[T], id_: uuid.UUID, *, lock: bool = False, fresh: bool = False
) -> T:
    """The row, locked with ``lock``, read again from the database with ``fresh`` even when
    the session holds it already."""
    row = await db.get(
        model,
        id_,
        with_for_update=lock,
        populate_existing=fresh,
        options=await by_agent(db, model, id_),
    )
    if row is None:
        raise NotFoundError(f"no {_NAMES.get(model, model.__name__.lower())} with id {id_}")
    return row
