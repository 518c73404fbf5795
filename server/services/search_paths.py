"""Which way a memory search finds its candidates by meaning (R41): by the embedding's
bits, or on the HNSW index (:mod:`server.storage.nearest`), for an agent.

The choice follows the agent's share of the table (:func:`server.storage.nearest.fits_bits`:
at most ``sqrt(k * table rows)`` versions, by bits). Asking costs a count of up to that
many index entries, so the answer is kept per agent for :data:`REMEMBERED` seconds
and the search statement runs one path, with no probe in it. The choice decides only
the cost: both paths rank the same versions (their recall is measured, docs/scaling.md),
so an answer a little out of date while an agent grows past the threshold costs time,
never results. Each server process keeps its own answers (at most :data:`AGENTS`).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Any

from sqlalchemy import Select, bindparam, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.models import MemoryVersion, table
from server.storage.built import built_once
from server.storage.nearest import Path, fits_bits
from server.storage.owners import on_citus

REMEMBERED = 60.0
AGENTS = 10_000

_known: OrderedDict[uuid.UUID, tuple[Path, float]] = OrderedDict()


@built_once
def _probe() -> Select[Any]:
    agent = bindparam("agent", type_=table(MemoryVersion).c.agent_id.type)
    versions = select(literal(1)).where(col(MemoryVersion.agent_id) == agent)
    return fits_bits(versions, table(MemoryVersion))


async def path_of(db: AsyncSession, agent_id: uuid.UUID) -> Path:
    """The path of a search of ``agent_id``'s memory: asked, or remembered. On Citus,
    always ``bits``: the index path reads the HNSW index of a whole shard under a
    filter, which Citus cannot send to the agent's shard as one task, where the bits
    of an agent's versions are one range of an index on it (docs/scaling.md)."""
    if on_citus(db):
        return "bits"
    now = time.monotonic()
    known = _known.get(agent_id)
    if known is not None and now - known[1] < REMEMBERED:
        return known[0]
    small = await db.scalar(_probe(), {"agent": agent_id})
    path: Path = "bits" if small else "index"
    _known[agent_id] = (path, now)
    _known.move_to_end(agent_id)
    while len(_known) > AGENTS:
        _known.popitem(last=False)
    return path


def forget() -> None:
    """Forget every answer (the tests change agents' sizes under it)."""
    _known.clear()


__all__ = ["AGENTS", "REMEMBERED", "forget", "path_of"]
