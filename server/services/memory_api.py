"""Deleting a memory record through the API (R71).

Whoever deletes through the API (a dashboard, an operator's tool) removes the
record from recall, search and the pinned list: its status becomes DELETED.
The record and every version stay readable (R25); who deleted it is kept in
``memory_deletions``. A record an open turn is changing cannot be deleted
until that turn ends (CONFLICT); a record not yet committed does not exist
for the API (R12).
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from server.errors import ConflictError, NotFoundError
from server.models import MemoryDeletion, MemoryRecord


async def delete_record(
    db: AsyncSession, *, record_id: uuid.UUID, principal_id: uuid.UUID | None, caller: str
) -> MemoryRecord:
    record = await db.get(MemoryRecord, record_id, with_for_update=True)
    if record is None or not record.committed:
        raise NotFoundError(f"no memory record with id {record_id}")
    if record.pending_turn_id is not None:
        raise ConflictError(
            f"memory record {record_id} is being changed by an open turn; retry when it ends"
        )
    if record.status != "ACTIVE":
        raise ConflictError(f"memory record {record_id} is {record.status}, not ACTIVE")
    record.status = "DELETED"
    db.add(
        MemoryDeletion(
            agent_id=record.agent_id,
            record_id=record.id,
            principal_id=principal_id,
            caller=caller,
        )
    )
    await db.flush()
    return record
