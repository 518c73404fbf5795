"""Deleting a memory record through the API (R71).

Whoever deletes through the API (a dashboard, an operator's tool) removes the
record from recall, search and the pinned list: its status becomes DELETED,
and, as a tool's deletion does (R21, R25), the deletion is a new version of
status DELETED, so every reader of the version in force (``read_memory``, the
record listings, ``agentMemory`` and its history) says DELETED. An API call has
no execution, turn or agent version: the version's provenance is the deletion
instead, kept in ``memory_deletions`` (the principal, the caller, the time).
The record and every version stay readable. A record an open turn is changing cannot be deleted
until that turn ends (CONFLICT); a record not yet committed does not exist
for the API (R12).
"""

from __future__ import annotations

import uuid

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.errors import ConflictError, NotFoundError
from server.models import MemoryDeletion, MemoryRecord, MemoryVersion
from server.services.memory_versions import VERSION_TEXT, next_version_number
from server.storage.owners import by_agent, of_agent


async def delete_record(
    db: AsyncSession, *, record_id: uuid.UUID, principal_id: uuid.UUID | None, caller: str
) -> MemoryRecord:
    record = await db.get(
        MemoryRecord,
        record_id,
        with_for_update=True,
        options=await by_agent(db, MemoryRecord, record_id),
    )
    if record is None or not record.committed:
        raise NotFoundError(f"no memory record with id {record_id}")
    if record.pending_turn_id is not None:
        raise ConflictError(
            f"memory record {record_id} is being changed by an open turn; retry when it ends"
        )
    if record.status != "ACTIVE":
        raise ConflictError(f"memory record {record_id} is {record.status}, not ACTIVE")
    deletion = MemoryDeletion(
        agent_id=record.agent_id, record_id=record.id, principal_id=principal_id, caller=caller
    )
    db.add(deletion)
    await db.flush()
    current = await db.get(
        MemoryVersion, record.current_version_id, options=of_agent(MemoryVersion, record.agent_id)
    )
    assert current is not None
    version = MemoryVersion(
        # one id for the deletion and its version, as migration 0007 gives it to the
        # deletions it carries: a round trip below 0007 gives both back the same
        id=deletion.id,
        record_id=record.id,
        agent_id=record.agent_id,
        number=await next_version_number(db, record.id, agent_id=record.agent_id),
        status="DELETED",
        deletion_id=deletion.id,
        created_at=deletion.created_at,  # one time for the deletion (migration 0007)
        **{key: getattr(current, key) for key in VERSION_TEXT},
    )
    db.add(version)
    await db.flush()
    deleted = await db.scalar(
        update(MemoryRecord)
        .where(col(MemoryRecord.id) == record.id, col(MemoryRecord.agent_id) == record.agent_id)
        .values(status="DELETED", current_version_id=version.id)
        .returning(MemoryRecord)
        .execution_options(populate_existing=True, synchronize_session=False)
    )
    assert deleted is not None
    return deleted
