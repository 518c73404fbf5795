"""The agent a row belongs to, found by the row's id (R10).

A runtime call names its session, turn or record by id alone. A statement that also
names the row's agent (``agent_id = :agent``) finds the same row, and on Citus
(docs/scaling.md, "Distributing by agent") it runs on that agent's shard alone, where
one by id alone would ask every shard, and could not lock the row at all. So a call
that locks or changes an agent's rows first learns the agent of the id it was given:
:func:`agent_of` reads it (by the id's own index) and keeps it, since a row never
changes agent; :func:`remember` keeps the agent of a row just written. The kept
answers live as long as the database's sessions (:class:`Owners`, on
``Session.info``); a row deleted since is simply not found by the statement that
names it with its agent.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import with_loader_criteria

from server.citus.layout import GLOBAL_TABLES
from server.storage.built import built_once

# About 200 bytes an entry: 100,000 rows' agents in 20 MB.
MAX_KEPT = 100_000

K = TypeVar("K")
V = TypeVar("V")
_KEY = "owners"
_CITUS = "citus"
TURNS = "turns"  # session info: what never changes of a turn, by its id
OWNERS_OF = "owners_of"  # session info: the owners of ids whose owner never changes


class Kept(Generic[K, V]):
    """What a server process keeps of rows that do not change, the newest ``limit``
    entries (least recently used dropped)."""

    def __init__(self, limit: int = MAX_KEPT) -> None:
        self.limit = limit
        self._kept: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._kept.get(key)
        if value is not None:
            self._kept.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._kept[key] = value
        self._kept.move_to_end(key)
        if len(self._kept) > self.limit:
            self._kept.popitem(last=False)


Owners = Kept[uuid.UUID, uuid.UUID]
"""Row id → agent id."""


def session_info(*, citus: bool = False) -> dict[str, Any]:
    """What a database's sessions share (``async_sessionmaker(info=...)``): one
    :class:`Owners`, the facts of the turns its calls ran in
    (:func:`server.services.turn_scope.known_turn`), the owners of ids whose owner never
    changes (:data:`resolvers.owners.SETTLED`), and whether the database is a Citus
    coordinator."""
    return {
        _KEY: Owners(),
        TURNS: Kept[uuid.UUID, Any](),
        OWNERS_OF: Kept[Any, Any](),
        _CITUS: citus,
    }


def on_citus(db: AsyncSession) -> bool:
    """True when ``db`` talks to a Citus coordinator (docs/scaling.md)."""
    return bool(db.info.get(_CITUS))


def _owners(db: AsyncSession) -> Owners:
    owners = db.info.get(_KEY)
    if owners is None:
        owners = db.info[_KEY] = Owners()
    assert isinstance(owners, Kept)
    return owners


@built_once
def _agent_of(model: Any) -> Any:
    return select(model.agent_id).where(model.id == bindparam("id"))


async def agent_of(db: AsyncSession, model: Any, row_id: uuid.UUID) -> uuid.UUID | None:
    """The agent of ``model``'s row ``row_id``, or None when there is no such row."""
    owners = _owners(db)
    agent = owners.get(row_id)
    if agent is None:
        agent = await db.scalar(_agent_of(model), {"id": row_id})
        if agent is not None:
            owners.put(row_id, agent)
    return agent


async def by_agent(db: AsyncSession, model: Any, row_id: uuid.UUID) -> list[Any]:
    """``Session.get``'s options that name the agent of a per-agent ``model``'s row
    ``row_id`` in the SELECT it may send (none for a global table)."""
    if "agent_id" not in model.__table__.c or model.__tablename__ in GLOBAL_TABLES:
        return []
    return of_agent(model, await agent_of(db, model, row_id))


def of_agent(model: Any, agent_id: uuid.UUID | None) -> list[Any]:
    """``Session.get``'s options that name the agent (known) of the row it reads."""
    return [with_loader_criteria(model, model.agent_id == agent_id)]


def kept(db: AsyncSession, row_id: uuid.UUID) -> uuid.UUID | None:
    """The agent of row ``row_id`` if it is kept (no statement)."""
    return _owners(db).get(row_id)


def kept_agents(db: AsyncSession, model: Any, keys: Iterable[uuid.UUID]) -> list[Any]:
    """The condition that names the agents of the rows ``keys`` name (their own ids, or
    their parents'), when every one of them is kept: a batch of one agent's rows then
    runs on that agent's shard. Nothing when one is not, or for a global table."""
    if "agent_id" not in model.__table__.c or model.__tablename__ in GLOBAL_TABLES:
        return []
    agents = {kept(db, key) for key in keys}
    if None in agents:
        return []
    return [model.agent_id.in_(sorted(a for a in agents if a is not None))]


def remember(db: AsyncSession, row_id: uuid.UUID, agent_id: uuid.UUID) -> None:
    """Keep the agent of a row this call wrote, for the calls that name it next."""
    _owners(db).put(row_id, agent_id)
