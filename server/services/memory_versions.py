"""A memory record as a turn reaches it, and the versions a turn stages on it.

A record is reached only through the reader's gate (:mod:`server.storage.gate`);
every change of a record is a new version, staged by the turn (R12, R21, R22) and
carrying its provenance: the execution, model call, agent version, session and turn
that wrote it (R26).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.visibility import Purpose, version_in_force
from server.errors import ConflictError, NotAllowedError, NotFoundError
from server.models import Execution, MemoryRecord, MemoryVersion
from server.services.tools import CallRef
from server.services.turn_scope import TurnScope
from server.storage.gate import effective_status, record_condition
from server.storage.owners import of_agent

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


async def reach_record(
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
    version = await db.get(
        MemoryVersion,
        version_in_force(scope.reader, record),
        options=of_agent(MemoryVersion, record.agent_id),
    )
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


def new_version(
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


async def change_status(
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
    number = await next_version_number(db, record.id, agent_id=record.agent_id)
    new = new_version(
        scope, execution, ref, record=record, number=number, status=status, like=version
    )
    db.add(new)
    await db.flush()
    staged_here = record.pending_turn_id == scope.turn.id
    changed: MemoryRecord | None = await db.scalar(
        update(MemoryRecord)
        .where(
            col(MemoryRecord.id) == record.id,
            col(MemoryRecord.agent_id) == record.agent_id,
            col(MemoryRecord.status) == "ACTIVE",
            col(MemoryRecord.pending_turn_id) == scope.turn.id
            if staged_here
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
        .returning(MemoryRecord)  # read back into ``record`` in the same statement
        .execution_options(populate_existing=True, synchronize_session=False)
    )
    if changed is None:
        raise ConflictError(f"memory record {record.id} was changed by another turn")
    return MemoryItem(record=changed, version=new)


async def next_version_number(
    db: AsyncSession, record_id: uuid.UUID, *, agent_id: uuid.UUID
) -> int:
    last = await db.scalar(
        select(func.max(col(MemoryVersion.number))).where(
            col(MemoryVersion.agent_id) == agent_id, col(MemoryVersion.record_id) == record_id
        )
    )
    return int(last or 0) + 1
