"""The native memory tools the model calls in a turn: add_memory, read_memory and
delete_memory (R14, R20-R24).

Each runs its service call once per ``idempotencyKey`` (:mod:`resolvers.idempotent`),
recorded as an execution of the tool, and shows that execution and the versions the
call gave, as returned or, on a replay, reloaded.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession

from resolvers.context import Info, call_ref, labels_of
from resolvers.idempotent import once_shown, reloaded
from resolvers.types.base import EXECUTION_ID, INVOCATION_ID, TURN_ID, LabelInput, idempotency_key
from resolvers.types.enums import Scope
from resolvers.types.memory import MemoryVersionType
from resolvers.types.turns import ExecutionType
from server import models
from server.services import memory
from server.services.lookup import get


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
    idempotency_key: str | None = idempotency_key()

    def __post_init__(self) -> None:
        if self.pinned is None:
            self.pinned = False


@strawberry.input(description="The read_memory tool's arguments: the record to read.")
class ReadMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    id: uuid.UUID = strawberry.field(description="The memory record's id.")
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="The delete_memory tool's arguments: the record to delete.")
class DeleteMemoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    id: uuid.UUID = strawberry.field(description="The memory record's id.")
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = idempotency_key()


_TOOL_EXECUTION = "The tool call's execution, with its input and output."


@strawberry.type(description="What the add_memory tool did.")
class AddMemoryPayload:
    execution: ExecutionType = strawberry.field(description=_TOOL_EXECUTION)
    memories: list[MemoryVersionType] = strawberry.field(
        description="The versions it wrote: the new record's, and the replaced one's."
    )


@strawberry.type(description="What the delete_memory tool did.")
class DeleteMemoryPayload:
    execution: ExecutionType = strawberry.field(description=_TOOL_EXECUTION)
    memories: list[MemoryVersionType] = strawberry.field(
        description="The version it wrote: the deleted record's DELETED version."
    )


@strawberry.type(description="What read_memory read.")
class ReadMemoryPayload:
    execution: ExecutionType = strawberry.field(description=_TOOL_EXECUTION)
    sources: list[MemoryVersionType] = strawberry.field(
        description="The record's current version, in any status."
    )


_Shown = tuple[models.Execution, list[models.MemoryVersion]]


async def _memory_tool(
    info: Info,
    operation: str,
    input: Any,
    call: Callable[[AsyncSession], Awaitable[memory.ToolResult]],
) -> tuple[ExecutionType, list[MemoryVersionType]]:
    """A native memory tool, once per idempotency key: its execution and the versions
    it gave, as the call returned them or, when the key replays, reloaded."""
    db = info.context.db

    async def run() -> tuple[_Shown, dict[str, Any]]:
        r = await call(db)
        versions = [i.version for i in r.items]
        return (r.execution, versions), {
            "execution": str(r.execution.id),
            "versions": [str(v.id) for v in versions],
        }

    async def reload(result: dict[str, Any]) -> _Shown:
        execution = await get(db, models.Execution, uuid.UUID(result["execution"]))
        return execution, await reloaded(db, models.MemoryVersion, result["versions"])

    (execution, versions), _ = await once_shown(info, operation, input, run, reload)
    return ExecutionType(row=execution), [MemoryVersionType(row=v) for v in versions]


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        # R20-R22, R24, R31
        description="The native add_memory tool: save a record in the turn's transaction "
        "(visible once the turn commits), recorded as an execution. A refusal (an "
        "undeclared kind or label, a scope not written, a pin over the budget) is "
        "NOT_ALLOWED, with a message for the model, and is recorded as a failed execution."
    )
    async def add_memory(
        self,
        info: Info,
        input: Annotated[AddMemoryInput, strawberry.argument(description="The tool's arguments.")],
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
        self,
        info: Info,
        input: Annotated[ReadMemoryInput, strawberry.argument(description="The tool's arguments.")],
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
        self,
        info: Info,
        input: Annotated[
            DeleteMemoryInput, strawberry.argument(description="The tool's arguments.")
        ],
    ) -> DeleteMemoryPayload:
        execution, versions = await _memory_tool(
            info,
            "deleteMemory",
            input,
            lambda db: memory.delete_memory(db, ref=call_ref(input), record_id=input.id),
        )
        return DeleteMemoryPayload(execution=execution, memories=versions)
