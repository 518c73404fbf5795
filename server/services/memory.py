"""The native memory tools: add_memory, read_memory, delete_memory (R10-R14, R20-R26, R31).

Each call is an execution of the native tool of its name (R26), recorded with
its input and output. A call the configuration does not allow fails with a
message the agent can read and changes no memory (R24); the failed execution is
still recorded, so the transcript shows what was tried.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import check_content, check_summary
from server.domain.visibility import Purpose, version_in_force
from server.embedding import Embedder
from server.errors import BadInputError, ConflictError, NotAllowedError, NotFoundError
from server.models import Execution, MemoryRecord, MemoryVersion
from server.services import tools
from server.services.pins import check_pin_budget
from server.services.tools import CallRef, run_tool
from server.services.turn_scope import TurnScope, ensure_memory_enabled
from server.storage.gate import effective_status, record_condition

# what a status change's version keeps of the version it follows
VERSION_TEXT = ("summary", "content", "kind", "labels", "embedding")


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """A record as a tool's output names it."""

    record: MemoryRecord
    version: MemoryVersion

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.record.id),
            "version": str(self.version.id),
            "status": self.version.status,
            "scope": self.record.scope,
            "kind": self.version.kind,
            "summary": self.version.summary,
            "preview": self.record.preview,
        }


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


async def _target(
    db: AsyncSession, scope: TurnScope, record_id: uuid.UUID, *, purpose: Purpose
) -> tuple[MemoryRecord, MemoryVersion, str]:
    """A record the reader may see for ``purpose``, with its current version and status."""
    row = (
        await db.execute(
            select(MemoryRecord, effective_status(scope.reader))
            .where(
                col(MemoryRecord.id) == record_id, record_condition(scope.reader, purpose=purpose)
            )
            .with_for_update(of=MemoryRecord)
        )
    ).first()
    if row is None:
        if purpose is Purpose.CHANGE and await _readable(db, scope, record_id):
            # R21, R24: the agent sees the record, so say why it may not change it.
            raise NotAllowedError(
                f"memory record {record_id} is in a scope this agent reads but does not "
                "write (harness.memory.scope.write); it cannot be replaced or deleted"
            )
        raise NotFoundError(f"no memory record {record_id} that this agent can reach")
    record, status = row
    version = await db.get(MemoryVersion, version_in_force(scope.reader, record))
    assert version is not None
    return record, version, status


async def _readable(db: AsyncSession, scope: TurnScope, record_id: uuid.UUID) -> bool:
    found = await db.scalar(
        select(col(MemoryRecord.id)).where(
            col(MemoryRecord.id) == record_id,
            record_condition(scope.reader, purpose=Purpose.READ),
        )
    )
    return found is not None


def _new_version(
    scope: TurnScope,
    execution: Execution,
    ref: CallRef,
    *,
    record: MemoryRecord,
    number: int,
    status: str,
    like: MemoryVersion | None = None,
    **fields: Any,
) -> MemoryVersion:
    if like is not None:
        for key in VERSION_TEXT:
            fields.setdefault(key, getattr(like, key))
    return MemoryVersion(
        record_id=record.id,
        agent_id=record.agent_id,
        number=number,
        status=status,
        execution_id=execution.id,
        invocation_id=ref.invocation_id,
        agent_version_id=scope.version.id,
        session_id=scope.turn.session_id,
        turn_id=scope.turn.id,
        **fields,
    )


async def _change_status(
    db: AsyncSession,
    scope: TurnScope,
    execution: Execution,
    ref: CallRef,
    *,
    record: MemoryRecord,
    version: MemoryVersion,
    status: str,
    replaced_by: uuid.UUID | None = None,
) -> MemoryItem:
    """Stage a status change of a record this turn may change (R12, R21, R22)."""
    number = await next_version_number(db, record.id)
    new = _new_version(
        scope, execution, ref, record=record, number=number, status=status, like=version
    )
    db.add(new)
    await db.flush()
    staged_here = record.pending_turn_id == scope.turn.id
    changed = await db.execute(
        update(MemoryRecord)
        .where(
            col(MemoryRecord.id) == record.id,
            col(MemoryRecord.status) == "ACTIVE",
            (MemoryRecord.pending_turn_id == scope.turn.id)
            if staged_here  # type: ignore[arg-type]
            else col(MemoryRecord.pending_turn_id).is_(None),
        )
        .values(
            status=status,
            replaced_by_id=replaced_by,
            current_version_id=new.id,
            pending_turn_id=scope.turn.id,
            prior_status=record.prior_status if staged_here else record.status,
            prior_version_id=record.prior_version_id if staged_here else record.current_version_id,
        )
        .execution_options(synchronize_session=False)
    )
    if changed.rowcount != 1:  # type: ignore[attr-defined]
        raise ConflictError(f"memory record {record.id} was changed by another turn")
    await db.refresh(record)
    return MemoryItem(record=record, version=new)


async def next_version_number(db: AsyncSession, record_id: uuid.UUID) -> int:
    last = await db.scalar(
        select(func.max(col(MemoryVersion.number))).where(col(MemoryVersion.record_id) == record_id)
    )
    return int(last or 0) + 1


def _scope_for(scope: TurnScope, requested: str | None) -> str:
    """R20: session unless the agent asks for agent, which needs agent in scope.write."""
    writes = scope.config.memory.write_scopes
    if requested is None:
        choice = "session" if "session" in writes else "agent"
    else:
        choice = requested.lower()
        if choice not in ("session", "agent"):
            raise BadInputError("scope must be SESSION or AGENT", field="scope")
    if choice not in writes:
        raise NotAllowedError(
            f"this agent does not write {choice} scope (harness.memory.scope.write)", field="scope"
        )
    if choice == "session" and scope.turn.session_id is None:
        raise NotAllowedError("an agent without sessions has no session scope", field="scope")
    return choice.upper()


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A new record's fields, checked against the agent's configuration (R3, R4, R20)."""

    summary: str
    content: str | None
    kind: str
    labels: dict[str, str]
    scope: str

    @property
    def text(self) -> str:
        return embedded_text(self.summary, self.content)


def embedded_text(summary: str, content: str | None) -> str:
    """What a version's vector is of: the summary, then the content."""
    return f"{summary}\n{content}" if content else summary


def check_new_record(
    ts: TurnScope,
    *,
    summary: str,
    content: str | None,
    kind: str | None,
    labels: object,
    scope: str | None,
) -> NewRecord:
    """A record's fields as add_memory takes them, or the refusal the agent reads (R24)."""
    memory = ts.config.memory
    return NewRecord(
        check_summary(summary),
        check_content(content),
        memory.check_kind(kind or memory.kinds[0]),
        memory.check_labels(labels),
        _scope_for(ts, scope),
    )


async def write_record(
    db: AsyncSession,
    ts: TurnScope,
    execution: Execution,
    ref: CallRef,
    fields: NewRecord,
    *,
    vector: Callable[[], Awaitable[list[float]]],
    pinned: bool = False,
    replaces: uuid.UUID | None = None,
) -> list[MemoryItem]:
    """Write a new record in the turn; with ``replaces`` the named record becomes
    SUPERSEDED by it, or, from a preview turn, is named by it (R20-R22, R31)."""
    old: tuple[MemoryRecord, MemoryVersion, str] | None = None
    if replaces is not None:
        old = await _target(db, ts, replaces, purpose=Purpose.CHANGE)
        if old[2] != "ACTIVE":
            raise ConflictError(
                f"memory record {replaces} is {old[2]}, not ACTIVE; only an active record "
                "can be replaced",
                field="replaces",
            )
    record_id = uuid.uuid4()
    if pinned:
        await check_pin_budget(
            db,
            reader=ts.reader,
            max_tokens=ts.config.memory.pinned_max_tokens,
            summary=fields.summary,
            record_id=record_id,
            dropping=old[0].id if old and old[0].pinned else None,
        )
    embedded = await vector()
    record = MemoryRecord(
        id=record_id,
        agent_id=ts.turn.agent_id,
        session_id=ts.turn.session_id,
        scope=fields.scope,
        preview=ts.turn.preview,
        pinned=pinned,
        replaces_id=replaces,
        turn_id=ts.turn.id,
    )
    db.add(record)
    await db.flush()
    version = _new_version(
        ts,
        execution,
        ref,
        record=record,
        number=1,
        status="ACTIVE",
        summary=fields.summary,
        content=fields.content,
        kind=fields.kind,
        labels=fields.labels,
        embedding=embedded,
    )
    db.add(version)
    await db.flush()
    record.current_version_id = version.id
    await db.flush()
    items = [MemoryItem(record=record, version=version)]
    if old is not None and (old[0].preview or not ts.turn.preview):
        items.append(
            await _change_status(
                db,
                ts,
                execution,
                ref,
                record=old[0],
                version=old[1],
                status="SUPERSEDED",
                replaced_by=record.id,
            )
        )
    return items


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
        forward = embedder.embed_one(f"{text}\n{content}" if check_content(content) else text)
    except BadInputError:
        forward = _refused()  # the body refuses such input before it needs a vector
    embedding = asyncio.ensure_future(forward)
    try:
        return await run_tool(
            db, ref=ref, name="add_memory", input=args, output_key="memories", body=body
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

    async def body(ts: TurnScope, execution: Execution) -> list[MemoryItem]:
        _require_tool(ts, "read_memory", writes=False)
        record, version, _ = await _target(db, ts, record_id, purpose=Purpose.READ)
        return [MemoryItem(record=record, version=version)]

    return await run_tool(
        db,
        ref=ref,
        name="read_memory",
        input={"id": str(record_id)},
        output_key="sources",
        body=body,
    )


async def delete_memory(db: AsyncSession, *, ref: CallRef, record_id: uuid.UUID) -> ToolResult:
    """Delete one record within the written scopes; in preview, write a DELETED preview
    record naming it instead (R21, R22)."""

    async def body(ts: TurnScope, execution: Execution) -> list[MemoryItem]:
        _require_tool(ts, "delete_memory", writes=True)
        return [await delete_record(db, ts, execution, ref, record_id)]

    return await run_tool(
        db,
        ref=ref,
        name="delete_memory",
        input={"id": str(record_id)},
        output_key="memories",
        body=body,
    )


async def delete_record(
    db: AsyncSession, ts: TurnScope, execution: Execution, ref: CallRef, record_id: uuid.UUID
) -> MemoryItem:
    """Delete one record within the written scopes; in preview, write a DELETED preview
    record naming it instead (R21, R22)."""
    record, version, status = await _target(db, ts, record_id, purpose=Purpose.CHANGE)
    if status != "ACTIVE":
        raise ConflictError(f"memory record {record_id} is {status}, not ACTIVE")
    if record.preview or not ts.turn.preview:
        return await _change_status(
            db, ts, execution, ref, record=record, version=version, status="DELETED"
        )
    marker = MemoryRecord(
        agent_id=ts.turn.agent_id,
        session_id=ts.turn.session_id,
        scope=record.scope,
        status="DELETED",
        preview=True,
        replaces_id=record.id,
        turn_id=ts.turn.id,
    )
    db.add(marker)
    await db.flush()
    new = _new_version(ts, execution, ref, record=marker, number=1, status="DELETED", like=version)
    db.add(new)
    await db.flush()
    marker.current_version_id = new.id
    await db.flush()
    return MemoryItem(record=marker, version=new)
