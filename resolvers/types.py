"""Strawberry object types. Each wraps one row; relations resolve through the
request's dataloaders, so lists cost a bounded number of statements."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.permissions import CanReadMemory, CanReadSessions
from server import models
from server.domain.config import memory_config_to_json
from server.services import reads
from server.services.agents import config_of

if TYPE_CHECKING:
    from resolvers.types_history import HistoryEventConnection

N = TypeVar("N")


def column(
    attribute: str | None = None,
    *,
    description: str | None = None,
    convert: Callable[[Any], Any] | None = None,
) -> Any:
    """A field that shows a column of the wrapped row (``attribute``, or the field's own
    Python name), as it is or through ``convert``; its GraphQL type is the field's
    annotation."""

    def resolve(root: Any, info: strawberry.Info) -> Any:
        value = getattr(root.row, attribute or info.python_name)
        return value if convert is None else convert(value)

    return strawberry.field(resolver=resolve, description=description)


def related(
    loader: str,
    attribute: str,
    wrap: Callable[[Any], Any],
    *,
    description: str | None = None,
) -> Any:
    """A field that follows the row's ``attribute`` (a key) through the request's
    dataloader ``loader`` and wraps the row found with ``wrap``; ``None`` where the key
    is (the field's annotation says whether it may be)."""

    async def resolve(root: Any, info: Info) -> Any:
        key = getattr(root.row, attribute)
        if key is None:
            return None
        row = await getattr(info.context.loaders, loader).load(key)
        return None if row is None else wrap(row)

    return strawberry.field(resolver=resolve, description=description)


@strawberry.enum
class Scope(Enum):
    SESSION = "SESSION"
    AGENT = "AGENT"


@strawberry.enum
class MemoryStatus(Enum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"
    DELETED = "DELETED"


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class Edge(Generic[N]):
    cursor: str
    node: N


@strawberry.type
class Connection(Generic[N]):
    """A Relay-style page; no total count is given, so a page reveals nothing it hides."""

    edges: list[Edge[N]]
    page_info: PageInfo

    @classmethod
    def of(cls, page: reads.Page[Any], wrap: Callable[[Any], N]) -> Connection[N]:
        edges = [Edge(cursor=c, node=wrap(item)) for c, item in page.items]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
            ),
        )


@strawberry.type(name="Agent")
class AgentType:
    row: strawberry.Private[models.Agent]

    id: uuid.UUID = column()
    namespace: str = column()
    name: str = column()
    sessionless: bool = column(description="True for an agent that runs without sessions.")
    created_at: datetime = column()

    @strawberry.field
    async def versions(self, info: Info) -> list[AgentVersionType]:
        rows = await info.context.loaders.versions_of_agent.load(self.row.id)
        return [AgentVersionType(row=v) for v in reversed(rows)]

    @strawberry.field
    async def latest_version(self, info: Info) -> AgentVersionType | None:
        rows = await info.context.loaders.versions_of_agent.load(self.row.id)
        return AgentVersionType(row=rows[-1]) if rows else None

    @strawberry.field(description="Sessions, newest first.", permission_classes=[CanReadSessions])
    async def sessions(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[SessionType]:
        page = await reads.list_sessions(
            info.context.db,
            agent_id=self.row.id,
            first=first,
            after=after,
            maximum=info.context.settings.max_page_size,
        )
        return Connection.of(page, lambda s: SessionType(row=s))

    @strawberry.field(
        description="Memory records, newest first (R71 readers).",
        permission_classes=[CanReadMemory],
    )
    async def memory_records(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        filter: MemoryRecordFilter | None = None,
    ) -> Connection[MemoryRecordType]:
        f = filter or MemoryRecordFilter()
        page = await reads.list_records(
            info.context.db,
            agent_id=self.row.id,
            first=first,
            after=after,
            maximum=info.context.settings.max_page_size,
            filter=reads.RecordFilter(
                status=f.status.value if f.status else None,
                kind=f.kind,
                scope=f.scope.value if f.scope else None,
                session_id=f.session_id,
                preview=f.preview,
                labels=tuple((lf.name, lf.value) for lf in f.labels or []),
            ),
        )
        return Connection.of(page, lambda r: MemoryRecordType(row=r))


@strawberry.input
class LabelFilter:
    name: str
    value: str


@strawberry.input
class MemoryRecordFilter:
    status: MemoryStatus | None = None
    kind: str | None = None
    scope: Scope | None = None
    session_id: uuid.UUID | None = None
    preview: bool | None = None
    labels: list[LabelFilter] | None = None


@strawberry.type(name="AgentVersion")
class AgentVersionType:
    row: strawberry.Private[models.AgentVersion]

    id: uuid.UUID = column()
    number: int = column()
    label: str | None = column()

    @strawberry.field(description="The configuration as published.")
    def config(self) -> JSON:
        return self.row.config  # type: ignore[return-value]

    @strawberry.field(description="harness.memory with every default filled in.")
    async def effective_memory_config(self, info: Info) -> JSON:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return memory_config_to_json(config_of(self.row, agent).memory)  # type: ignore[return-value]

    created_at: datetime = column()

    @strawberry.field
    async def agent(self, info: Info) -> AgentType:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return AgentType(row=agent)


@strawberry.type(name="Session")
class SessionType:
    row: strawberry.Private[models.Session]

    id: uuid.UUID = column()
    external_id: str | None = column()
    created_at: datetime = column()

    @strawberry.field
    async def agent(self, info: Info) -> AgentType:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return AgentType(row=agent)

    @strawberry.field(description="Turns, newest first.")
    async def turns(self, info: Info, first: int, after: str | None = None) -> Connection[TurnType]:
        page = await reads.list_turns(
            info.context.db,
            session_id=self.row.id,
            first=first,
            after=after,
            maximum=info.context.settings.max_page_size,
        )
        return Connection.of(page, lambda t: TurnType(row=t))

    @strawberry.field(
        description="Events its committed turns kept (R60), newest first; turnNumber "
        "narrows to one turn."
    )
    async def history(
        self, info: Info, first: int, after: str | None = None, turn_number: int | None = None
    ) -> Annotated[HistoryEventConnection, strawberry.lazy("resolvers.types_history")]:
        from resolvers.types_history import session_history

        return await session_history(
            info, session_id=self.row.id, first=first, after=after, turn_number=turn_number
        )


from resolvers.types_turns import (  # noqa: E402
    ExecutionType,
    MemoryRecordType,
    MemoryVersionType,
    TurnType,
)

__all__ = [
    "AgentType",
    "AgentVersionType",
    "Annotated",
    "Connection",
    "ExecutionType",
    "MemoryRecordType",
    "MemoryVersionType",
    "SessionType",
    "TurnType",
]
