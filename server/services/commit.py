"""Committing a turn, in its one order: read, split and embed what the turn keeps
before the commit locks it (R61); close the turn and publish its memory (R12); then
keep its events (R60)."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from server.embedding import Embedder
from server.models import Turn
from server.services import history, turns


async def commit_turn(db: AsyncSession, embedder: Embedder, *, turn_id: uuid.UUID) -> Turn:
    prepared = await history.prepare_keep(db, embedder, turn_id=turn_id)
    turn = await turns.commit_turn(db, turn_id=turn_id)
    await history.keep_turn(db, embedder, turn=turn, prepared=prepared)
    return turn
