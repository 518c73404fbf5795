"""Mutations: admin (agents, versions, sessions) and runtime (turns, memory tools).

Each resolver maps its input to one domain call inside one transaction
(``Context.unit``) and the result to a type. Runtime mutations take an
optional ``idempotencyKey``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.scalars import JSON

from resolvers.context import Info, call_ref, labels_of
from resolvers.idempotent import once_made
from resolvers.permissions import CanManageAgents, CanOpenSessions
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import MutationResult, Scope
from resolvers.types.memory import MemoryVersionType
from resolvers.types.turns import ExecutionType, InvocationType, TurnType
from server import models
from server.services import agents, commit, memory, turns
from server.services.lookup import get


@strawberry.enum
class HelperKind(Enum):
    HELPER = "helper"
    PROGRAM = "program"


@strawberry.enum
class InvocationPurpose(Enum):
    TURN = "turn"
    MEMORY = "memory"


@strawberry.input
class CreateAgentInput:
    namespace: str
    name: str
    sessionless: bool = strawberry.field(
        default=False, description="An agent without sessions: its memory is agent scope only."
    )


@strawberry.input
class PublishAgentVersionInput:
    agent_id: uuid.UUID
    config: JSON = strawberry.field(description='The version\'s configuration: {"harness": ...}.')
    label: str | None = None


@strawberry.input
class CreateSessionInput:
    agent_id: uuid.UUID
    external_id: str | None = None


@strawberry.input
class BeginTurnInput:
    session_id: uuid.UUID | None = None
    agent_id: uuid.UUID | None = strawberry.field(
        default=None, description="For agents without sessions."
    )
    agent_version_id: uuid.UUID | None = strawberry.field(
        default=None, description="Default: the latest version."
    )
    preview: bool = False
    replay_of: uuid.UUID | None = None
    retry_of: uuid.UUID | None = None
    idempotency_key: str | None = None


@strawberry.input(description="The turn to commit.")
class CommitTurnInput:
    turn_id: uuid.UUID
    idempotency_key: str | None = None


@strawberry.input(description="The turn to roll back.")
class RollbackTurnInput:
    turn_id: uuid.UUID
    idempotency_key: str | None = None


@strawberry.input
class FailTurnInput:
    turn_id: uuid.UUID
    error: str | None = None
    idempotency_key: str | None = None


@strawberry.input
class StartExecutionInput:
    turn_id: uuid.UUID
    kind: HelperKind
    name: str
    parent_execution_id: uuid.UUID | None = None


@strawberry.input
class RecordInvocationInput:
    execution_id: uuid.UUID
    purpose: InvocationPurpose
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


@strawberry.input
class AddMemoryInput:
    turn_id: uuid.UUID
    summary: str
    content: str | None = None
    kind: str | None = None
    labels: JSON | None = None
    scope: Scope | None = None
    pinned: bool = False
    replaces: uuid.UUID | None = None
    execution_id: uuid.UUID | None = strawberry.field(
        default=None, description="The calling execution; default: the turn's own."
    )
    invocation_id: uuid.UUID | None = strawberry.field(
        default=None, description="The model call that asked for the tool."
    )
    idempotency_key: str | None = None


@strawberry.input(description="The record the native read_memory tool reads.")
class ReadMemoryInput:
    turn_id: uuid.UUID
    id: uuid.UUID
    execution_id: uuid.UUID | None = None
    invocation_id: uuid.UUID | None = None
    idempotency_key: str | None = None


@strawberry.input(description="The record the native delete_memory tool deletes.")
class DeleteMemoryInput:
    turn_id: uuid.UUID
    id: uuid.UUID
    execution_id: uuid.UUID | None = None
    invocation_id: uuid.UUID | None = None
    idempotency_key: str | None = None


@strawberry.type
class PinnedMemory:
    record_id: uuid.UUID
    version_id: uuid.UUID
    summary: str
    line: str


@strawberry.type
class BeginTurnPayload:
    turn: TurnType
    execution: ExecutionType
    pinned: list[PinnedMemory]
    notes: strawberry.Private[list[str]]

    @strawberry.field(
        description="The turn's instructions: the pinned lines (R30); a line saying how many "
        "older pins are not listed, when the pinned records add up to more than the budget "
        "(R31); and, when the turn has earlier history to search (harness.history, R64), one "
        "line telling the agent to search it with search_history before guessing or asking "
        "again."
    )
    def instructions(self) -> str:
        return "\n".join([*(p.line for p in self.pinned), *self.notes])


@strawberry.type(description="What the native add_memory tool did.")
class AddMemoryPayload:
    execution: ExecutionType
    memories: list[MemoryVersionType]


@strawberry.type(description="What the native delete_memory tool did.")
class DeleteMemoryPayload:
    execution: ExecutionType
    memories: list[MemoryVersionType]


@strawberry.type(description="The agent created.")
class CreateAgentPayload(MutationResult):
    agent: AgentType = strawberry.field(description="The new agent.")


@strawberry.type(description="The version published.")
class PublishAgentVersionPayload(MutationResult):
    agent_version: AgentVersionType = strawberry.field(description="The new version.")


@strawberry.type(description="The session created.")
class CreateSessionPayload(MutationResult):
    session: SessionType = strawberry.field(description="The new session.")


@strawberry.type(description="The turn committed.")
class CommitTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now committed.")


@strawberry.type(description="The turn rolled back.")
class RollbackTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now rolled back.")


@strawberry.type(description="The turn failed.")
class FailTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now failed.")


@strawberry.type(description="The execution started.")
class StartExecutionPayload(MutationResult):
    execution: ExecutionType = strawberry.field(description="The new execution, running.")


@strawberry.type(description="The model call recorded.")
class RecordInvocationPayload(MutationResult):
    invocation: InvocationType = strawberry.field(description="The recorded model call.")


@strawberry.type
class ReadMemoryPayload:
    execution: ExecutionType
    sources: list[MemoryVersionType]


async def _memory_tool(
    info: Info,
    operation: str,
    input: Any,
    call: Callable[[AsyncSession], Awaitable[memory.ToolResult]],
) -> tuple[ExecutionType, list[MemoryVersionType]]:
    """A native memory tool, once per idempotency key: its execution and the versions
    it gave, as the call returned them or, when the key replays, reloaded."""
    db = info.context.db

    async def run() -> tuple[memory.ToolResult, dict[str, Any]]:
        r = await call(db)
        return r, {
            "execution": str(r.execution.id),
            "versions": [str(i.version.id) for i in r.items],
        }

    result, made = await once_made(info, operation, input, run)
    if made is not None:
        return ExecutionType(row=made.execution), [
            MemoryVersionType(row=i.version) for i in made.items
        ]
    execution = await get(db, models.Execution, uuid.UUID(result["execution"]))
    versions = []
    for vid in result["versions"]:
        row = await db.get(models.MemoryVersion, uuid.UUID(vid))
        if row is not None:
            versions.append(MemoryVersionType(row=row))
    return ExecutionType(row=execution), versions


@strawberry.type
class Mutation:
    @strawberry.mutation(permission_classes=[CanManageAgents])
    async def create_agent(self, info: Info, input: CreateAgentInput) -> CreateAgentPayload:
        async with info.context.unit() as db:
            agent = await agents.create_agent(
                db, namespace=input.namespace, name=input.name, sessionless=input.sessionless
            )
        return CreateAgentPayload(agent=AgentType(row=agent))

    @strawberry.mutation(
        description="Publish an immutable version; its config is validated.",
        permission_classes=[CanManageAgents],
    )
    async def publish_agent_version(
        self, info: Info, input: PublishAgentVersionInput
    ) -> PublishAgentVersionPayload:
        async with info.context.unit() as db:
            version = await agents.publish_version(
                db, agent_id=input.agent_id, config=input.config, label=input.label
            )
        return PublishAgentVersionPayload(agent_version=AgentVersionType(row=version))

    @strawberry.mutation(permission_classes=[CanOpenSessions])
    async def create_session(self, info: Info, input: CreateSessionInput) -> CreateSessionPayload:
        async with info.context.unit() as db:
            session = await agents.create_session(
                db, agent_id=input.agent_id, external_id=input.external_id
            )
        return CreateSessionPayload(session=SessionType(row=session))

    @strawberry.mutation(description="Open a turn; returns the pinned lines (R30).")
    async def begin_turn(self, info: Info, input: BeginTurnInput) -> BeginTurnPayload:
        async def run() -> tuple[turns.BegunTurn, dict[str, Any]]:
            begun = await turns.begin_turn(
                info.context.db,
                session_id=input.session_id,
                agent_id=input.agent_id,
                agent_version_id=input.agent_version_id,
                preview=input.preview,
                replay_of=input.replay_of,
                retry_of=input.retry_of,
            )
            return begun, {
                "turn": str(begun.turn.id),
                "execution": str(begun.execution.id),
                "pinned": [
                    {
                        "record_id": str(p.record_id),
                        "version_id": str(p.version_id),
                        "summary": p.summary,
                        "line": p.line,
                    }
                    for p in begun.pinned
                ],
                "notes": begun.notes,
            }

        result, begun = await once_made(info, "beginTurn", input, run)
        if begun is not None:
            turn, execution = begun.turn, begun.execution
        else:
            db = info.context.db
            turn = await get(db, models.Turn, uuid.UUID(result["turn"]))
            execution = await get(db, models.Execution, uuid.UUID(result["execution"]))
        return BeginTurnPayload(
            turn=TurnType(row=turn),
            execution=ExecutionType(row=execution),
            pinned=[
                PinnedMemory(
                    record_id=uuid.UUID(p["record_id"]),
                    version_id=uuid.UUID(p["version_id"]),
                    summary=p["summary"],
                    line=p["line"],
                )
                for p in result["pinned"]
            ],
            notes=list(result.get("notes", [])),
        )

    @strawberry.mutation(description="Publish the turn's memory (R12).")
    async def commit_turn(self, info: Info, input: CommitTurnInput) -> CommitTurnPayload:
        turn = await _close(
            info,
            "commitTurn",
            input,
            lambda db: commit.commit_turn(db, info.context.embedder, turn_id=input.turn_id),
        )
        return CommitTurnPayload(turn=turn)

    @strawberry.mutation(
        description="Discard the turn's memory (R12): its new records and versions are "
        "removed, the records it changed are restored. Its executions and transcript stay; "
        "the memory text in them is shown to the agent itself only, to every other reader "
        'as {"redacted": "discarded: the turn rolled back"}.'
    )
    async def rollback_turn(self, info: Info, input: RollbackTurnInput) -> RollbackTurnPayload:
        turn = await _close(
            info, "rollbackTurn", input, lambda db: turns.rollback_turn(db, turn_id=input.turn_id)
        )
        return RollbackTurnPayload(turn=turn)

    @strawberry.mutation(
        description="Mark the attempt failed; it may be retried. Its memory is discarded "
        "as by rollbackTurn; the memory text in its executions and transcript is shown to "
        'the agent itself only, to every other reader as {"redacted": "discarded: the turn '
        'failed"}.'
    )
    async def fail_turn(self, info: Info, input: FailTurnInput) -> FailTurnPayload:
        turn = await _close(
            info,
            "failTurn",
            input,
            lambda db: turns.fail_turn(db, turn_id=input.turn_id, error=input.error),
        )
        return FailTurnPayload(turn=turn)

    @strawberry.mutation(description="Record a helper (subagent) or a program run (R23).")
    async def start_execution(
        self, info: Info, input: StartExecutionInput
    ) -> StartExecutionPayload:
        async with info.context.unit() as db:
            execution = await turns.start_helper(
                db,
                turn_id=input.turn_id,
                kind=input.kind.value,
                name=input.name,
                parent_execution_id=input.parent_execution_id,
            )
        return StartExecutionPayload(execution=ExecutionType(row=execution))

    @strawberry.mutation(description="Record one model call inside an execution.")
    async def record_invocation(
        self, info: Info, input: RecordInvocationInput
    ) -> RecordInvocationPayload:
        async with info.context.unit() as db:
            invocation = await turns.record_invocation(
                db,
                execution_id=input.execution_id,
                purpose=input.purpose.value,
                model=input.model,
                input_tokens=input.input_tokens,
                output_tokens=input.output_tokens,
            )
        return RecordInvocationPayload(invocation=InvocationType(row=invocation))

    @strawberry.mutation(description="The native add_memory tool (R20–R22, R24, R31).")
    async def add_memory(self, info: Info, input: AddMemoryInput) -> AddMemoryPayload:
        labels = labels_of(input)

        execution, versions = await _memory_tool(
            info,
            "addMemory",
            input,
            lambda db: memory.add_memory(
                db,
                info.context.embedder,
                ref=call_ref(input),
                summary=input.summary,
                content=input.content,
                kind=input.kind,
                labels=labels,
                scope=input.scope.value if input.scope else None,
                pinned=input.pinned,
                replaces=input.replaces,
            ),
        )
        return AddMemoryPayload(execution=execution, memories=versions)

    @strawberry.mutation(description="The native read_memory tool: any status (R14).")
    async def read_memory(self, info: Info, input: ReadMemoryInput) -> ReadMemoryPayload:
        execution, versions = await _memory_tool(
            info,
            "readMemory",
            input,
            lambda db: memory.read_memory(db, ref=call_ref(input), record_id=input.id),
        )
        return ReadMemoryPayload(execution=execution, sources=versions)

    @strawberry.mutation(description="The native delete_memory tool (R21, R22).")
    async def delete_memory(self, info: Info, input: DeleteMemoryInput) -> DeleteMemoryPayload:
        execution, versions = await _memory_tool(
            info,
            "deleteMemory",
            input,
            lambda db: memory.delete_memory(db, ref=call_ref(input), record_id=input.id),
        )
        return DeleteMemoryPayload(execution=execution, memories=versions)


async def _close(
    info: Info,
    operation: str,
    input: CommitTurnInput | RollbackTurnInput | FailTurnInput,
    call: Callable[[AsyncSession], Awaitable[models.Turn]],
) -> TurnType:
    db = info.context.db

    async def run() -> tuple[models.Turn, dict[str, Any]]:
        turn = await call(db)
        return turn, {"turn": str(turn.id)}

    result, closed = await once_made(info, operation, input, run)
    if closed is not None:  # closed by this call: the row holds what it wrote
        return TurnType(row=closed)
    turn = await get(db, models.Turn, uuid.UUID(result["turn"]))
    await db.refresh(turn)
    return TurnType(row=turn)
