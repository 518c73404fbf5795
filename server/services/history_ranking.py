"""The ranking of a history search (R62): the statement that ranks the parts a reader
may see (:func:`server.storage.history_gate.history_condition`, R64) for a query.

A hybrid search ranks in context (:mod:`server.storage.history_context`): the
candidates of a hybrid search and every part of their turns, each scored by its cosine
and keyword weight, its predecessor's, its successor's and its turn's, and by whether
it was kept in a period the query names (:mod:`server.domain.history`,
:func:`server.domain.dates.query_periods`); each result is one part. By keywords,
BM25 over the session's postings (:mod:`server.storage.bm25`), its common words
finding none. The statement is built once per shape and run with the search's values
as parameters. ``vector`` and ``lexical`` modes rank one
signal as memory search does; they and other thresholds are for evaluation
(bench/locomo_history.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import history as rules
from server.domain.dates import query_periods
from server.domain.history import HistoryReader
from server.domain.ranking import Mode
from server.models import HistoryEvent, HistoryPart
from server.storage.history_context import (
    PATH,
    context_parameters,
    context_rows,
    context_statement,
    shape_of,
    source,
)
from server.storage.hybrid_run import Hit, hits, hybrid_search, scanned_rows
from server.storage.nearest import Path


def context_search(
    *,
    reader: HistoryReader,
    query: str,
    vector: Sequence[float],
    min_score: float,
    limit: int,
    now: datetime | None = None,
    periods: Sequence[tuple[datetime, datetime]] | None = None,
    with_rows: bool = False,
    path: Path = PATH,
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement of a hybrid history search (R62, ranking in context) and its values:
    rows ``(key, score, cosine, lexical, created_at)``, best first, the first ``limit``
    (``with_rows``: ``(part, event, score)``). A part kept in one of ``periods`` (by
    default those the query names, as of ``now``: the call's own moment) gains."""
    now = now if now is not None else datetime.now(UTC)
    if periods is None:
        periods = query_periods(query, now=now)
    shape = shape_of(
        reader,
        text=query,
        periods=periods,
        limit=limit,
        path=path,
    )
    params = context_parameters(
        reader,
        text=query,
        vector=vector,
        min_score=min_score,
        limit=limit,
        now=now,
        periods=periods,
    )
    return (context_rows(shape) if with_rows else context_statement(shape)), params


async def ranked_parts(
    db: AsyncSession,
    *,
    reader: HistoryReader,
    query: str,
    vector: Sequence[float],
    limit: int,
    path: Path = PATH,
) -> list[tuple[HistoryPart, HistoryEvent, float]]:
    """The best ``limit`` parts ``reader`` may see for ``query`` (R62, hybrid, in context),
    each with its event and score, in one statement (``path``:
    how the candidates by meaning are found; forced by the bench)."""
    if limit == 0:
        return []
    stmt, params = context_search(
        reader=reader,
        query=query,
        vector=vector,
        min_score=rules.MIN_SCORE,
        limit=limit,
        with_rows=True,
        path=path,
    )
    return [(r[0], r[1], float(r[2])) for r in await scanned_rows(db, stmt, params)]


async def rank_parts(
    db: AsyncSession,
    *,
    reader: HistoryReader,
    query: str,
    vector: Sequence[float] | None,
    limit: int,
    mode: Mode = "hybrid",
    min_score: float = rules.MIN_SCORE,
) -> list[Hit]:
    """The parts ``reader`` may see, ranked for ``query`` (R62): ``hybrid`` in context
    (:func:`context_search`); ``vector`` and ``lexical`` (the memory search's ranking of
    one signal) and other thresholds are for evaluation (bench/locomo_history.py)."""
    if mode == "hybrid" and vector is not None:
        if limit == 0:
            return []
        stmt, params = context_search(
            reader=reader, query=query, vector=vector, min_score=min_score, limit=limit
        )
        return hits(await scanned_rows(db, stmt, params))
    return await hybrid_search(
        db,
        source=source(reader),
        text=query,
        vector=vector,
        mode=mode,
        min_score=min_score,
        limit=limit,
        preset=rules.PRESET,
        path=PATH,
    )


__all__ = ["context_search", "rank_parts", "ranked_parts"]
