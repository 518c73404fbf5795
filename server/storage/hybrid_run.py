"""Running a hybrid search statement (:mod:`server.storage.hybrid`): the index scan
settings it runs under (:func:`scanned_rows`), and its rows as :class:`Hit`, best
first (:func:`hits`; :func:`hybrid_search` builds and runs one).

The index path runs with pgvector 0.8's iterative scans (``SET LOCAL
hnsw.iterative_scan = relaxed_order``, in one small statement before the
search): when the index's first candidates fail ``where`` the scan continues
until ``P + slack`` rows pass. ``hnsw.ef_search`` is at least twice the pool and
``hnsw.max_scan_tuples`` is raised so a selective filter is not cut short.
Relaxed order costs nothing here, as the pool is re-sorted. ``enable_sort`` is
off for the statement (and back to its default after it) so that the planner, which costs
a distance like a cheap operator, does not prefer sorting every admitted row to
the index, and so is ``plan_cache_mode = force_custom_plan``: the driver
prepares a statement it runs often, and a generic plan, made without the
filter's values, can miss the index a custom plan takes. A lexical search, or
one ranked exactly, has no index to steer and runs under the planner's own
settings.

The settings are ``SET LOCAL`` commands (one round trip for all), not
``set_config()`` calls: on Citus (docs/scaling.md, "Distributing by agent") the
statement runs on the agent's shard, on a worker, and the coordinator passes a
transaction's ``SET LOCAL`` on to the workers (``citus.propagate_set_commands``),
never a function's side effect.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.ranking import Mode
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.storage.candidates import EXACT_BELOW, TIE_SLACK, SearchSource
from server.storage.hybrid import build_search

# hnsw.ef_search bounds: pgvector accepts 1..1000.
MIN_EF_SEARCH = 100
MAX_EF_SEARCH = 1000
# How many index tuples an iterative scan may visit before it gives up. A filter
# that keeps one row in 200 still fills a pool of 100 within this.
MAX_SCAN_TUPLES = 100_000


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked row: the key, the score (cosine, full-text rank or fused score by
    mode), the cosine and the full-text rank. ``cosine`` is set whenever a query vector
    was given; ``lexical`` (the ``ts_rank_cd``) when a text was given (not in ``vector``
    mode) and the row matches it, even if it was past the keyword pool."""

    key: uuid.UUID
    score: float
    cosine: float | None
    lexical: float | None
    created_at: datetime


def scan_settings(limit: int, preset: FusionPreset = DEFAULT_PRESET) -> dict[str, str]:
    """The ``SET LOCAL`` values of a search with ``limit``: iterative, wide enough for the pool."""
    ef = min(max(2 * (preset.pool_size(limit) + TIE_SLACK), MIN_EF_SEARCH), MAX_EF_SEARCH)
    return {
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": str(ef),
        "hnsw.max_scan_tuples": str(MAX_SCAN_TUPLES),
        # The planner costs a distance like a cheap operator, so for a large filtered set
        # it prefers sorting every row by distance to the index; with sorts discouraged
        # it takes the index where one can serve. Only the index branch has that choice:
        # every other sort of the statement has no alternative. Restored after the search.
        "enable_sort": "off",
        # The driver prepares a statement it has run a few times; a generic plan of this
        # one, made without the reader's agent and query, may scan what a custom plan skips.
        "plan_cache_mode": "force_custom_plan",
    }


_SETTING_VALUE = re.compile(r"[A-Za-z0-9_]+")


@functools.lru_cache(maxsize=64)
def _set_scan(settings: tuple[tuple[str, str], ...]) -> TextClause:
    """The ``SET LOCAL`` commands of ``settings`` (:func:`scan_settings`'s, which are
    names and plain words or numbers), one statement sent as one."""
    for name, value in settings:
        assert _SETTING_VALUE.fullmatch(name.replace(".", "_")), name
        assert _SETTING_VALUE.fullmatch(value), value
    return text("; ".join(f"SET LOCAL {name} = {value}" for name, value in settings))


# the settings that steer the planner, back to their defaults after the search
_RESTORE_SORT = text("SET LOCAL enable_sort TO DEFAULT; SET LOCAL plan_cache_mode TO DEFAULT")


async def scanned_rows(
    db: AsyncSession,
    stmt: Select[Any],
    params: dict[str, Any] | None = None,
    *,
    mode: Mode,
    limit: int,
    preset: FusionPreset = DEFAULT_PRESET,
    exact: bool | None = None,
) -> Sequence[Any]:
    """The rows of ``stmt`` (a statement of :func:`server.storage.hybrid.build_search`, or
    one built around it, with ``params`` overriding its values by name), run under the
    scan settings of :func:`scan_settings`; the planner's are back to their defaults
    after it."""
    if mode == "lexical" or exact is True:
        return list((await db.execute(stmt, params)).all())
    await db.execute(_set_scan(tuple(scan_settings(limit, preset).items())))
    rows = list((await db.execute(stmt, params)).all())
    await db.execute(_RESTORE_SORT)
    return rows


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
    exact: bool | None = None,
    exact_below: int = EXACT_BELOW,
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
        exact=exact,
        exact_below=exact_below,
    )
    if limit == 0:
        return []
    return hits(await scanned_rows(db, stmt, mode=mode, limit=limit, preset=preset, exact=exact))


__all__ = [
    "MAX_EF_SEARCH",
    "MAX_SCAN_TUPLES",
    "MIN_EF_SEARCH",
    "Hit",
    "hits",
    "hybrid_search",
    "scan_settings",
    "scanned_rows",
]
