"""Running a hybrid search statement (:mod:`server.storage.hybrid`): its rows as
:class:`Hit`, best first (:func:`hits`; :func:`hybrid_search` builds and runs one).

A statement carries what it runs under: the HNSW settings of its index path are set
by the statement itself when that path runs (:mod:`server.storage.nearest`), so it
needs no ``SET`` before it and no restore after it, and its plan is the same whether
the driver prepares it or not.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.ranking import Mode
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.storage.hybrid import build_search
from server.storage.nearest import Path
from server.storage.source import SearchSource


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked row: the key, the score (cosine, BM25 score or fused score by
    mode), the cosine and the BM25 score. ``cosine`` is set whenever a query vector
    was given; ``lexical`` (the BM25 score) when a text was given (not in ``vector``
    mode) and the row matches it, even if it was past the keyword pool."""

    key: uuid.UUID
    score: float
    cosine: float | None
    lexical: float | None
    created_at: datetime


async def scanned_rows(
    db: AsyncSession,
    stmt: Select[Any],
    params: dict[str, Any] | None = None,
) -> Sequence[Any]:
    """The rows of ``stmt`` (a statement of :func:`server.storage.hybrid.build_search`, or
    one built around it, with ``params`` overriding its values by name)."""
    return list((await db.execute(stmt, params)).all())


def hits(rows: Sequence[Any]) -> list[Hit]:
    """The rows of a search statement, ``(key, score, cosine, lexical, created_at)``, as hits."""
    return [
        Hit(
            key=row.key,
            score=float(row.score),
            cosine=None if row.cosine is None else float(row.cosine),
            lexical=None if row.lexical is None else float(row.lexical),
            created_at=row.created_at,
        )
        for row in rows
    ]


async def hybrid_search(
    db: AsyncSession,
    *,
    source: SearchSource,
    text: str | None,
    vector: Sequence[float] | None,
    mode: Mode,
    min_score: float,
    limit: int,
    preset: FusionPreset = DEFAULT_PRESET,
    now: datetime | None = None,
    path: Path | None = None,
) -> list[Hit]:
    """Rank the rows of ``source`` as :func:`server.domain.ranking.rank` would; best first.

    ``text`` is needed by ``hybrid`` and ``lexical``, ``vector`` by ``hybrid`` and
    ``vector`` (in ``lexical`` mode a vector only fills :attr:`Hit.cosine`). ``now`` is
    the one instant recency is measured from (default: the current time).
    """
    stmt = build_search(
        source=source,
        text=text,
        vector=vector,
        mode=mode,
        min_score=min_score,
        limit=limit,
        preset=preset,
        now=now if now is not None else datetime.now(UTC),
        path=path,
    )
    if limit == 0:
        return []
    return hits(await scanned_rows(db, stmt))


__all__ = [
    "Hit",
    "hits",
    "hybrid_search",
    "scanned_rows",
]
