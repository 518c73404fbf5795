"""Relay's object identification: ``node(id)`` and ``nodes(ids)`` read any object with a
global id (the ``Node`` interface, :mod:`resolvers.types.base`).

A global id is the object's UUID as text, the very value every input that takes a UUID
accepts: UUIDs are unique across tables, so one indexed statement finds which table holds
an id. The object found goes through the access gate exactly as the typed lookups
(``turn``, ``agentMemory``, ...) do: a FORBIDDEN or unknown id answers null with its error,
one per id in ``nodes``, never another tenant's data.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, cast

import strawberry
from sqlalchemy import CompoundSelect, literal, select, union_all
from sqlmodel import col

from resolvers.context import Context, Info
from resolvers.gate import checked
from resolvers.review import MemoryReviewType
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import Node
from resolvers.types.history import HistoryEventType, HistoryPartType
from resolvers.types.memory import MemoryRecordType, MemoryVersionType
from resolvers.types.turns import ExecutionType, InvocationType, TranscriptEventType, TurnType
from resolvers.types.uses import OutputUseType
from server import models
from server.errors import BadInputError, NotFoundError

Wrap = Callable[[Context, Any], Awaitable[Any]]


def _by(loader: str, wrap: Callable[[Any], Any]) -> Wrap:
    async def load(context: Context, id_: uuid.UUID) -> Any:
        row = await getattr(context.loaders, loader).load(id_)
        return None if row is None else wrap(row)

    return load


async def _record(context: Context, id_: uuid.UUID) -> Any:
    row = await context.loaders.record.load(id_)
    return MemoryRecordType(row=row) if row is not None and row.committed else None


async def _version(context: Context, id_: uuid.UUID) -> Any:
    """A version of a committed record, as the record's ``versions`` shows it: not one
    an open turn staged."""
    row = await context.loaders.version.load(id_)
    if row is None:
        return None
    record = await context.loaders.record.load(row.record_id)
    if record is None or not record.committed:
        return None
    staged = record.pending_turn_id is not None and row.turn_id == record.pending_turn_id
    return None if staged else MemoryVersionType(row=row)


async def _history_event(context: Context, id_: uuid.UUID) -> Any:
    return HistoryEventType.loaded(await context.loaders.history_event.load(id_))


# the tables that hold objects with a global id, and how each is read and shown
_TABLES: dict[str, tuple[Any, Wrap]] = {
    "Agent": (models.Agent, _by("agent", lambda r: AgentType(row=r))),
    "AgentVersion": (models.AgentVersion, _by("agent_version", lambda r: AgentVersionType(row=r))),
    "Session": (models.Session, _by("session", lambda r: SessionType(row=r))),
    "Turn": (models.Turn, _by("turn", lambda r: TurnType(row=r))),
    "Execution": (models.Execution, _by("execution", lambda r: ExecutionType(row=r))),
    "Invocation": (models.Invocation, _by("invocation", lambda r: InvocationType(row=r))),
    "TranscriptEvent": (
        models.TranscriptEvent,
        _by("transcript_event", lambda r: TranscriptEventType(row=r)),
    ),
    "MemoryRecord": (models.MemoryRecord, _record),
    "MemoryVersion": (models.MemoryVersion, _version),
    "HistoryEvent": (models.HistoryEvent, _history_event),
    "HistoryPart": (models.HistoryPart, _by("history_part", lambda r: HistoryPartType(row=r))),
    "MemoryReview": (models.MemoryReview, _by("review", lambda r: MemoryReviewType(row=r))),
    "OutputUse": (models.OutputUse, _by("use", lambda r: OutputUseType(row=r))),
}


def _which(ids: Sequence[uuid.UUID]) -> CompoundSelect[Any]:
    """One statement: for each id, the name of the table that holds it (a primary-key
    probe of each table)."""
    parts: list[Any] = [
        select(literal(name).label("kind"), col(model.id).label("id")).where(col(model.id).in_(ids))
        for name, (model, _) in _TABLES.items()
    ]
    return union_all(*parts)


async def _kinds(context: Context, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not ids:
        return {}
    rows = (await context.db.execute(_which(ids))).all()
    return {row.id: row.kind for row in rows}


async def _object(context: Context, id_: uuid.UUID, kind: str | None) -> Any:
    found = None if kind is None else await _TABLES[kind][1](context, id_)
    if found is None:
        raise NotFoundError(f"no object with id {id_}")
    return found


async def _checked_object(context: Context, id_: uuid.UUID, kind: str | None) -> Any:
    return await checked(context, await _object(context, id_, kind))


@strawberry.type
class NodeQuery:
    @strawberry.field(
        description="Any object with a global id, by that id. Null for an unknown id "
        "(NOT_FOUND) and for one the caller may not read (FORBIDDEN), as the typed lookups "
        "answer; a malformed id is BAD_INPUT."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The object's id.")],
    ) -> Node | None:
        kinds = await _kinds(info.context, [id])
        return cast(Node, await _object(info.context, id, kinds.get(id)))

    @strawberry.field(
        description="Objects by their global ids, in the order asked. Each id the caller "
        "may not read, or that names nothing, is null with its own error (FORBIDDEN, "
        "NOT_FOUND); the others are read as node reads them. A malformed id is BAD_INPUT "
        "for the whole list."
    )
    async def nodes(
        self,
        info: Info,
        ids: Annotated[
            list[uuid.UUID],
            strawberry.argument(description="The objects' ids, at most the page size."),
        ],
    ) -> list[Node | None]:
        context = info.context
        maximum = context.settings.max_page_size
        if len(ids) > maximum:
            raise BadInputError(f"at most {maximum} ids", field="ids")
        kinds = await _kinds(context, ids)
        # one awaitable per id: each is checked, and fails, on its own (its error has
        # the item's path)
        items = [_checked_object(context, i, kinds.get(i)) for i in ids]
        return cast("list[Node | None]", items)


__all__ = ["NodeQuery"]
