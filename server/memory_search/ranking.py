"""Ranking memory records for a query (R41): the statement of
:mod:`server.memory_search.statement` run, its rows read as :class:`Found`.

``search_memory``, recall and the API's search rank by :func:`ranked`.

Which way a search finds its candidates by meaning: by the embedding's bits, or on the
HNSW index (:mod:`server.storage.nearest`), for an agent (:func:`path_of`). The choice
follows the agent's share of the table (:func:`server.storage.nearest.fits_bits`: at
most ``sqrt(k * table rows)`` versions, by bits). Asking costs a count of up to that
many index entries, so the answer is kept per agent for :data:`REMEMBERED` seconds
and the search statement runs one path, with no probe in it. The choice decides only
the cost: both paths rank the same versions (their recall is measured,
docs/scaling.md), so an answer a little out of date while an agent grows past the
threshold costs time, never results. Each server process keeps its own answers (at
most :data:`AGENTS`).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, Select, bindparam, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import SearchConfig
from server.domain.visibility import Reader
from server.embedding import Embedder
from server.embedding_packing import Vector
from server.memory_search.statement import (
    GENERIC_PLAN,
    NO_FILTERS,
    Filters,
    MemoryQuery,
    ranking_statement,
)
from server.models import MemoryRecord, MemoryVersion, table
from server.models.rows import RecordRow, VersionRow
from server.storage.built import built_once
from server.storage.hybrid_run import scanned_rows
from server.storage.nearest import ROUTED_BITS_AT_MOST, Path, fits_bits
from server.storage.owners import on_citus


@dataclass(frozen=True, slots=True)
class Found:
    """A record a search returned, with its ranking signals (None when listed): its
    rows as the ORM loaded them, or as plain rows (:mod:`server.memory_search.recorded`);
    ``terms``: a hybrid score's meaning and keyword terms."""

    record: MemoryRecord | RecordRow
    version: MemoryVersion | VersionRow
    score: float | None = None
    cosine: float | None = None
    lexical: float | None = None
    terms: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        v = self.version
        out: dict[str, Any] = {
            "id": str(self.record.id),
            "version": str(v.id),
            "scope": self.record.scope,
            "kind": v.kind,
            "summary": v.summary,
            "content": v.content,
            "labels": v.labels,
            "createdAt": v.created_at.isoformat(),
        }
        if self.score is not None:
            out["score"] = self.score
        return out


REMEMBERED = 60.0
AGENTS = 10_000

_known: OrderedDict[uuid.UUID, tuple[Path, float]] = OrderedDict()


@built_once
def _probe() -> Select[Any]:
    return fits_bits(_versions(), table(MemoryVersion))


@built_once
def _probe_routed() -> Select[Any]:
    """On Citus: true when the agent has at most :data:`ROUTED_BITS_AT_MOST` versions
    (one task on its shard: the count names the agent)."""
    most = bindparam("most", type_=Integer())
    counted = _versions().limit(most + 1).subquery("probe")
    return select((func.count() <= most).label("small")).select_from(counted)


def _versions() -> Select[Any]:
    agent = bindparam("agent", type_=table(MemoryVersion).c.agent_id.type)
    return select(literal(1)).where(col(MemoryVersion.agent_id) == agent)


async def path_of(db: AsyncSession, agent_id: uuid.UUID) -> Path:
    """The path of a search of ``agent_id``'s memory: asked, or remembered. On Citus, by
    bits up to :data:`ROUTED_BITS_AT_MOST` versions, else ``filtered``: the HNSW index
    of the agent's shard under a filter that names the agent, which Citus sends to that
    shard as one task (the forced walk of ``index`` names none; docs/scaling.md)."""
    now = time.monotonic()
    known = _known.get(agent_id)
    if known is not None and now - known[1] < REMEMBERED:
        return known[0]
    routed = on_citus(db)
    probe, values = (
        (_probe_routed(), {"agent": agent_id, "most": ROUTED_BITS_AT_MOST})
        if routed
        else (_probe(), {"agent": agent_id})
    )
    small = await db.scalar(probe, values)
    path: Path = "bits" if small else "filtered" if routed else "index"
    _known[agent_id] = (path, now)
    _known.move_to_end(agent_id)
    while len(_known) > AGENTS:
        _known.popitem(last=False)
    return path


def forget() -> None:
    """Forget every answer (the tests change agents' sizes under it)."""
    _known.clear()


async def ranked(
    db: AsyncSession, reader: Reader, query: MemoryQuery, *, now: datetime | None = None
) -> list[Found]:
    """The best ``query.limit`` records for ``query`` (R41), best first; ``now``: the
    moment recency is measured from (the call's own by default)."""
    if query.limit == 0:
        return []
    if query.path is None and query.mode != "lexical":
        query = replace(query, path=await path_of(db, reader.agent_id))
    stmt, params = ranking_statement(reader, query, now=now, with_rows=True)
    if not on_citus(db):  # Citus cannot plan it generic (docs/scaling.md)
        await db.execute(GENERIC_PLAN)
    rows = await scanned_rows(db, stmt, params)
    return [
        Found(
            record=r[1],
            version=r[0],
            score=float(r[2]),
            cosine=None if r[3] is None else float(r[3]),
            lexical=None if r[4] is None else float(r[4]),
            terms=None if r[5] is None else (float(r[5]), float(r[6])),
        )
        for r in rows
    ]


async def ranked_by(
    db: AsyncSession,
    embedder: Embedder,
    *,
    reader: Reader,
    search: SearchConfig,
    query: str,
    limit: int,
    filters: Filters = NO_FILTERS,
    embedding: Awaitable[tuple[Vector, int]] | None = None,
) -> tuple[list[Found], int | None]:
    """:func:`ranked` as the agent version's ``harness.memory.search`` says (R6, R41): the
    query embedded unless the mode is lexical, its mode and minimum score. With the
    tokens of the query's embedding (None: none was made), for ``embed`` usage (R43).
    ``embedding``: the query's embedding, started by the caller as the call arrived."""
    vector, tokens = (
        (None, None)
        if search.mode == "lexical"
        else await (embedding if embedding is not None else embedder.embed_query(query))
    )
    items = await ranked(
        db, reader, MemoryQuery(query, vector, search.mode, search.min_score, limit, filters)
    )
    return items, tokens


__all__ = [
    "AGENTS",
    "NO_FILTERS",
    "REMEMBERED",
    "Filters",
    "Found",
    "MemoryQuery",
    "forget",
    "path_of",
    "ranked",
    "ranked_by",
    "ranking_statement",
]
