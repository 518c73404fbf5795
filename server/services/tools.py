"""How a native tool call is recorded (R25, R26, R43, R63).

Every native tool (add_memory, read_memory, delete_memory, search_memory,
search_history, and a recorded recall) runs through :func:`record_tool`: an
execution of the calling execution with its input and output, a ``tool.result``
transcript event, or, refused, a failed execution with a ``tool.error`` event.
What reached the model is recorded as RETRIEVED output uses
(:func:`record_retrieved`) and each query embedding as ``embed`` usage that no
limit counts (:func:`record_embed`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Generic, Literal, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from server.embedding import Embedder, default_model_path
from server.errors import DomainError, NotFoundError
from server.models import Execution, Invocation
from server.services.tool_ledger import Ledger, close_call, gathering, open_ledger, record_now
from server.services.transcript import start_execution
from server.services.turn_scope import TurnScope, open_scope

T = TypeVar("T")
DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2"


class Item(Protocol):
    """What a listing tool returns, one entry of its output each."""

    def to_json(self) -> dict[str, Any]: ...


I = TypeVar("I", bound=Item)  # noqa: E741


@dataclass(frozen=True, slots=True)
class CallRef:
    """Where a tool call comes from: its turn, the calling execution, the model call."""

    turn_id: uuid.UUID
    caller_execution_id: uuid.UUID | None = None
    invocation_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class ToolResult(Generic[I]):
    """A listing tool's execution and the items its output lists."""

    execution: Execution
    items: list[I]


async def open_call(db: AsyncSession, ref: CallRef) -> TurnScope:
    """The call's turn scope (:func:`server.services.turn_scope.open_scope`), and its
    invocation, which must be a model call of the calling execution."""
    scope = await open_scope(db, turn_id=ref.turn_id, caller_execution_id=ref.caller_execution_id)
    if ref.invocation_id is not None:
        invocation = await db.get(Invocation, ref.invocation_id)
        if invocation is None or invocation.execution_id != scope.caller.id:
            raise NotFoundError(
                f"no invocation {ref.invocation_id} in the calling execution", field="invocationId"
            )
    return scope


async def record_tool(
    db: AsyncSession,
    *,
    ref: CallRef,
    name: str,
    input: dict[str, Any],
    body: Callable[[TurnScope, Execution], Awaitable[T]],
    output: Callable[[T], dict[str, Any]],
    scope: TurnScope | None = None,
    writes: bool = True,
    atomic: bool | None = None,
) -> tuple[Execution, T]:
    """Run a native tool as an execution of the calling execution (R25, R43, R63).

    ``scope``: the call's scope when the caller opened it already (:func:`open_call`).
    ``body``'s result, through ``output``, is the execution's output and the
    ``tool.result`` event's payload. What the call records (its usage, its RETRIEVED
    uses, its event, its execution) is written in one statement when it ends
    (:mod:`server.services.tool_ledger`). ``writes``: ``body`` writes rows that name
    the execution (memory versions), so the execution's row is inserted first.
    ``atomic`` (by default ``writes``): ``body`` may refuse after it wrote, so it runs
    in a savepoint; a body that refuses only before writing needs none. A refusal (a
    :class:`DomainError`) changes nothing of ``body``'s, is recorded as a failed
    execution with a ``tool.error`` event, committed, and raised.
    """
    if scope is None:
        scope = await open_call(db, ref)
    if writes:
        execution = await start_execution(
            db, turn=scope.turn, kind="tool", name=name, parent_id=scope.caller.id, input=input
        )
    else:
        execution = Execution(
            id=uuid.uuid4(),
            agent_id=scope.turn.agent_id,
            turn_id=scope.turn.id,
            parent_id=scope.caller.id,
            kind="tool",
            name=name,
            status="running",
            input=input,
        )
    ledger = Ledger(execution, inserted=writes, started_at=scope.started_at)

    def event(type: str, payload: dict[str, Any]) -> None:
        ledger.events.append(
            {"type": type, "payload": payload, "execution_id": execution.id, "tool_name": name}
        )

    with gathering(db, ledger):
        try:
            if writes if atomic is None else atomic:
                async with db.begin_nested():
                    value = await body(scope, execution)
            else:
                value = await body(scope, execution)
        except DomainError as exc:
            ledger.discard()
            event("tool.error", {"error": exc.message, "code": exc.code})
            await close_call(db, ledger, status="failed", error=exc.message)
            await db.commit()
            raise
        result = output(value)
        event("tool.result", result)
        ended = await close_call(db, ledger, status="succeeded", output=result)
    return ended, value


async def run_tool(
    db: AsyncSession,
    *,
    ref: CallRef,
    name: str,
    input: dict[str, Any],
    output_key: Literal["memories", "sources", "records"],
    body: Callable[[TurnScope, Execution], Awaitable[list[I]]],
    more_output: Callable[[], dict[str, Any]] | None = None,
    scope: TurnScope | None = None,
    writes: bool = True,
    atomic: bool | None = None,
) -> ToolResult[I]:
    """A listing tool (:func:`record_tool`): the output lists the items ``body`` returns
    under ``output_key``, plus what ``more_output`` (called after ``body``) adds, such as
    a page's cursor."""

    def output(items: list[I]) -> dict[str, Any]:
        return {
            output_key: [item.to_json() for item in items],
            **(more_output() if more_output is not None else {}),
        }

    execution, items = await record_tool(
        db,
        ref=ref,
        name=name,
        input=input,
        body=body,
        output=output,
        scope=scope,
        writes=writes,
        atomic=atomic,
    )
    return ToolResult(execution=execution, items=items)


def model_label(embedder: Embedder) -> str:
    """The model's name, never the server's file path."""
    return _label(embedder.model_name)


@functools.cache
def _label(model_name: str) -> str:
    if model_name == default_model_path():
        return DEFAULT_MODEL_LABEL
    return PurePath(model_name).name or model_name


async def record_embed(
    db: AsyncSession, scope: TurnScope, execution: Execution, embedder: Embedder, tokens: int
) -> None:
    """A query's embedding as ``embed`` usage, which no limit counts (R43): an
    invocation and its ``usage`` event, written with the call's other records when
    ``execution`` is a running call's (:mod:`server.services.tool_ledger`), else now."""
    model = model_label(embedder)
    invocation = uuid.uuid4()
    ledger = open_ledger(db, execution.id)
    now = ledger is None
    if ledger is None:
        ledger = Ledger(execution, inserted=True)
    ledger.invocations.append(
        {
            "id": str(invocation),
            "purpose": "embed",
            "model": model,
            "input_tokens": tokens,
            "counted": False,
        }
    )
    ledger.events.append(
        {
            "type": "usage",
            "execution_id": execution.id,
            # named, and valued, as the Invocation type shows them
            "payload": {
                "purpose": "EMBED",
                "model": model,
                "inputTokens": tokens,
                "invocationId": str(invocation),
                "counted": False,
            },
        }
    )
    if now:
        await record_now(db, ledger)


async def record_found(
    db: AsyncSession,
    scope: TurnScope,
    execution: Execution,
    embedder: Embedder,
    *,
    tokens: int | None,
    versions: Sequence[uuid.UUID],
) -> None:
    """What a memory search's call used: the query's embedding as ``embed`` usage when
    one was made (``tokens``), and the versions it returned as RETRIEVED (R43)."""
    if tokens is not None:
        await record_embed(db, scope, execution, embedder, tokens)
    await record_retrieved(db, scope, execution, versions=versions)


async def record_retrieved(
    db: AsyncSession,
    scope: TurnScope,
    execution: Execution,
    *,
    versions: Sequence[uuid.UUID] = (),
    parts: Sequence[tuple[int, uuid.UUID]] = (),
) -> None:
    """RETRIEVED output uses: what the execution's output put before the model (R43,
    R63). ``versions`` are record versions in rank order; ``parts`` are history parts with
    the rank of the result they belong to (an event read whole gives all its parts).
    Written with the call's other records (:mod:`server.services.tool_ledger`), or now
    when ``execution`` is not a running call's."""
    targets = [
        {"memory_version_id": str(v), "rank": rank} for rank, v in enumerate(versions, start=1)
    ]
    targets += [{"history_part_id": str(p), "rank": rank} for rank, p in parts]
    if not targets:
        return
    ledger = open_ledger(db, execution.id)
    if ledger is not None:
        ledger.uses.extend(targets)
        return
    ledger = Ledger(execution, inserted=True, uses=targets)
    await record_now(db, ledger)
