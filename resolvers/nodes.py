"""Relay's object identification: ``node(id)`` and ``nodes(ids)`` read any object with a
global id (the ``Node`` interface, :mod:`resolvers.types.base`).

A global id is the object's UUID as text, the very value every input that takes a UUID
accepts: UUIDs are unique across tables, so one indexed statement finds which table holds
an id, and its owner (:mod:`resolvers.owners`). ``node``, ``nodes`` and the typed
lookups (``turn``, ``agentMemory``, ...) read through one function, :func:`read_node`: an
unknown id, and one the caller may not read, answer null with the same NOT_FOUND, one
per id in ``nodes``, never another tenant's data, and no type can be read one way and
refused the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, cast

import strawberry

from resolvers import ownership
from resolvers.context import Context, Info
from resolvers.kinds import Kind
from resolvers.review import MemoryReviewType
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import Node
from resolvers.types.history import HistoryEventType, HistoryPartType
from resolvers.types.memory import MemoryRecordType, MemoryVersionType
from resolvers.types.turns import ExecutionType, InvocationType, TranscriptEventType, TurnType
from resolvers.types.uses import OutputUseType
from server.errors import BadInputError, NotFoundError

Wrap = Callable[[Context, uuid.UUID], Awaitable[Any]]


def _by(loader: str, wrap: Callable[[Any], Any]) -> Wrap:
    async def load(context: Context, id_: uuid.UUID) -> Any:
        row = await getattr(context.loaders, loader).load(id_)
        return None if row is None else wrap(row)

    return load


async def _history_event(context: Context, id_: uuid.UUID) -> Any:
    return HistoryEventType.loaded(await context.loaders.history_event.load(id_))


# how an object of each kind is read and shown, once :func:`resolvers.ownership.read`
# allowed it
_READERS: dict[Kind, Wrap] = {
    Kind.AGENT: _by("agent", lambda r: AgentType(row=r)),
    Kind.AGENT_VERSION: _by("agent_version", lambda r: AgentVersionType(row=r)),
    Kind.SESSION: _by("session", lambda r: SessionType(row=r)),
    Kind.TURN: _by("turn", lambda r: TurnType(row=r)),
    Kind.EXECUTION: _by("execution", lambda r: ExecutionType(row=r)),
    Kind.INVOCATION: _by("invocation", lambda r: InvocationType(row=r)),
    Kind.TRANSCRIPT_EVENT: _by("transcript_event", lambda r: TranscriptEventType(row=r)),
    Kind.MEMORY_RECORD: _by("record", lambda r: MemoryRecordType(row=r)),
    Kind.MEMORY_VERSION: _by("version", lambda r: MemoryVersionType(row=r)),
    Kind.HISTORY_EVENT: _history_event,
    Kind.HISTORY_PART: _by("history_part", lambda r: HistoryPartType(row=r)),
    Kind.MEMORY_REVIEW: _by("review", lambda r: MemoryReviewType(row=r)),
    Kind.OUTPUT_USE: _by("use", lambda r: OutputUseType(row=r)),
}


async def read_node(context: Context, kind: Kind | None, id_: uuid.UUID) -> Any:
    """The object of ``kind`` (any, for ``None``) with this id, as the caller may read
    it: the one path of ``node``, ``nodes`` and every typed lookup (``turn``,
    ``agentMemory``, ...), so that none of them can answer differently. NOT_FOUND for
    none, for what an open turn staged and without the grants of its kind, alike."""
    owner = await ownership.read(context, kind, id_)
    found = await _READERS[owner.kind](context, id_)
    if found is None:
        raise NotFoundError(f"no {'object' if kind is None else kind.label} with id {id_}")
    return found


@strawberry.type
class NodeQuery:
    @strawberry.field(
        description="Any object with a global id, by that id. Null for an unknown id and "
        "for one the caller may not read, with the same NOT_FOUND, as the typed lookups "
        "answer; a malformed id is BAD_INPUT."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The object's id.")],
    ) -> Node | None:
        return cast(Node, await read_node(info.context, None, id))

    @strawberry.field(
        description="Objects by their global ids, in the order asked. Each id the caller "
        "may not read, or that names nothing, is null with its own NOT_FOUND; the others "
        "are read as node reads them. A malformed id is BAD_INPUT for the whole list."
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
        # one awaitable per id: each is read, and fails, on its own (its error has the
        # item's path); their owners are found in one statement first
        await ownership.prefetch(context, ids)
        items = [read_node(context, None, i) for i in ids]
        return cast("list[Node | None]", items)


__all__ = ["NodeQuery"]
