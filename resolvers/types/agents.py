"""Agents, their versions and their sessions."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.permissions import CanReadMemory, CanReadSessions
from resolvers.types.base import Connection, MemoryStatus, Node, Scope, column, later, node_id
from server import models
from server.domain.config import memory_config_to_json
from server.services import history_reads, reads
from server.services.agents import config_of

if TYPE_CHECKING:
    from resolvers.types.history import HistoryEventType
    from resolvers.types.memory import MemoryRecordType
    from resolvers.types.turns import TurnType

_TURNS = "resolvers.types.turns"
_MEMORY = "resolvers.types.memory"
_HISTORY = "resolvers.types.history"
_turn = later(_TURNS, "TurnType")
_record = later(_MEMORY, "MemoryRecordType")
_history_event = later(_HISTORY, "HistoryEventType")


@strawberry.type(name="Agent")
class AgentType(Node):
    row: strawberry.Private[models.Agent]

    id: strawberry.ID = node_id()
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
        return await Connection.read(
            info,
            reads.list_sessions,
            lambda s: SessionType(row=s),
            agent_id=self.row.id,
            first=first,
            after=after,
        )

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
    ) -> Connection[Annotated[MemoryRecordType, strawberry.lazy(_MEMORY)]]:
        f = filter or MemoryRecordFilter()
        return await Connection.read(
            info,
            reads.list_records,
            lambda r: _record(row=r),
            agent_id=self.row.id,
            first=first,
            after=after,
            filter=reads.RecordFilter(
                status=f.status.value if f.status else None,
                kind=f.kind,
                scope=f.scope.value if f.scope else None,
                session_id=f.session_id,
                preview=f.preview,
                labels=tuple((lf.name, lf.value) for lf in f.labels or []),
            ),
        )


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
class AgentVersionType(Node):
    row: strawberry.Private[models.AgentVersion]

    id: strawberry.ID = node_id()
    number: int = column()
    label: str | None = column()

    @strawberry.field(description="The configuration as published.")
    def config(self) -> JSON:
        return JSON(self.row.config)

    @strawberry.field(description="harness.memory with every default filled in.")
    async def effective_memory_config(self, info: Info) -> JSON:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return JSON(memory_config_to_json(config_of(self.row, agent).memory))

    created_at: datetime = column()

    @strawberry.field
    async def agent(self, info: Info) -> AgentType:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return AgentType(row=agent)


@strawberry.type(name="Session")
class SessionType(Node):
    row: strawberry.Private[models.Session]

    id: strawberry.ID = node_id()
    external_id: str | None = column()
    created_at: datetime = column()

    @strawberry.field
    async def agent(self, info: Info) -> AgentType:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return AgentType(row=agent)

    @strawberry.field(description="Turns, newest first.")
    async def turns(
        self, info: Info, first: int, after: str | None = None
    ) -> Connection[Annotated[TurnType, strawberry.lazy(_TURNS)]]:
        return await Connection.read(
            info,
            reads.list_turns,
            lambda t: _turn(row=t),
            session_id=self.row.id,
            first=first,
            after=after,
        )

    @strawberry.field(
        description="Events its committed turns kept (R60), newest first; turnNumber "
        "narrows to one turn."
    )
    async def history(
        self, info: Info, first: int, after: str | None = None, turn_number: int | None = None
    ) -> Connection[Annotated[HistoryEventType, strawberry.lazy(_HISTORY)]]:
        db = info.context.db
        page = await history_reads.list_session_history(
            db,
            session_id=self.row.id,
            first=first,
            after=after,
            turn_number=turn_number,
            maximum=info.context.settings.max_page_size,
        )
        details = await history_reads.event_details(db, [e for _, e in page.items])
        return Connection.of(page, lambda e: _history_event(row=e, details=details[e.id]))
