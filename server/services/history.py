"""Session history (R60–R64): what a committed turn keeps, and search_history."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from server.embedding import Embedder
from server.models import Turn


async def keep_turn(db: AsyncSession, embedder: Embedder, *, turn: Turn) -> None:
    """Keep the committed turn's events per ``harness.history.index`` (R60, R61).

    Runs inside the commit's transaction: the turn, its memory and its history
    land together or not at all.
    """
