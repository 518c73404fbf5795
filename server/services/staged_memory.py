"""A turn's staged memory: published when the turn commits, removed when it rolls
back or fails (R12)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, case, delete, null, or_, true, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.models import MemoryRecord, MemoryVersion
from server.services.transcript import AS_WRITTEN
from server.storage.built import built_once

# what a record changed by an open turn keeps to undo the change: cleared when the
# turn ends, whichever way
_STAGING = ("pending_turn_id", "prior_status", "prior_version_id")


@built_once
def _publishing() -> Any:
    """The records the turn (parameter ``turn``) wrote are committed, those it changed
    released: one statement."""
    wrote = col(MemoryRecord.turn_id) == bindparam("turn")
    changed = col(MemoryRecord.pending_turn_id) == bindparam("turn")
    return (
        update(MemoryRecord)
        .where(col(MemoryRecord.agent_id) == bindparam("agent"), or_(wrote, changed))
        .values(
            committed=case((wrote, true()), else_=col(MemoryRecord.committed)),
            **{
                name: case((changed, null()), else_=col(getattr(MemoryRecord, name)))
                for name in _STAGING
            },
        )
        .execution_options(**AS_WRITTEN, synchronize_session="fetch")
    )


async def publish_staged(db: AsyncSession, *, turn_id: uuid.UUID, agent_id: uuid.UUID) -> None:
    """Commit the records the turn wrote and release those it changed (R12)."""
    await db.execute(_publishing(), {"turn": turn_id, "agent": agent_id})


async def discard_staged(db: AsyncSession, *, turn_id: uuid.UUID, agent_id: uuid.UUID) -> None:
    """Undo what an open turn staged: restore changed records, remove new rows (R12)."""
    changed = col(MemoryRecord.pending_turn_id) == turn_id
    await db.execute(
        update(MemoryRecord)
        .where(col(MemoryRecord.agent_id) == agent_id, changed)
        .values(
            status=MemoryRecord.prior_status,
            current_version_id=MemoryRecord.prior_version_id,
            replaced_by_id=None,
            **dict.fromkeys(_STAGING),
        )
    )
    await db.execute(
        delete(MemoryVersion).where(
            col(MemoryVersion.agent_id) == agent_id, col(MemoryVersion.turn_id) == turn_id
        )
    )
    await db.execute(
        delete(MemoryRecord).where(
            col(MemoryRecord.agent_id) == agent_id,
            col(MemoryRecord.turn_id) == turn_id,
            col(MemoryRecord.committed).is_(False),
        )
    )
