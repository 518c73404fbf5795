"""Hybrid search as one SQL statement: :func:`server.domain.ranking.rank` in PostgreSQL.

Memory search (R40-R42) and history search (R62) rank rows of a *searchable
table*: a table with an ``embedding vector(384)`` column under an HNSW
``vector_cosine_ops`` index, a ``search_tsv tsvector`` column under a GIN
index, a ``created_at`` and a ``uuid`` key. A caller describes what to rank
with a :class:`SearchSource` and calls :func:`hybrid_search`::

    source = SearchSource(
        from_=table(MemoryVersion),
        key=MemoryVersion.id, embedding=MemoryVersion.embedding,
        tsv=MemoryVersion.search_tsv, created_at=MemoryVersion.created_at,
        where=searchable_version(reader),  # server.storage.gate
    )
    hits = await hybrid_search(db, source=source, text="...", vector=[...],
                               mode="hybrid", min_score=0.3, limit=10)

A caller that runs the same statement often may build it once with
:func:`build_search` and run it with :func:`run_search`, giving the values that
change from call to call by name (:func:`search_parameters`)
(:mod:`server.storage.built`; docs/scaling.md, "Statements built once").

``hits`` are :class:`Hit` rows, best first: the key, the score (cosine,
full-text rank or fused score by mode), the cosine and the full-text rank.
``where`` may be any SQL condition over ``from_`` (a visibility gate, a
session, a turn range); rows it rejects are never candidates. The key must be
a ``uuid`` column (byte order is the reference's code-point order of the
string form); pass a ``COLLATE "C"`` expression for a text key.

The statement (see :func:`build_search`) is ``WITH v, l SELECT ...``:

- ``v``: the vector candidates: rows under ``where`` ordered by
  ``embedding <=> :q`` (the HNSW index), the first ``P + slack``, then
  re-ordered exactly by ``cosine DESC, created_at DESC, key`` and cut to ``P``
  (the slack settles ties at the cut that the index order leaves open), then
  those under ``min_score`` dropped;
- ``l``: the keyword candidates: rows under ``where`` whose ``search_tsv``
  matches the full-text query, by ``ts_rank_cd`` desc, the first ``P``, a rank
  of 0 dropped;
- the fusion: ``v FULL JOIN l`` scored by the preset's formula in ``float8``
  in the reference's order of operations, so scores equal :func:`rank`'s bit
  for bit; ordered by ``score DESC, created_at DESC, key``; the first ``limit``.

``vector`` and ``lexical`` modes build only their own candidate list.

The full-text query: words match if a record shares *any* of them (stop words
dropped, words stemmed: ``plainto_tsquery('english', text)`` with ``&`` turned
into ``|``), ranked by cover density, so records holding more of the words,
closer together, rank higher. A query that uses web-search syntax — a
``"quoted phrase"``, an ``OR`` between words, or a ``-word`` — is read with
``websearch_to_tsquery('english', text)`` instead, so a caller can ask for
exact phrases and exclusions.

Filtered vector search keeps its recall. A source may give a ``probe``: a
cheap query whose rows include every row ``where`` admits (for memory, the
agent's versions, counted on an index). When it finds at most ``exact_below``
rows (:data:`EXACT_BELOW`), the candidates are ranked exactly, never missing
one, and at that size as fast as the index; above it they come from the HNSW
index. Both branches are in the one statement and a one-time filter runs one.
``exact=True`` / ``False`` forces a path (the tests compare them).

The index path runs with pgvector 0.8's iterative scans (``SET LOCAL
hnsw.iterative_scan = relaxed_order``, in one small statement before the
search): when the index's first candidates fail ``where`` the scan continues
until ``P + slack`` rows pass; ``hnsw.ef_search`` is at least twice the pool and
``hnsw.max_scan_tuples`` is raised so a selective filter is not cut short;
``enable_sort`` is off for the statement (and restored after it) so that the
planner, which costs a distance like a cheap operator, does not prefer sorting
every admitted row to the index, and so is ``plan_cache_mode =
force_custom_plan``: the driver prepares a statement it runs often, and a
generic plan, made without the filter's values, can miss the index a custom plan
takes. Relaxed order costs nothing here, as the pool
is re-sorted. HNSW is
approximate: on the index path a true neighbour may be missed (the bench and
the tests measure how often); below ``exact_below`` nothing is.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Select,
    bindparam,
    case,
    cast,
    extract,
    func,
    literal_column,
    not_,
    null,
    select,
    text,
    union,
    union_all,
)
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TSQUERY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.types import Text

from server.domain.ranking import DEFAULT_PRESET, FusionPreset, Mode

MODES: tuple[Mode, ...] = ("hybrid", "lexical", "vector")
# Rows the index order contributes past the pool, so that exact ties at the cut
# are settled by (created_at, key) as the reference does.
TIE_SLACK = 8
# hnsw.ef_search bounds: pgvector accepts 1..1000.
MIN_EF_SEARCH = 100
MAX_EF_SEARCH = 1000
# How many index tuples an iterative scan may visit before it gives up. A filter
# that keeps one row in 200 still fills a pool of 100 within this.
MAX_SCAN_TUPLES = 100_000
# A source whose probe finds at most this many rows is ranked exactly: below it an exact
# scan of the rows is as fast as the index and never misses (bench/search.py measures it).
EXACT_BELOW = 10_000
# Quotes, a leading "-" or an upper-case OR; a plain "or" in a question is a word.
_WEB_SYNTAX = re.compile(r'"|(^|\s)-\w|\sOR\s')
_F8: DOUBLE_PRECISION[float] = DOUBLE_PRECISION()


@dataclass(frozen=True, slots=True)
class SearchSource:
    """What to rank: a FROM clause, the searchable columns of its rows, and a filter.

    ``probe`` (optional) selects a superset of the rows ``where`` admits, cheaply (on an
    index); its size up to :data:`EXACT_BELOW` picks exact ranking or the HNSW index.
    """

    from_: FromClause
    key: ColumnElement[Any]
    embedding: ColumnElement[Any]
    tsv: ColumnElement[Any]
    created_at: ColumnElement[datetime]
    where: ColumnElement[bool]
    probe: Select[Any] | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked row. ``cosine`` is set whenever a query vector was given; ``lexical``
    (the ``ts_rank_cd``) when a text was given (not in ``vector`` mode) and the row
    matches it, even if it was past the keyword pool."""

    key: uuid.UUID
    score: float
    cosine: float | None
    lexical: float | None
    created_at: datetime


def uses_web_syntax(query: str) -> bool:
    """True when ``query`` asks for phrases, alternatives or exclusions."""
    return _WEB_SYNTAX.search(query) is not None


def tsquery(query: str) -> ColumnElement[Any]:
    """The full-text query of ``query``: any of its words, or web-search syntax as written."""
    if uses_web_syntax(query):
        return func.websearch_to_tsquery(literal_column("'english'"), bindparam("text", query))
    words = cast(func.plainto_tsquery(literal_column("'english'"), bindparam("text", query)), Text)
    return cast(func.replace(words, literal_column("'&'"), literal_column("'|'")), TSQUERY)


def _check(
    *, mode: str, text: str | None, vector: Sequence[float] | None, min_score: float, limit: int
) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if mode != "vector" and text is None:
        raise ValueError(f"{mode} search needs a text")
    if mode != "lexical" and vector is None:
        raise ValueError(f"{mode} search needs a vector")
    if not -1.0 <= min_score <= 1.0:
        raise ValueError("min_score must be from -1 to 1")


def _vector_cte(
    source: SearchSource,
    *,
    vector: Sequence[float],
    text: str | None,
    min_score: float,
    pool: int,
    exact: bool | None,
    exact_below: int,
) -> Any:
    q = bindparam("q", list(vector), type_=source.embedding.type)
    distance = source.embedding.op("<=>", return_type=_F8)(q)

    def candidates(ranked_exactly: bool, *gate: ColumnElement[bool]) -> Any:
        # "+ 0" hides the expression from the index: the filtered rows are ranked exactly.
        # Ordering by the output column computes the distance once per row.
        value = (distance + literal_column("0") if ranked_exactly else distance).label("distance")
        return (
            select(
                source.key.label("key"),
                source.created_at.label("created_at"),
                value,
                source.tsv.label("tsv"),
            )
            .select_from(source.from_)
            .where(source.where, *gate)
            .order_by(value)
            .limit(pool + TIE_SLACK)
        )

    if exact is not None or source.probe is None:
        scan = candidates(bool(exact)).subquery("vscan")
    else:
        # Both paths in one statement; a one-time filter runs exactly one of them.
        probe = source.probe.limit(exact_below + 1).subquery("probe")
        small = select((func.count() <= exact_below).label("small")).select_from(probe).cte("small")
        is_small = select(small.c.small).scalar_subquery()
        by_index = candidates(False, not_(is_small)).subquery("by_index")
        exactly = candidates(True, is_small).subquery("exactly")
        scan = union_all(select(by_index), select(exactly)).subquery("vscan")
    if text is not None:
        # The full-text rank of a candidate found by meaning (computed for the pool only),
        # reported even when it is past the keyword pool (it then adds nothing).
        query = tsquery(text)
        rank = cast(func.ts_rank_cd(scan.c.tsv, query), _F8)
        vlexical: ColumnElement[Any] = case(
            (scan.c.tsv.op("@@")(query), rank), else_=cast(null(), _F8)
        )
    else:
        vlexical = cast(null(), _F8)
    cosine: ColumnElement[Any] = (literal_column("1") - scan.c.distance).label("cosine")
    ordered = select(scan.c.key, scan.c.created_at, cosine, vlexical.label("vlexical")).subquery(
        "vexact"
    )
    numbered = select(
        ordered,
        func.row_number()
        .over(order_by=(ordered.c.cosine.desc(), ordered.c.created_at.desc(), ordered.c.key))
        .label("vrank"),
    ).subquery("vnum")
    return (
        select(numbered)
        .where(numbered.c.vrank <= pool, numbered.c.cosine >= bindparam("min_score", min_score))
        .cte("v")
    )


def _lexical_cte(
    source: SearchSource, *, text: str, vector: Sequence[float] | None, pool: int
) -> Any:
    query = tsquery(text)
    rank = cast(func.ts_rank_cd(source.tsv, query), _F8)
    columns: list[Any] = [
        source.key.label("key"),
        source.created_at.label("created_at"),
        rank.label("lexical"),
    ]
    if vector is not None:
        q = bindparam("q", list(vector), type_=source.embedding.type)
        distance = source.embedding.op("<=>", return_type=_F8)(q)
        columns.append((literal_column("1") - distance).label("lcosine"))
    else:
        columns.append(cast(null(), _F8).label("lcosine"))
    top = (
        select(*columns)
        .select_from(source.from_)
        .where(source.where, source.tsv.op("@@")(query))
        .order_by(rank.desc(), source.created_at.desc(), source.key)
        .limit(pool)
        .subquery("ltop")
    )
    # Ranks of 0 sort last, so dropping them after the cut keeps the top P matches.
    return (
        select(
            top,
            func.row_number()
            .over(order_by=(top.c.lexical.desc(), top.c.created_at.desc(), top.c.key))
            .label("lrank"),
        )
        .where(top.c.lexical > 0)
        .cte("l")
    )


def float_param(name: str, value: float) -> ColumnElement[Any]:
    """A named float8 parameter (a preset's constant in generated SQL)."""
    return cast(bindparam(name, float(value)), _F8)


def _fused_score(
    v: Any, lex: Any, created_at: ColumnElement[Any], *, now: datetime, preset: FusionPreset
) -> ColumnElement[Any]:
    k = float_param("rrf_k", preset.rrf_k)
    vterm = func.coalesce(float_param("vector_weight", preset.vector_weight) / (k + v.c.vrank), 0)
    lterm = func.coalesce(
        float_param("lexical_weight", preset.lexical_weight) / (k + lex.c.lrank), 0
    )
    age = cast(extract("epoch", bindparam("now", now) - created_at), _F8)
    days = func.greatest(age, literal_column("0")) / float_param("day", 86_400.0)
    fresh = func.power(
        literal_column("0.5::float8"),
        days / float_param("half_life", preset.recency_half_life_days),
    )
    recency = (
        float_param("recency_weight", preset.recency_weight)
        * fresh
        / float_param("k1", preset.rrf_k + 1)
    )
    return (vterm + lterm) + recency


def build_search(
    *,
    source: SearchSource,
    text: str | None,
    vector: Sequence[float] | None,
    mode: Mode,
    min_score: float,
    limit: int,
    preset: FusionPreset = DEFAULT_PRESET,
    now: datetime,
    exact: bool | None = None,
    exact_below: int = EXACT_BELOW,
) -> Select[Any]:
    """The one statement of a search; rows ``(key, score, cosine, lexical, created_at)``."""
    _check(mode=mode, text=text, vector=vector, min_score=min_score, limit=limit)
    pool = preset.pool_size(limit)
    lim: ColumnElement[int] = bindparam("limit", limit)
    if mode == "vector":
        assert vector is not None
        v = _vector_cte(
            source,
            vector=vector,
            text=None,
            min_score=min_score,
            pool=pool,
            exact=exact,
            exact_below=exact_below,
        )
        return (
            select(
                v.c.key,
                v.c.cosine.label("score"),
                v.c.cosine,
                cast(null(), _F8).label("lexical"),
                v.c.created_at,
            )
            .order_by(v.c.cosine.desc(), v.c.created_at.desc(), v.c.key)
            .limit(lim)
        )
    if mode == "lexical":
        assert text is not None
        lex = _lexical_cte(source, text=text, vector=vector, pool=pool)
        return (
            select(
                lex.c.key,
                lex.c.lexical.label("score"),
                lex.c.lcosine.label("cosine"),
                lex.c.lexical,
                lex.c.created_at,
            )
            .order_by(lex.c.lexical.desc(), lex.c.created_at.desc(), lex.c.key)
            .limit(lim)
        )
    assert vector is not None and text is not None
    v = _vector_cte(
        source,
        vector=vector,
        text=text,
        min_score=min_score,
        pool=pool,
        exact=exact,
        exact_below=exact_below,
    )
    lex = _lexical_cte(source, text=text, vector=vector, pool=pool)
    key = func.coalesce(v.c.key, lex.c.key).label("key")
    created_at = func.coalesce(v.c.created_at, lex.c.created_at)
    score = _fused_score(v, lex, created_at, now=now, preset=preset).label("score")
    cosine = func.coalesce(v.c.cosine, lex.c.lcosine).label("cosine")
    lexical = func.coalesce(lex.c.lexical, v.c.vlexical).label("lexical")
    fused = (
        select(key, score, cosine, lexical, created_at.label("created_at"))
        .select_from(v.join(lex, v.c.key == lex.c.key, full=True))
        .subquery("fused")
    )
    return (
        select(fused)
        .order_by(fused.c.score.desc(), fused.c.created_at.desc(), fused.c.key)
        .limit(lim)
    )


def candidate_keys(
    *,
    source: SearchSource,
    text: str,
    vector: Sequence[float],
    min_score: float,
    pool: int,
    exact: bool | None = None,
    exact_below: int = EXACT_BELOW,
) -> Any:
    """The keys of a hybrid search's candidates, as a CTE ``seeds(key)``: the first
    ``pool`` by meaning (cosine >= ``min_score``) and the first ``pool`` keyword matches,
    chosen exactly as :func:`build_search` chooses them (for a caller that ranks the
    candidates, or rows near them, in its own way; run it with :func:`run_search`)."""
    _check(mode="hybrid", text=text, vector=vector, min_score=min_score, limit=pool)
    v = _vector_cte(
        source,
        vector=vector,
        text=None,
        min_score=min_score,
        pool=pool,
        exact=exact,
        exact_below=exact_below,
    )
    lex = _lexical_cte(source, text=text, vector=None, pool=pool)
    return union(select(v.c.key), select(lex.c.key)).cte("seeds")


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


_SET_SCAN = text(
    "SELECT current_setting('enable_sort') AS prior,"
    " current_setting('plan_cache_mode') AS prior_cache,"
    " set_config('hnsw.iterative_scan', :iterative_scan, true),"
    " set_config('hnsw.ef_search', :ef_search, true),"
    " set_config('hnsw.max_scan_tuples', :max_scan_tuples, true),"
    " set_config('enable_sort', :enable_sort, true),"
    " set_config('plan_cache_mode', :plan_cache_mode, true)"
)
_RESTORE_SORT = text(
    "SELECT set_config('enable_sort', :prior, true),"
    " set_config('plan_cache_mode', :prior_cache, true)"
)


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
    when = now if now is not None else datetime.now(UTC)
    stmt = build_search(
        source=source,
        text=text,
        vector=vector,
        mode=mode,
        min_score=min_score,
        limit=limit,
        preset=preset,
        now=when,
        exact=exact,
        exact_below=exact_below,
    )
    if limit == 0:
        return []
    return await run_search(db, stmt, mode=mode, limit=limit, preset=preset, exact=exact)


def search_parameters(
    *,
    text: str | None,
    vector: Sequence[float] | None,
    min_score: float,
    limit: int,
    now: datetime,
) -> dict[str, Any]:
    """The values of a statement from :func:`build_search` that change from call to call
    under the same shape (mode, web syntax, ``limit``, preset, source), by name: a caller
    that keeps one statement per shape runs it with these (:func:`run_search`)."""
    if not -1.0 <= min_score <= 1.0:
        raise ValueError("min_score must be from -1 to 1")
    params: dict[str, Any] = {"min_score": float(min_score), "limit": limit, "now": now}
    if text is not None:
        params["text"] = text
    if vector is not None:
        params["q"] = list(vector)
    return params


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
    """The rows of ``stmt`` (a statement of :func:`build_search`, or one built around
    it) run under the scan settings of :func:`scan_settings`, restored after it."""
    if mode == "lexical" or exact is True:
        return list((await db.execute(stmt, params)).all())
    settings = scan_settings(limit, preset)
    set_ = await db.execute(
        _SET_SCAN,
        {
            "iterative_scan": settings["hnsw.iterative_scan"],
            "ef_search": settings["hnsw.ef_search"],
            "max_scan_tuples": settings["hnsw.max_scan_tuples"],
            "enable_sort": settings["enable_sort"],
            "plan_cache_mode": settings["plan_cache_mode"],
        },
    )
    prior = set_.one()
    rows = list((await db.execute(stmt, params)).all())
    await db.execute(_RESTORE_SORT, {"prior": prior.prior, "prior_cache": prior.prior_cache})
    return rows


async def run_search(
    db: AsyncSession,
    stmt: Select[Any],
    params: dict[str, Any] | None = None,
    *,
    mode: Mode,
    limit: int,
    preset: FusionPreset = DEFAULT_PRESET,
    exact: bool | None = None,
) -> list[Hit]:
    """Run a statement of :func:`build_search` (with ``params`` overriding its values by
    name) under the scan settings of :func:`scan_settings`; the hits, best first."""
    rows = await scanned_rows(db, stmt, params, mode=mode, limit=limit, preset=preset, exact=exact)
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


__all__ = [
    "MODES",
    "Hit",
    "SearchSource",
    "build_search",
    "candidate_keys",
    "float_param",
    "hybrid_search",
    "run_search",
    "scan_settings",
    "scanned_rows",
    "search_parameters",
    "tsquery",
    "uses_web_syntax",
]
