"""Memory records and their versions, with who wrote each (R25)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types.agents import AgentVersionType, SessionType
from resolvers.types.base import (
    AFTER,
    FIRST,
    Connection,
    MemoryStatus,
    Node,
    Scope,
    column,
    node_id,
    related,
)
from resolvers.types.turns import ExecutionType, InvocationType, TurnType
from server import models
from server.services import reads


@strawberry.type(name="DeletingPrincipal", description="The principal that deleted a record.")
class DeletingPrincipalType:
    id: uuid.UUID
    name: str
    kind: str = strawberry.field(description="admin, client or runtime.")


@strawberry.type(
    name="ApiDeletion",
    description="A deletion through the API (deleteAgentMemory, R71): who, and when.",
)
class ApiDeletionType:
    principal: DeletingPrincipalType | None = strawberry.field(
        description="None when no principal made the call (dev mode) or it was removed since."
    )
    caller: str = strawberry.field(description="The caller as the server named it.")
    created_at: datetime


@strawberry.type(
    name="Provenance",
    description="Who wrote a memory version (R25): a tool call of a turn (execution, turn, "
    "agent version), or, for a deletion through the API, that deletion (apiDeletion).",
)
class ProvenanceType:
    row: strawberry.Private[models.MemoryVersion]

    execution: ExecutionType | None = related(
        "execution", "execution_id", lambda r: ExecutionType(row=r)
    )

    invocation: InvocationType | None = related(
        "invocation", "invocation_id", lambda r: InvocationType(row=r)
    )

    agent_version: AgentVersionType | None = related(
        "agent_version", "agent_version_id", lambda r: AgentVersionType(row=r)
    )

    session: SessionType | None = related("session", "session_id", lambda r: SessionType(row=r))
    turn: TurnType | None = related("turn", "turn_id", lambda r: TurnType(row=r))

    @strawberry.field(description="The deletion through the API that wrote this version.")
    async def api_deletion(self, info: Info) -> ApiDeletionType | None:
        if self.row.deletion_id is None:
            return None
        loaders = info.context.loaders
        deletion = await loaders.deletion.load(self.row.deletion_id)
        if deletion is None:
            return None
        who = (
            None
            if deletion.principal_id is None
            else await loaders.principal.load(deletion.principal_id)
        )
        return ApiDeletionType(
            principal=None
            if who is None
            else DeletingPrincipalType(id=who.id, name=who.name, kind=who.kind),
            caller=deletion.caller,
            created_at=deletion.created_at,
        )


@strawberry.type(name="MemoryVersion")
class MemoryVersionType(Node):
    row: strawberry.Private[models.MemoryVersion]

    id: strawberry.ID = node_id()
    record_id: uuid.UUID = column()
    number: int = column()
    status: MemoryStatus = column(convert=MemoryStatus)
    summary: str = column()
    content: str | None = column()
    kind: str = column()
    labels: JSON = column()
    created_at: datetime = column()

    @strawberry.field
    def written_by(self) -> ProvenanceType:
        return ProvenanceType(row=self.row)

    record: MemoryRecordType = related("record", "record_id", lambda r: MemoryRecordType(row=r))


@strawberry.type(name="MemoryRecord")
class MemoryRecordType(Node):
    """A record as an API reader sees it: a change an open turn staged is not yet shown."""

    row: strawberry.Private[models.MemoryRecord]

    @property
    def _staged(self) -> bool:
        return self.row.pending_turn_id is not None

    id: strawberry.ID = node_id()
    scope: Scope = column(convert=Scope)

    @strawberry.field
    def status(self) -> MemoryStatus:
        status = self.row.prior_status if self._staged else self.row.status
        return MemoryStatus(status or self.row.status)

    preview: bool = column()
    pinned: bool = column()
    created_at: datetime = column()

    session: SessionType | None = related(
        "session",
        "session_id",
        lambda r: SessionType(row=r),
        description="The session that wrote the record.",
    )

    @strawberry.field(description="The version in force.")
    async def current(self, info: Info) -> MemoryVersionType:
        version_id = self.row.prior_version_id if self._staged else self.row.current_version_id
        assert version_id is not None
        row = await info.context.loaders.version.load(version_id)
        assert row is not None
        return MemoryVersionType(row=row)

    @strawberry.field(description="Every version, oldest first: creation, then each change.")
    async def versions(self, info: Info) -> list[MemoryVersionType]:
        rows = await info.context.loaders.versions_of_record.load(self.row.id)
        if self._staged:
            rows = [r for r in rows if r.turn_id != self.row.pending_turn_id]
        return [MemoryVersionType(row=r) for r in rows]

    @strawberry.field(
        description="Every version, oldest first, a page at a time; each as in versions."
    )
    async def versions_connection(
        self,
        info: Info,
        first: Annotated[int, strawberry.argument(description=FIRST)],
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
    ) -> Connection[MemoryVersionType]:
        return await Connection.read(
            info,
            reads.list_versions,
            lambda r: MemoryVersionType(row=r),
            record_id=self.row.id,
            staged_by=self.row.pending_turn_id,
            first=first,
            after=after,
        )

    @strawberry.field(description="Who created the record (its first version's provenance).")
    async def written_by(self, info: Info) -> ProvenanceType:
        rows = await info.context.loaders.versions_of_record.load(self.row.id)
        return ProvenanceType(row=rows[0])

    replaces: MemoryRecordType | None = related(
        "record",
        "replaces_id",
        lambda r: MemoryRecordType(row=r),
        description="The record this one corrects.",
    )

    @strawberry.field(description="The record that superseded this one.")
    async def replaced_by(self, info: Info) -> MemoryRecordType | None:
        if self._staged or self.row.replaced_by_id is None:
            return None
        row = await info.context.loaders.record.load(self.row.replaced_by_id)
        return MemoryRecordType(row=row) if row else None
