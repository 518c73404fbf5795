"""Types of a turn's work: turns, executions, invocations, transcript events, and the
memory records and versions they wrote, with their provenance (R25)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types import (
    AgentType,
    AgentVersionType,
    MemoryStatus,
    Scope,
    SessionType,
    column,
    related,
)
from server import models
from server.services import reads

if TYPE_CHECKING:
    from resolvers.types_uses import OutputUseType

_MEMORY_TOOL_IO = (
    "A memory tool's input and output are memory: null without the memory read grant "
    '(R71); in a rolled-back or failed turn, {"redacted": "discarded: the turn rolled back"} '
    '(or "... failed") for every reader but the agent itself (R12).'
)


@strawberry.type(name="Turn")
class TurnType:
    row: strawberry.Private[models.Turn]

    id: uuid.UUID = column()
    number: int = column(description="Position in the session; a retry keeps it.")
    attempt: int = column()
    status: str = column(description="open, committed, rolled_back or failed.")
    preview: bool = column()
    error: str | None = column()
    created_at: datetime = column()
    ended_at: datetime | None = column()
    replay_of: TurnType | None = related("turn", "replay_of_id", lambda r: TurnType(row=r))
    retry_of: TurnType | None = related("turn", "retry_of_id", lambda r: TurnType(row=r))
    session: SessionType | None = related("session", "session_id", lambda r: SessionType(row=r))
    agent: AgentType = related("agent", "agent_id", lambda r: AgentType(row=r))

    agent_version: AgentVersionType = related(
        "agent_version", "agent_version_id", lambda r: AgentVersionType(row=r)
    )

    @strawberry.field(description="Every execution of the turn, oldest first.")
    async def executions(self, info: Info) -> list[ExecutionType]:
        rows = await info.context.loaders.executions_of_turn.load(self.row.id)
        return [ExecutionType(row=r) for r in rows]

    @strawberry.field(
        description="The turn's transcript events, in order; kept whatever the turn's end. "
        "See TranscriptEvent.payload for what of memory a reader sees."
    )
    async def transcript(self, info: Info) -> list[TranscriptEventType]:
        rows = await info.context.loaders.events_of_turn.load(self.row.id)
        return [TranscriptEventType(row=r) for r in rows]

    @strawberry.field(
        description="What the turn wrote: live and preview records it created or changed; "
        "a preview deletion is a preview record of status DELETED."
    )
    async def memories(self, info: Info) -> list[MemoryRecordType]:
        rows = await reads.turn_memories(
            info.context.db, agent_id=self.row.agent_id, turn_id=self.row.id
        )
        return [MemoryRecordType(row=r) for r in rows]


@strawberry.type(name="Execution")
class ExecutionType:
    row: strawberry.Private[models.Execution]

    id: uuid.UUID = column()
    kind: str = column(description="turn, tool, helper or program.")
    name: str = column(description="The tool's name for a tool execution.")
    status: str = column(description="running, succeeded or failed.")
    input: JSON | None = column(description=_MEMORY_TOOL_IO)
    output: JSON | None = column(description=_MEMORY_TOOL_IO)
    error: str | None = column()
    created_at: datetime = column()
    ended_at: datetime | None = column()
    parent: ExecutionType | None = related("execution", "parent_id", lambda r: ExecutionType(row=r))

    @strawberry.field
    async def children(self, info: Info) -> list[ExecutionType]:
        rows = await info.context.loaders.children_of_execution.load(self.row.id)
        return [ExecutionType(row=r) for r in rows]

    @strawberry.field
    async def invocations(self, info: Info) -> list[InvocationType]:
        rows = await info.context.loaders.invocations_of_execution.load(self.row.id)
        return [InvocationType(row=r) for r in rows]

    turn: TurnType = related("turn", "turn_id", lambda r: TurnType(row=r))

    @strawberry.field(
        description="What the execution's output put before the model, in its order "
        "(R43, R63): RETRIEVED record versions for search_memory and recall, parts of kept "
        "events for search_history; empty for other executions. Memory uses need the "
        "memory read grant (R71), history uses the session's: without it, null and "
        "FORBIDDEN."
    )
    async def uses(
        self, info: Info
    ) -> list[Annotated[OutputUseType, strawberry.lazy("resolvers.types_uses")]] | None:
        rows = await info.context.loaders.uses_of_execution.load(self.row.id)
        from resolvers.types_uses import OutputUseType

        return [OutputUseType(row=r) for r in rows]


@strawberry.type(name="Invocation")
class InvocationType:
    row: strawberry.Private[models.Invocation]

    id: uuid.UUID = column()
    purpose: str = column(description="turn, memory or embed.")
    model: str = column()
    input_tokens: int = column()
    output_tokens: int = column()
    counted: bool = column(description="False for usage no limit counts (embed).")
    created_at: datetime = column()
    execution: ExecutionType = related("execution", "execution_id", lambda r: ExecutionType(row=r))


@strawberry.type(name="TranscriptEvent")
class TranscriptEventType:
    row: strawberry.Private[models.TranscriptEvent]

    id: uuid.UUID = column()
    sequence: int = column()

    type: str = column(
        description="message.user, message.agent, tool.call, tool.result, "
        "tool.error, skill.load, memory.pinned, usage, ..."
    )

    tool_name: str | None = column()
    tool_call_id: str | None = column()
    payload: JSON = column(
        description="A memory tool's event (and memory.pinned, retrieval) is memory: "
        'without the memory read grant it is {"redacted": ...}, and so are the arguments of '
        "the memory calls an agent reply names. In a rolled-back or failed turn it is "
        '{"redacted": "discarded: the turn rolled back"} (or "... failed") for every reader '
        "but the agent itself (R12, R70, R71)."
    )
    created_at: datetime = column()

    execution: ExecutionType | None = related(
        "execution", "execution_id", lambda r: ExecutionType(row=r)
    )


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
class MemoryVersionType:
    row: strawberry.Private[models.MemoryVersion]

    id: uuid.UUID = column()
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
class MemoryRecordType:
    """A record as an API reader sees it: a change an open turn staged is not yet shown."""

    row: strawberry.Private[models.MemoryRecord]

    @property
    def _staged(self) -> bool:
        return self.row.pending_turn_id is not None

    id: uuid.UUID = column()
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
