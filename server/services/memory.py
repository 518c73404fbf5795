"""The native memory tools: add_memory, read_memory, delete_memory (R10-R14, R20-R26, R31).

Each call is an execution of the native tool of its name (R26), recorded with
its input and output. A call the configuration does not allow fails with a
message the agent can read and changes no memory (R24); the failed execution is
still recorded, so the transcript shows what was tried. What a call writes is
:mod:`server.services.memory_write`'s.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.record_fields import check_content, check_summary
from server.domain.visibility import Purpose
from server.embedding import Embedder
from server.errors import BadInputError, NotAllowedError
from server.models import Execution
from server.services import tools
from server.services.memory_versions import MemoryItem, reach_record
from server.services.memory_write import (
    check_new_record,
    delete_record,
    embedded_text,
    write_record,
)
from server.services.tools import CallRef, run_tool
from server.services.turn_scope import TurnScope, ensure_memory_enabled

# the memory tools' result: the execution and the records its output names
ToolResult: TypeAlias = tools.ToolResult[MemoryItem]


def _require_tool(scope: TurnScope, name: str, *, writes: bool) -> None:
    ensure_memory_enabled(scope)
    if not scope.config.memory.allows_tool(name):
        raise NotAllowedError(
            f"{name} is not offered to this agent (harness.memory.tools)", tool=name
        )
    if writes and scope.read_only:
        raise NotAllowedError(
            f"a {scope.caller.kind} may search memory but never write it; only the agent "
            "itself changes memory",
            tool=name,
        )


async def add_memory(
    db: AsyncSession,
    embedder: Embedder,
    *,
    ref: CallRef,
    summary: str,
    content: str | None = None,
    kind: str | None = None,
    labels: object = None,
    scope: str | None = None,
    pinned: bool = False,
    replaces: uuid.UUID | None = None,
) -> ToolResult:
    """Save a record; with ``replaces`` the named record becomes SUPERSEDED (R20-R22)."""
    args: dict[str, Any] = {
        "summary": summary,
        "content": content,
        "kind": kind,
        "labels": labels,
        "scope": scope,
        "pinned": pinned,
        "replaces": str(replaces) if replaces else None,
    }

    async def body(ts: TurnScope, execution: Execution) -> list[MemoryItem]:
        _require_tool(ts, "add_memory", writes=True)
        fields = check_new_record(
            ts, summary=summary, content=content, kind=kind, labels=labels, scope=scope
        )

        async def vector() -> list[float]:
            return (await embedding)[0]

        return await write_record(
            db, ts, execution, ref, fields, vector=vector, pinned=pinned, replaces=replaces
        )

    # The vector is needed whenever the call succeeds: its forward pass runs while the
    # turn is locked and the execution written, not after.
    try:
        text = check_summary(summary)
        forward = embedder.embed_one(embedded_text(text, check_content(content)))
    except BadInputError:
        forward = _refused()  # the body refuses such input before it needs a vector
    embedding = asyncio.ensure_future(forward)
    try:
        # a new record refuses only before it writes; a replacement may after (CONFLICT)
        return await run_tool(
            db,
            ref=ref,
            name="add_memory",
            input=args,
            output_key="memories",
            body=body,
            atomic=replaces is not None,
        )
    finally:
        if not embedding.done():
            embedding.cancel()  # refused before it was needed
        elif not embedding.cancelled():
            embedding.exception()  # looked at, whether or not the body got that far


async def _refused() -> tuple[list[float], int]:
    raise AssertionError("a refused add_memory has no vector")


async def read_memory(db: AsyncSession, *, ref: CallRef, record_id: uuid.UUID) -> ToolResult:
    """Read one record, whatever its status (R14); helpers may read too (R23)."""

    async def read(ts: TurnScope, execution: Execution) -> MemoryItem:
        record, version, _ = await reach_record(db, ts, record_id, purpose=Purpose.READ)
        return MemoryItem(record=record, version=version)

    return await _on_record(
        db, ref, "read_memory", record_id, output_key="sources", writes=False, act=read
    )


async def delete_memory(db: AsyncSession, *, ref: CallRef, record_id: uuid.UUID) -> ToolResult:
    """Delete one record within the written scopes; in preview, write a DELETED preview
    record naming it instead (R21, R22)."""

    async def delete(ts: TurnScope, execution: Execution) -> MemoryItem:
        return await delete_record(db, ts, execution, ref, record_id)

    return await _on_record(
        db, ref, "delete_memory", record_id, output_key="memories", writes=True, act=delete
    )


async def _on_record(
    db: AsyncSession,
    ref: CallRef,
    name: str,
    record_id: uuid.UUID,
    *,
    output_key: Literal["memories", "sources"],
    writes: bool,
    act: Callable[[TurnScope, Execution], Awaitable[MemoryItem]],
) -> ToolResult:
    """The tool ``name`` run on the one record its input names."""

    async def body(ts: TurnScope, execution: Execution) -> list[MemoryItem]:
        _require_tool(ts, name, writes=writes)
        return [await act(ts, execution)]

    return await run_tool(
        db,
        ref=ref,
        name=name,
        input={"id": str(record_id)},
        output_key=output_key,
        body=body,
        writes=writes,
    )
