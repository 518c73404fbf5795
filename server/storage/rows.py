"""Writing rows: one row inserted where a unique constraint may refuse it, and the
count of rows an UPDATE or DELETE touched."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Executable
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from server.errors import ConflictError


async def insert_unique(db: AsyncSession, row: object, conflict: str) -> None:
    """Insert ``row`` now; a unique violation is a CONFLICT saying ``conflict``."""
    db.add(row)
    try:
        await db.flush()
    except IntegrityError as exc:
        raise ConflictError(conflict) from exc


async def rows_changed(db: AsyncSession, stmt: Executable, **kwargs: Any) -> int:
    """Run an UPDATE or DELETE and return its row count (an ORM session types the
    result as a plain ``Result``, which has none)."""
    result = cast(CursorResult[Any], await db.execute(stmt, **kwargs))
    return result.rowcount
