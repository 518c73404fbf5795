"""Types of a turn's work: turns, executions, invocations, transcript events, and the
memory records and versions they wrote, with their provenance (R25)."""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types import AgentType, AgentVersionType, MemoryStatus, Scope, SessionType
from server import models
from server.services import reads


@strawberry.type(name="Turn")
class TurnType:
    row: strawberry.Private[models.Turn]

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field(description="Position in the session; a retry keeps it.")
    def number(self) -> int:
        return self.row.number

    @strawberry.field
    def attempt(self) -> int:
        return self.row.attempt

    @strawberry.field(description="open, committed, rolled_back or failed.")
    def status(self) -> str:
        return self.row.status

    @strawberry.field
    def preview(self) -> bool:
        return self.row.preview

    @strawberry.field
    def error(self) -> str | None:
        return self.row.error

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    def ended_at(self) -> datetime | None:
        return self.row.ended_at

    @strawberry.field
    async def replay_of(self, info: Info) -> TurnType | None:
        return await _turn(info, self.row.replay_of_id)

    @strawberry.field
    async def retry_of(self, info: Info) -> TurnType | None:
        return await _turn(info, self.row.retry_of_id)

    @strawberry.field
    async def session(self, info: Info) -> SessionType | None:
        if self.row.session_id is None:
            return None
        row = await info.context.loaders.session.load(self.row.session_id)
        return SessionType(row=row) if row else None

    @strawberry.field
    async def agent(self, info: Info) -> AgentType:
        row = await info.context.loaders.agent.load(self.row.agent_id)
        assert row is not None
        return AgentType(row=row)

    @strawberry.field
    async def agent_version(self, info: Info) -> AgentVersionType:
        row = await info.context.loaders.agent_version.load(self.row.agent_version_id)
        assert row is not None
        return AgentVersionType(row=row)

    @strawberry.field(description="Every execution of the turn, oldest first.")
    async def executions(self, info: Info) -> list[ExecutionType]:
        rows = await info.context.loaders.executions_of_turn.load(self.row.id)
        return [ExecutionType(row=r) for r in rows]

    @strawberry.field(description="The turn's transcript events, in order.")
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


async def _turn(info: Info, turn_id: uuid.UUID | None) -> TurnType | None:
    if turn_id is None:
        return None
    row = await info.context.loaders.turn.load(turn_id)
    return TurnType(row=row) if row else None


@strawberry.type(name="Execution")
class ExecutionType:
    row: strawberry.Private[models.Execution]

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field(description="turn, tool, helper or program.")
    def kind(self) -> str:
        return self.row.kind

    @strawberry.field(description="The tool's name for a tool execution.")
    def name(self) -> str:
        return self.row.name

    @strawberry.field(description="running, succeeded or failed.")
    def status(self) -> str:
        return self.row.status

    @strawberry.field
    def input(self) -> JSON | None:
        return None if self.row.input is None else JSON(self.row.input)

    @strawberry.field
    def output(self) -> JSON | None:
        return None if self.row.output is None else JSON(self.row.output)

    @strawberry.field
    def error(self) -> str | None:
        return self.row.error

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    def ended_at(self) -> datetime | None:
        return self.row.ended_at

    @strawberry.field
    async def parent(self, info: Info) -> ExecutionType | None:
        if self.row.parent_id is None:
            return None
        row = await info.context.loaders.execution.load(self.row.parent_id)
        return ExecutionType(row=row) if row else None

    @strawberry.field
    async def children(self, info: Info) -> list[ExecutionType]:
        rows = await info.context.loaders.children_of_execution.load(self.row.id)
        return [ExecutionType(row=r) for r in rows]

    @strawberry.field
    async def invocations(self, info: Info) -> list[InvocationType]:
        rows = await info.context.loaders.invocations_of_execution.load(self.row.id)
        return [InvocationType(row=r) for r in rows]

    @strawberry.field
    async def turn(self, info: Info) -> TurnType:
        row = await info.context.loaders.turn.load(self.row.turn_id)
        assert row is not None
        return TurnType(row=row)


@strawberry.type(name="Invocation")
class InvocationType:
    row: strawberry.Private[models.Invocation]

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field(description="turn, memory or embed.")
    def purpose(self) -> str:
        return self.row.purpose

    @strawberry.field
    def model(self) -> str:
        return self.row.model

    @strawberry.field
    def input_tokens(self) -> int:
        return self.row.input_tokens

    @strawberry.field
    def output_tokens(self) -> int:
        return self.row.output_tokens

    @strawberry.field(description="False for usage no limit counts (embed).")
    def counted(self) -> bool:
        return self.row.counted

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    async def execution(self, info: Info) -> ExecutionType:
        row = await info.context.loaders.execution.load(self.row.execution_id)
        assert row is not None
        return ExecutionType(row=row)


@strawberry.type(name="TranscriptEvent")
class TranscriptEventType:
    row: strawberry.Private[models.TranscriptEvent]

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field
    def sequence(self) -> int:
        return self.row.sequence

    @strawberry.field(
        description="message.user, message.agent, tool.call, tool.result, "
        "tool.error, skill.load, memory.pinned, usage, ..."
    )
    def type(self) -> str:
        return self.row.type

    @strawberry.field
    def tool_name(self) -> str | None:
        return self.row.tool_name

    @strawberry.field
    def tool_call_id(self) -> str | None:
        return self.row.tool_call_id

    @strawberry.field
    def payload(self) -> JSON:
        return JSON(self.row.payload)

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    async def execution(self, info: Info) -> ExecutionType | None:
        if self.row.execution_id is None:
            return None
        row = await info.context.loaders.execution.load(self.row.execution_id)
        return ExecutionType(row=row) if row else None


@strawberry.type(name="Provenance", description="Who wrote a memory version (R25).")
class ProvenanceType:
    row: strawberry.Private[models.MemoryVersion]

    @strawberry.field
    async def execution(self, info: Info) -> ExecutionType:
        row = await info.context.loaders.execution.load(self.row.execution_id)
        assert row is not None
        return ExecutionType(row=row)

    @strawberry.field
    async def invocation(self, info: Info) -> InvocationType | None:
        if self.row.invocation_id is None:
            return None
        row = await info.context.loaders.invocation.load(self.row.invocation_id)
        return InvocationType(row=row) if row else None

    @strawberry.field
    async def agent_version(self, info: Info) -> AgentVersionType:
        row = await info.context.loaders.agent_version.load(self.row.agent_version_id)
        assert row is not None
        return AgentVersionType(row=row)

    @strawberry.field
    async def session(self, info: Info) -> SessionType | None:
        if self.row.session_id is None:
            return None
        row = await info.context.loaders.session.load(self.row.session_id)
        return SessionType(row=row) if row else None

    @strawberry.field
    async def turn(self, info: Info) -> TurnType:
        row = await info.context.loaders.turn.load(self.row.turn_id)
        assert row is not None
        return TurnType(row=row)


@strawberry.type(name="MemoryVersion")
class MemoryVersionType:
    row: strawberry.Private[models.MemoryVersion]

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field
    def record_id(self) -> uuid.UUID:
        return self.row.record_id

    @strawberry.field
    def number(self) -> int:
        return self.row.number

    @strawberry.field
    def status(self) -> MemoryStatus:
        return MemoryStatus(self.row.status)

    @strawberry.field
    def summary(self) -> str:
        return self.row.summary

    @strawberry.field
    def content(self) -> str | None:
        return self.row.content

    @strawberry.field
    def kind(self) -> str:
        return self.row.kind

    @strawberry.field
    def labels(self) -> JSON:
        return JSON(self.row.labels)

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field
    def written_by(self) -> ProvenanceType:
        return ProvenanceType(row=self.row)

    @strawberry.field
    async def record(self, info: Info) -> MemoryRecordType:
        row = await info.context.loaders.record.load(self.row.record_id)
        assert row is not None
        return MemoryRecordType(row=row)


@strawberry.type(name="MemoryRecord")
class MemoryRecordType:
    """A record as an API reader sees it: a change an open turn staged is not yet shown."""

    row: strawberry.Private[models.MemoryRecord]

    @property
    def _staged(self) -> bool:
        return self.row.pending_turn_id is not None

    @strawberry.field
    def id(self) -> uuid.UUID:
        return self.row.id

    @strawberry.field
    def scope(self) -> Scope:
        return Scope(self.row.scope)

    @strawberry.field
    def status(self) -> MemoryStatus:
        status = self.row.prior_status if self._staged else self.row.status
        return MemoryStatus(status or self.row.status)

    @strawberry.field
    def preview(self) -> bool:
        return self.row.preview

    @strawberry.field
    def pinned(self) -> bool:
        return self.row.pinned

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="The session that wrote the record.")
    async def session(self, info: Info) -> SessionType | None:
        if self.row.session_id is None:
            return None
        row = await info.context.loaders.session.load(self.row.session_id)
        return SessionType(row=row) if row else None

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

    @strawberry.field(description="The record this one corrects.")
    async def replaces(self, info: Info) -> MemoryRecordType | None:
        return await _record(info, self.row.replaces_id)

    @strawberry.field(description="The record that superseded this one.")
    async def replaced_by(self, info: Info) -> MemoryRecordType | None:
        return None if self._staged else await _record(info, self.row.replaced_by_id)


async def _record(info: Info, record_id: uuid.UUID | None) -> MemoryRecordType | None:
    if record_id is None:
        return None
    row = await info.context.loaders.record.load(record_id)
    return MemoryRecordType(row=row) if row else None
