"""Types of a turn's work: turns, executions, invocations and transcript events."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import AFTER, FIRST, Connection, Node, column, later, node_id, related
from server import models
from server.services import reads

if TYPE_CHECKING:
    from resolvers.types.memory import MemoryRecordType
    from resolvers.types.uses import OutputUseType

_MEMORY = "resolvers.types.memory"
_USES = "resolvers.types.uses"
_record = later(_MEMORY, "MemoryRecordType")
_use = later(_USES, "OutputUseType")

_MEMORY_TOOL_IO = (
    "A memory tool's input and output are memory: null without the memory read grant "
    '(R71); in a rolled-back or failed turn, {"redacted": "discarded: the turn rolled back"} '
    '(or "... failed") for every reader but the agent itself (R12).'
)


@strawberry.type(name="Turn")
class TurnType(Node):
    row: strawberry.Private[models.Turn]

    id: strawberry.ID = node_id()
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

    @strawberry.field(description="The turn's executions, oldest first, a page at a time.")
    async def executions_connection(
        self,
        info: Info,
        first: Annotated[int, strawberry.argument(description=FIRST)],
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
    ) -> Connection[ExecutionType]:
        return await Connection.read(
            info,
            reads.list_executions,
            lambda r: ExecutionType(row=r),
            turn_id=self.row.id,
            first=first,
            after=after,
        )

    @strawberry.field(
        description="The turn's transcript events, in order; kept whatever the turn's end. "
        "See TranscriptEvent.payload for what of memory a reader sees."
    )
    async def transcript(self, info: Info) -> list[TranscriptEventType]:
        rows = await info.context.loaders.events_of_turn.load(self.row.id)
        return [TranscriptEventType(row=r) for r in rows]

    @strawberry.field(
        description="The turn's transcript events in order, a page at a time; each reads as "
        "in transcript."
    )
    async def transcript_connection(
        self,
        info: Info,
        first: Annotated[int, strawberry.argument(description=FIRST)],
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
    ) -> Connection[TranscriptEventType]:
        return await Connection.read(
            info,
            reads.list_transcript,
            lambda r: TranscriptEventType(row=r),
            turn_id=self.row.id,
            first=first,
            after=after,
        )

    @strawberry.field(
        description="What the turn wrote: live and preview records it created or changed; "
        "a preview deletion is a preview record of status DELETED."
    )
    async def memories(
        self, info: Info
    ) -> list[Annotated[MemoryRecordType, strawberry.lazy(_MEMORY)]]:
        rows = await reads.turn_memories(
            info.context.db, agent_id=self.row.agent_id, turn_id=self.row.id
        )
        return [_record(row=r) for r in rows]


@strawberry.type(name="Execution")
class ExecutionType(Node):
    row: strawberry.Private[models.Execution]

    id: strawberry.ID = node_id()
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
    ) -> list[Annotated[OutputUseType, strawberry.lazy(_USES)]] | None:
        rows = await info.context.loaders.uses_of_execution.load(self.row.id)
        return [_use(row=r) for r in rows]


@strawberry.type(name="Invocation")
class InvocationType(Node):
    row: strawberry.Private[models.Invocation]

    id: strawberry.ID = node_id()
    purpose: str = column(description="turn, memory or embed.")
    model: str = column()
    input_tokens: int = column()
    output_tokens: int = column()
    counted: bool = column(description="False for usage no limit counts (embed).")
    created_at: datetime = column()
    execution: ExecutionType = related("execution", "execution_id", lambda r: ExecutionType(row=r))


@strawberry.type(name="TranscriptEvent")
class TranscriptEventType(Node):
    row: strawberry.Private[models.TranscriptEvent]

    id: strawberry.ID = node_id()
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
