"""How many rows a data-changing statement touched."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, Executable
from sqlalchemy.ext.asyncio import AsyncSession


async def rows_changed(db: AsyncSession, stmt: Executable, **kwargs: Any) -> int:
    """Run an UPDATE or DELETE and return its row count (an ORM session types the
    result as a plain ``Result``, which has none)."""
    result = cast(CursorResult[Any], await db.execute(stmt, **kwargs))
    return result.rowcount
