"""Writing memory in a turn: a new record's fields checked against the agent's
configuration, the record written (replacing another, R20-R22, R31), and a record
deleted (in preview, named by a DELETED preview record instead)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.record_fields import check_content, check_summary
from server.domain.visibility import Purpose
from server.errors import BadInputError, ConflictError, NotAllowedError
from server.models import Execution, MemoryRecord, MemoryVersion
from server.services.memory_versions import MemoryItem, change_status, new_version, reach_record
from server.services.pins import check_pin_budget
from server.services.tools import CallRef
from server.services.turn_scope import TurnScope
from server.storage.owners import remember


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
        old = await reach_record(db, ts, replaces, purpose=Purpose.CHANGE)
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
    version_id = uuid.uuid4()
    record = MemoryRecord(
        id=record_id,
        agent_id=ts.turn.agent_id,
        session_id=ts.turn.session_id,
        scope=fields.scope,
        preview=ts.turn.preview,
        pinned=pinned,
        replaces_id=replaces,
        turn_id=ts.turn.id,
        current_version_id=version_id,
    )
    version = new_version(
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
        id=version_id,
    )
    db.add_all([record, version])  # one flush: the record, then its version
    await db.flush()
    remember(db, record.id, record.agent_id)
    remember(db, version.id, record.agent_id)
    items = [MemoryItem(record=record, version=version)]
    if old is not None and (old[0].preview or not ts.turn.preview):
        items.append(
            await change_status(
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


async def delete_record(
    db: AsyncSession, ts: TurnScope, execution: Execution, ref: CallRef, record_id: uuid.UUID
) -> MemoryItem:
    """Delete one record within the written scopes; in preview, write a DELETED preview
    record naming it instead (R21, R22)."""
    record, version, status = await reach_record(db, ts, record_id, purpose=Purpose.CHANGE)
    if status != "ACTIVE":
        raise ConflictError(f"memory record {record_id} is {status}, not ACTIVE")
    if record.preview or not ts.turn.preview:
        return await change_status(
            db, ts, execution, ref, record=record, version=version, status="DELETED"
        )
    version_id = uuid.uuid4()
    marker = MemoryRecord(
        agent_id=ts.turn.agent_id,
        session_id=ts.turn.session_id,
        scope=record.scope,
        status="DELETED",
        preview=True,
        replaces_id=record.id,
        turn_id=ts.turn.id,
        current_version_id=version_id,
    )
    new = new_version(
        ts, execution, ref, record=marker, number=1, status="DELETED", like=version, id=version_id
    )
    db.add_all([marker, new])  # one flush: the record, then its version
    await db.flush()
    return MemoryItem(record=marker, version=new)
