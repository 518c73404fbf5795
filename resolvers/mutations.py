"""Mutations: admin (agents, versions, sessions) and runtime (turns, memory tools).

Each resolver maps its input to one domain call inside one transaction
(``Context.unit``) and the result to a type. Runtime mutations take an
optional ``idempotencyKey``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Annotated, Any

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.scalars import JSON

from resolvers.context import Info, call_ref, labels_of
from resolvers.idempotent import once_made
from resolvers.permissions import CanManageAgents, CanOpenSessions
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import (
    EXECUTION_ID,
    IDEMPOTENCY_KEY,
    INVOCATION_ID,
    TURN_ID,
    InvocationPurpose,
    LabelInput,
    MutationResult,
    Scope,
)
from resolvers.types.memory import MemoryVersionType
from resolvers.types.turns import ExecutionType, InvocationType, TurnType
from server import models
from server.errors import BadInputError
from server.services import agents, commit, memory, turns
from server.services.lookup import get


@strawberry.enum(description="What startExecution records.")
class HelperKind(Enum):
    _value_: str  # the stored value

    HELPER = strawberry.enum_value("helper", description="A helper (subagent) the turn runs.")
    PROGRAM = strawberry.enum_value("program", description="A program the turn runs.")


def _key() -> Any:
    return strawberry.field(default=None, description=IDEMPOTENCY_KEY)


@strawberry.input(description="A new agent.")
class CreateAgentInput:
    namespace: str = strawberry.field(
        description="The namespace it belongs to; grants are given per namespace."
    )
    name: str = strawberry.field(description="Its name, unique in the namespace.")
    sessionless: bool | None = strawberry.field(
        default=None,
        description="An agent without sessions: its memory is agent scope only. Null or "
        "omitted: false.",
    )

    def __post_init__(self) -> None:
        # null is the default (false), for the request a replay repeats too
        if self.sessionless is None:
            self.sessionless = False


@strawberry.input(description="A new version of an agent's configuration.")
class PublishAgentVersionInput:
    agent_id: uuid.UUID = strawberry.field(description="The agent.")
    config: JSON = strawberry.field(
        description='The version\'s configuration: {"harness": {"memory": ..., "history": '
        "...}}; validated, and INVALID_CONFIG naming the bad field when it is not valid."
    )
    label: str | None = strawberry.field(
        default=None, description="A label for people reading the versions; null: none."
    )


@strawberry.input(description="A new session of an agent.")
class CreateSessionInput:
    agent_id: uuid.UUID = strawberry.field(description="The agent; it must have sessions.")
    external_id: str | None = strawberry.field(
        default=None, description="The caller's own id for the session; null: none."
    )


@strawberry.input(description="A turn to open.")
class BeginTurnInput:
    session_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="The session the turn belongs to; give it, or agentId for an agent "
        "without sessions.",
    )
    agent_id: uuid.UUID | None = strawberry.field(
        default=None, description="The agent, for an agent without sessions."
    )
    agent_version_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="The version of the configuration to run; null or omitted: the latest.",
    )
    preview: bool | None = strawberry.field(
        default=None,
        description="Run the turn in preview mode: the records it writes are preview records, "
        "which live turns never recall, search, read or delete. Null or omitted: false.",
    )
    replay_of: uuid.UUID | None = strawberry.field(
        default=None,
        description="An earlier turn of the session to replay: the new turn takes its "
        "number; null: a new turn.",
    )
    retry_of: uuid.UUID | None = strawberry.field(
        default=None,
        description="A failed turn to retry: the new turn keeps its number, as its next "
        "attempt; null: a new turn.",
    )
    idempotency_key: str | None = _key()

    def __post_init__(self) -> None:
        if self.preview is None:
            self.preview = False


@strawberry.input(description="The turn to commit.")
class CommitTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    idempotency_key: str | None = _key()


@strawberry.input(description="The turn to roll back.")
class RollbackTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    idempotency_key: str | None = _key()


@strawberry.input(description="The turn to end as failed.")
class FailTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    error: str | None = strawberry.field(
        default=None, description="What went wrong, shown as the turn's error; null: none."
    )
    idempotency_key: str | None = _key()


@strawberry.input(description="A helper or program to record inside a turn.")
class StartExecutionInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    kind: HelperKind = strawberry.field(description="What it is.")
    name: str = strawberry.field(description="Its name, not blank.")
    parent_execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="The execution of the turn that starts it (not a native tool call); "
        "null or omitted: the turn's own.",
    )


@strawberry.input(description="A model call to record.")
class RecordInvocationInput:
    execution_id: uuid.UUID = strawberry.field(
        description="The execution of an open turn the call was made in."
    )
    purpose: InvocationPurpose = strawberry.field(
        description="What the call was for: TURN or MEMORY (EMBED is the server's own)."
    )
    model: str = strawberry.field(description="The model's name, not empty.")
    input_tokens: int | None = strawberry.field(
        default=None, description="Tokens the model read, 0 or more. Null or omitted: 0."
    )
    output_tokens: int | None = strawberry.field(
        default=None, description="Tokens the model wrote, 0 or more. Null or omitted: 0."
    )

    def __post_init__(self) -> None:
        if self.input_tokens is None:
            self.input_tokens = 0
        if self.output_tokens is None:
            self.output_tokens = 0


@strawberry.input(description="The add_memory tool's arguments: a record to save.")
class AddMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    summary: str = strawberry.field(description="One line the agent can act on, not blank.")
    content: str | None = strawberry.field(
        default=None, description="The evidence and the specifics; null: none."
    )
    kind: str | None = strawberry.field(
        default=None,
        description="One of the kinds the agent declares (harness.memory.kinds); null or "
        "omitted: the first declared.",
    )
    labels: list[LabelInput] | None = strawberry.field(
        default=None,
        description="Values of labels the agent declares, each label named once; an "
        "undeclared label is NOT_ALLOWED. Null or omitted: none.",
    )
    scope: Scope | None = strawberry.field(
        default=None,
        description="AGENT only where the agent writes agent scope (harness.memory.scope."
        "write); null or omitted: SESSION where it writes session scope, else AGENT.",
    )
    pinned: bool | None = strawberry.field(
        default=None,
        description="Pin the record: every later turn's instructions list its summary. Needs "
        "pinning enabled (harness.memory.pinned) and room in its token budget. Null or "
        "omitted: false.",
    )
    replaces: uuid.UUID | None = strawberry.field(
        default=None,
        description="A record the new one corrects: that record becomes SUPERSEDED, and "
        "its replacedBy names the new one; null: none.",
    )
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = _key()

    def __post_init__(self) -> None:
        if self.pinned is None:
            self.pinned = False


@strawberry.input(description="The read_memory tool's arguments: the record to read.")
class ReadMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    id: uuid.UUID = strawberry.field(description="The memory record's id.")
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = _key()


@strawberry.input(description="The delete_memory tool's arguments: the record to delete.")
class DeleteMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    id: uuid.UUID = strawberry.field(description="The memory record's id.")
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = _key()


@strawberry.type(description="A pinned record the turn's instructions list.")
class PinnedMemory:
    record_id: uuid.UUID = strawberry.field(description="The record's id.")
    version_id: uuid.UUID = strawberry.field(description="The version listed.")
    summary: str = strawberry.field(description="Its summary.")
    line: str = strawberry.field(description="The line of the instructions that lists it.")


@strawberry.type(description="The turn opened.")
class BeginTurnPayload:
    turn: TurnType = strawberry.field(description="The new turn, OPEN.")
    execution: ExecutionType = strawberry.field(
        description="The turn's own execution: record its model calls and conversation on it."
    )
    pinned: list[PinnedMemory] = strawberry.field(
        description="The pinned records the instructions list, in their order."
    )
    notes: strawberry.Private[list[str]]

    @strawberry.field(
        # R30, R31, R64
        description="The turn's instructions, for the model: the pinned lines; a line "
        "saying how many older pins are not listed, when the pinned records add up to more "
        "than the budget; and, when the turn has earlier history to search "
        "(harness.history), one line telling the agent to search it with search_history "
        "before guessing or asking again."
    )
    def instructions(self) -> str:
        return "\n".join([*(p.line for p in self.pinned), *self.notes])


@strawberry.type(description="What the add_memory tool did.")
class AddMemoryPayload:
    execution: ExecutionType = strawberry.field(
        description="The tool call's execution, with its input and output."
    )
    memories: list[MemoryVersionType] = strawberry.field(
        description="The versions it wrote: the new record's, and the replaced one's."
    )


@strawberry.type(description="What the delete_memory tool did.")
class DeleteMemoryPayload:
    execution: ExecutionType = strawberry.field(
        description="The tool call's execution, with its input and output."
    )
    memories: list[MemoryVersionType] = strawberry.field(
        description="The version it wrote: the deleted record's DELETED version."
    )


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


@strawberry.type(description="What read_memory read.")
class ReadMemoryPayload:
    execution: ExecutionType = strawberry.field(
        description="The tool call's execution, with its input and output."
    )
    sources: list[MemoryVersionType] = strawberry.field(
        description="The record's current version, in any status."
    )


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


def _input(description: str) -> Any:
    return strawberry.argument(description=description)


@strawberry.type
class Mutation:
    @strawberry.mutation(
        description="Create an agent. Needs INSERT on <namespace>.Agent (or an admin); "
        "without it, FORBIDDEN.",
        permission_classes=[CanManageAgents],
    )
    async def create_agent(
        self, info: Info, input: Annotated[CreateAgentInput, _input("The agent.")]
    ) -> CreateAgentPayload:
        async with info.context.unit() as db:
            agent = await agents.create_agent(
                db, namespace=input.namespace, name=input.name, sessionless=bool(input.sessionless)
            )
        return CreateAgentPayload(agent=AgentType(row=agent))

    @strawberry.mutation(
        description="Publish an immutable version of an agent's configuration, numbered "
        "after the last; its config is validated first. Needs INSERT on <namespace>.Agent "
        "(or an admin); without it, FORBIDDEN.",
        permission_classes=[CanManageAgents],
    )
    async def publish_agent_version(
        self, info: Info, input: Annotated[PublishAgentVersionInput, _input("The version.")]
    ) -> PublishAgentVersionPayload:
        async with info.context.unit() as db:
            version = await agents.publish_version(
                db, agent_id=input.agent_id, config=input.config, label=input.label
            )
        return PublishAgentVersionPayload(agent_version=AgentVersionType(row=version))

    @strawberry.mutation(
        description="Open a session of an agent. Needs the agent's own runtime, an admin, "
        "or INSERT on <namespace>.Session; without it, FORBIDDEN.",
        permission_classes=[CanOpenSessions],
    )
    async def create_session(
        self, info: Info, input: Annotated[CreateSessionInput, _input("The session.")]
    ) -> CreateSessionPayload:
        async with info.context.unit() as db:
            session = await agents.create_session(
                db, agent_id=input.agent_id, external_id=input.external_id
            )
        return CreateSessionPayload(session=SessionType(row=session))

    @strawberry.mutation(
        # R30
        description="Open a turn, and return its instructions: the pinned records, for the "
        "model's context."
    )
    async def begin_turn(
        self, info: Info, input: Annotated[BeginTurnInput, _input("The turn to open.")]
    ) -> BeginTurnPayload:
        async def run() -> tuple[turns.BegunTurn, dict[str, Any]]:
            begun = await turns.begin_turn(
                info.context.db,
                session_id=input.session_id,
                agent_id=input.agent_id,
                agent_version_id=input.agent_version_id,
                preview=bool(input.preview),
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

    @strawberry.mutation(
        # R12
        description="End the turn and publish its memory: what it wrote becomes visible to "
        "later turns and readers."
    )
    async def commit_turn(
        self, info: Info, input: Annotated[CommitTurnInput, _input("The turn.")]
    ) -> CommitTurnPayload:
        turn = await _close(
            info,
            "commitTurn",
            input,
            lambda db: commit.commit_turn(db, info.context.embedder, turn_id=input.turn_id),
        )
        return CommitTurnPayload(turn=turn)

    @strawberry.mutation(
        # R12
        description="End the turn and discard its memory: its new records and versions are "
        "removed, the records it changed are restored. Its executions and transcript stay; "
        "the memory text in them is shown to the agent itself only, to every other reader "
        'as {"redacted": "discarded: the turn rolled back"}.'
    )
    async def rollback_turn(
        self, info: Info, input: Annotated[RollbackTurnInput, _input("The turn.")]
    ) -> RollbackTurnPayload:
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
    async def fail_turn(
        self, info: Info, input: Annotated[FailTurnInput, _input("The turn, and its error.")]
    ) -> FailTurnPayload:
        turn = await _close(
            info,
            "failTurn",
            input,
            lambda db: turns.fail_turn(db, turn_id=input.turn_id, error=input.error),
        )
        return FailTurnPayload(turn=turn)

    @strawberry.mutation(
        # R23
        description="Record a helper (subagent) or a program the turn runs; it may call "
        "the memory tools as the agent does (executionId)."
    )
    async def start_execution(
        self, info: Info, input: Annotated[StartExecutionInput, _input("The execution.")]
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

    @strawberry.mutation(
        description="Record one model call inside an execution of an open turn: its "
        "purpose, model and tokens."
    )
    async def record_invocation(
        self, info: Info, input: Annotated[RecordInvocationInput, _input("The model call.")]
    ) -> RecordInvocationPayload:
        if input.purpose is InvocationPurpose.EMBED:
            # the server records its own embeddings, which no limit counts
            raise BadInputError("purpose must be TURN or MEMORY", field="purpose")
        async with info.context.unit() as db:
            invocation = await turns.record_invocation(
                db,
                execution_id=input.execution_id,
                purpose=input.purpose.value,
                model=input.model,
                input_tokens=input.input_tokens or 0,
                output_tokens=input.output_tokens or 0,
            )
        return RecordInvocationPayload(invocation=InvocationType(row=invocation))

    @strawberry.mutation(
        # R20-R22, R24, R31
        description="The native add_memory tool: save a record in the turn's transaction "
        "(visible once the turn commits), recorded as an execution. A refusal (an "
        "undeclared kind or label, a scope not written, a pin over the budget) is "
        "NOT_ALLOWED, with a message for the model, and is recorded as a failed execution."
    )
    async def add_memory(
        self, info: Info, input: Annotated[AddMemoryInput, _input("The tool's arguments.")]
    ) -> AddMemoryPayload:
        labels = labels_of(input.labels)

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
                pinned=bool(input.pinned),
                replaces=input.replaces,
            ),
        )
        return AddMemoryPayload(execution=execution, memories=versions)

    @strawberry.mutation(
        # R14
        description="The native read_memory tool: read a record by id, in any status, "
        "recorded as an execution."
    )
    async def read_memory(
        self, info: Info, input: Annotated[ReadMemoryInput, _input("The tool's arguments.")]
    ) -> ReadMemoryPayload:
        execution, versions = await _memory_tool(
            info,
            "readMemory",
            input,
            lambda db: memory.read_memory(db, ref=call_ref(input), record_id=input.id),
        )
        return ReadMemoryPayload(execution=execution, sources=versions)

    @strawberry.mutation(
        # R21, R22
        description="The native delete_memory tool: delete a record in the turn's "
        "transaction (it leaves recall and search once the turn commits; it stays readable "
        "by id), recorded as an execution."
    )
    async def delete_memory(
        self, info: Info, input: Annotated[DeleteMemoryInput, _input("The tool's arguments.")]
    ) -> DeleteMemoryPayload:
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
