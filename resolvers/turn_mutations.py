"""The runtime's turn mutations: open a turn, then end it by commit, rollback or failure.

Each runs its service call once per ``idempotencyKey`` (:mod:`resolvers.idempotent`),
in one transaction, and shows the turn's rows as the call wrote them or, on a replay,
reloaded.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession

from resolvers.context import Info
from resolvers.idempotent import once_shown
from resolvers.types.base import MutationResult, idempotency_key
from resolvers.types.turns import ExecutionType, TurnType
from server import models
from server.services import commit, turns
from server.services.lookup import get
from server.services.pins import PinnedEntry


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
    idempotency_key: str | None = idempotency_key()

    def __post_init__(self) -> None:
        if self.preview is None:
            self.preview = False


@strawberry.input(description="The turn to commit.")
class CommitTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="The turn to roll back.")
class RollbackTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="The turn to end as failed.")
class FailTurnInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    error: str | None = strawberry.field(
        default=None, description="What went wrong, shown as the turn's error; null: none."
    )
    idempotency_key: str | None = idempotency_key()


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


@strawberry.type(description="The turn committed.")
class CommitTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now committed.")


@strawberry.type(description="The turn rolled back.")
class RollbackTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now rolled back.")


@strawberry.type(description="The turn failed.")
class FailTurnPayload(MutationResult):
    turn: TurnType = strawberry.field(description="The turn, now failed.")


def _pinned_json(pinned: list[PinnedEntry]) -> list[dict[str, str]]:
    return [
        {
            "record_id": str(p.record_id),
            "version_id": str(p.version_id),
            "summary": p.summary,
            "line": p.line,
        }
        for p in pinned
    ]


def _pinned(stored: list[dict[str, str]]) -> list[PinnedMemory]:
    return [
        PinnedMemory(
            record_id=uuid.UUID(p["record_id"]),
            version_id=uuid.UUID(p["version_id"]),
            summary=p["summary"],
            line=p["line"],
        )
        for p in stored
    ]


async def _closed(
    info: Info,
    operation: str,
    input: CommitTurnInput | RollbackTurnInput | FailTurnInput,
    call: Callable[[AsyncSession], Awaitable[models.Turn]],
) -> TurnType:
    """The turn ``call`` ends, once per key: the row as the call wrote it, or, on a
    replay, read again."""
    db = info.context.db

    async def run() -> tuple[models.Turn, dict[str, Any]]:
        turn = await call(db)
        return turn, {"turn": str(turn.id)}

    async def reload(result: dict[str, Any]) -> models.Turn:
        return await get(db, models.Turn, uuid.UUID(result["turn"]), fresh=True)

    turn, _ = await once_shown(info, operation, input, run, reload)
    return TurnType(row=turn)


@strawberry.type
class TurnMutation:
    @strawberry.mutation(
        # R30
        description="Open a turn, and return its instructions: the pinned records, for the "
        "model's context."
    )
    async def begin_turn(
        self,
        info: Info,
        input: Annotated[BeginTurnInput, strawberry.argument(description="The turn to open.")],
    ) -> BeginTurnPayload:
        db = info.context.db

        async def run() -> tuple[tuple[models.Turn, models.Execution], dict[str, Any]]:
            begun = await turns.begin_turn(
                db,
                session_id=input.session_id,
                agent_id=input.agent_id,
                agent_version_id=input.agent_version_id,
                preview=bool(input.preview),
                replay_of=input.replay_of,
                retry_of=input.retry_of,
            )
            return (begun.turn, begun.execution), {
                "turn": str(begun.turn.id),
                "execution": str(begun.execution.id),
                "pinned": _pinned_json(begun.pinned),
                "notes": begun.notes,
            }

        async def reload(result: dict[str, Any]) -> tuple[models.Turn, models.Execution]:
            turn = await get(db, models.Turn, uuid.UUID(result["turn"]))
            return turn, await get(db, models.Execution, uuid.UUID(result["execution"]))

        (turn, execution), result = await once_shown(info, "beginTurn", input, run, reload)
        info.context.acting_turn = turn.id  # its answer shows the turn it began
        return BeginTurnPayload(
            turn=TurnType(row=turn),
            execution=ExecutionType(row=execution),
            pinned=_pinned(result["pinned"]),
            notes=list(result.get("notes", [])),
        )

    @strawberry.mutation(
        # R12
        description="End the turn and publish its memory: what it wrote becomes visible to "
        "later turns and readers."
    )
    async def commit_turn(
        self,
        info: Info,
        input: Annotated[CommitTurnInput, strawberry.argument(description="The turn.")],
    ) -> CommitTurnPayload:
        turn = await _closed(
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
        self,
        info: Info,
        input: Annotated[RollbackTurnInput, strawberry.argument(description="The turn.")],
    ) -> RollbackTurnPayload:
        turn = await _closed(
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
        self,
        info: Info,
        input: Annotated[
            FailTurnInput, strawberry.argument(description="The turn, and its error.")
        ],
    ) -> FailTurnPayload:
        turn = await _closed(
            info,
            "failTurn",
            input,
            lambda db: turns.fail_turn(db, turn_id=input.turn_id, error=input.error),
        )
        return FailTurnPayload(turn=turn)
