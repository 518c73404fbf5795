"""The runtime's records of a turn's work: the helpers and programs it runs, and the
model calls made in them. Each is one service call in one transaction; neither takes
an idempotency key."""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Annotated

import strawberry

from resolvers.context import Info
from resolvers.types.base import TURN_ID, MutationResult
from resolvers.types.enums import InvocationPurpose
from resolvers.types.turns import ExecutionType, InvocationType
from server.errors import BadInputError
from server.services import turns


@strawberry.enum(description="What startExecution records.")
class HelperKind(Enum):
    _value_: str  # the stored value

    HELPER = strawberry.enum_value("helper", description="A helper (subagent) the turn runs.")
    PROGRAM = strawberry.enum_value("program", description="A program the turn runs.")


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
    latency_ms: int | None = strawberry.field(
        default=None,
        description="How long the call took, in milliseconds, from the request to its last "
        f"token: 0 to {turns.MAX_LATENCY_MS}. Record the call when it ends. Null or "
        "omitted: not known.",
    )

    def __post_init__(self) -> None:
        if self.input_tokens is None:
            self.input_tokens = 0
        if self.output_tokens is None:
            self.output_tokens = 0


@strawberry.type(description="The execution started.")
class StartExecutionPayload(MutationResult):
    execution: ExecutionType = strawberry.field(description="The new execution, running.")


@strawberry.type(description="The model call recorded.")
class RecordInvocationPayload(MutationResult):
    invocation: InvocationType = strawberry.field(description="The recorded model call.")


@strawberry.type
class ExecutionMutation:
    @strawberry.mutation(
        # R23
        description="Record a helper (subagent) or a program the turn runs; it may call "
        "the memory tools as the agent does (executionId)."
    )
    async def start_execution(
        self,
        info: Info,
        input: Annotated[StartExecutionInput, strawberry.argument(description="The execution.")],
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
        description="Record one model call inside an execution of an open turn, when it "
        "ends: its purpose, model, tokens and latency."
    )
    async def record_invocation(
        self,
        info: Info,
        input: Annotated[RecordInvocationInput, strawberry.argument(description="The model call.")],
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
                latency_ms=input.latency_ms,
            )
        return RecordInvocationPayload(invocation=InvocationType(row=invocation))
