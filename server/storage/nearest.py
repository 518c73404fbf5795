"""The rows of a search source nearest a query vector (R41, R62): the first ``cut`` of
the rows a search may find, by cosine distance, found one of three ways.

- ``exact``: every row's distance, sorted. Never misses a row; reads every row.
- ``bits``: the rows ranked by the Hamming distance between the signs of their
  embedding (``embedding_bits``, pgvector's ``binary_quantize``, migration 0012) and
  the query's, the first ``oversample`` of them ranked again by the exact distance.
  The bits and the columns a search filters on are in a covering index, so the
  first ranking is an index-only scan of one contiguous range of small tuples
  (an agent's versions, a session's parts) that reads no heap row; only the
  ``oversample`` rows are read whole. A row whose bits rank past ``oversample``
  is missed: :data:`OVERSAMPLE` is chosen so that the first 48 by cosine are
  nearly always inside (docs/scaling.md measures how often); a source of at
  most ``oversample`` rows is ranked exactly.
- ``index``: the HNSW index, read in distance order with pgvector's iterative
  scan (``hnsw.iterative_scan = relaxed_order``): the index's rows that fail the
  filter are skipped and the scan goes on until ``cut`` rows pass. Its cost grows
  with the share of the table the filter rejects: a filter that keeps one row in
  a hundred visits a hundred rows for each it keeps. Approximate too.

- ``filtered``: the HNSW index under the same iterative scan, with the filter in the
  same query as its order and limit (pgvector's filtered search): the planner weighs
  walking the index against ranking the filtered rows exactly by their share of the
  table, which it reads from the values of the call (a custom plan), and a filter that
  names the rows' agent lets Citus send the whole search to that agent's shard. For
  Citus, where the forced walk of ``index`` (the whole table's index under a filter
  above it) names no agent and cannot be routed (docs/scaling.md).

A source with a ``probe`` (memory: the agent's versions) chooses between
``bits`` and ``index`` by how many rows the probe finds: ``bits`` costs about the
same per row the source holds, ``index`` about the same per row of the table it
visits, so ``bits`` wins below about ``sqrt(k * table rows)`` rows
(:func:`bits_below`, ``k`` = :data:`SHARE_K`). A caller may ask first
(:func:`fits_bits`) and give the path; without one, both are in the statement and a
one-time filter runs the one the probe picks. Without a probe a source is ranked by
``bits``.

Everything the index path needs is in the statement: the HNSW settings are set by
``set_config`` in the one-time filter that starts the index scan (pgvector reads
them when the scan returns its first row), and the index scan reads the table
unfiltered under ``OFFSET 0``, the filter applied above it, so the planner has no
other plan to prefer. The statement is therefore the same plan, prepared or not,
and runs without a ``SET`` before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import (
    Column,
    ColumnElement,
    Integer,
    Select,
    Table,
    cast,
    func,
    literal,
    literal_column,
    not_,
    select,
    text,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import BIT, REGCLASS
from sqlalchemy.sql import visitors
from sqlalchemy.sql.util import ClauseAdapter

from server.storage.search_terms import F8, distance, float_param, query_vector
from server.storage.source import SearchSource

Path = Literal["exact", "bits", "index", "filtered"]

# The rows ranked again by the exact distance, per row the search keeps: 8 x 48 for a
# memory search of 10 (docs/scaling.md: recall of the first 48 against exact ranking).
OVERSAMPLE = 8
# bits_below: sqrt(SHARE_K * the table's rows), within [BITS_AT_LEAST, BITS_AT_MOST].
SHARE_K = 900.0
BITS_AT_LEAST = 2_000
BITS_AT_MOST = 60_000
# On Citus, the most versions an agent may have and be ranked by bits: the coordinator
# knows no shard's size, so the bound is bits_below's for a table of a million rows,
# sqrt(SHARE_K * 1M); above it a search takes its shard's index (``filtered``).
ROUTED_BITS_AT_MOST = 30_000
# hnsw.ef_search bounds: pgvector accepts 1..1000.
MIN_EF_SEARCH = 100
MAX_EF_SEARCH = 1000
# How many index tuples an iterative scan may visit before it gives up. A filter
# that keeps one row in 200 still fills a pool of 100 within this.
MAX_SCAN_TUPLES = 100_000


def index_settings(cut: int) -> dict[str, str]:
    """The HNSW settings of an index scan that must return ``cut`` rows: iterative, wide
    enough for them, allowed to visit many rows the filter rejects."""
    ef = min(max(2 * cut, MIN_EF_SEARCH), MAX_EF_SEARCH)
    return {
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": str(ef),
        "hnsw.max_scan_tuples": str(MAX_SCAN_TUPLES),
    }


def bits_below(table: Table) -> ColumnElement[int]:
    """The most rows a probe may find and the search still rank by bits: ``sqrt(k * N)``
    for a table of ``N`` rows (its planner estimate, ``pg_class.reltuples``), clamped.

    ``bits`` reads every row of the source, ``index`` about ``cut`` rows per share of the
    table the source holds; their costs cross where the rows ``n`` satisfy
    ``n * n = k * N`` (``k`` measured, docs/scaling.md)."""
    rows = (
        select(func.greatest(literal_column("reltuples"), literal_column("0")))
        .select_from(text("pg_class"))
        .where(literal_column("oid") == cast(literal(table.name), REGCLASS))
        .scalar_subquery()
    )
    below = func.sqrt(float_param("share_k", SHARE_K) * rows)
    clamped = func.least(
        func.greatest(below, literal_column(str(BITS_AT_LEAST))),
        literal_column(str(BITS_AT_MOST)),
    )
    return cast(clamped, Integer)


def nearest(
    source: SearchSource,
    vector: Sequence[float],
    *,
    cut: int,
    path: Path | None,
    oversample: int,
) -> Any:
    """The subquery ``(key, created_at, distance)``: the first ``cut`` rows of
    ``source`` by distance to ``vector``, found by ``path`` (None: as the source allows,
    module docstring); rows ordered by nothing in particular."""
    if path is None:
        if source.probe is None:
            path = "bits" if source.bits is not None else "exact"
        else:
            return _chosen(source, vector, cut=cut, oversample=oversample)
    scan = {"exact": _exactly, "bits": _by_bits, "index": _by_index, "filtered": _filtered}[path]
    found = scan(source, vector, cut, oversample)
    return found.subquery("vscan")


def fits_bits(probe: Select[Any], table: Table) -> Select[Any]:
    """``SELECT`` true when ``probe`` (rows of ``table``) finds at most
    :func:`bits_below` rows: the source is ranked by ``bits``, else on the index. Counts
    no more than that many rows."""
    counted = probe.limit(bits_below(table) + 1).subquery("probe")
    return select((func.count() <= bits_below(table)).label("small")).select_from(counted)


def _chosen(source: SearchSource, vector: Sequence[float], *, cut: int, oversample: int) -> Any:
    """Both ``bits`` and ``index``, a one-time filter running the one the probe picks."""
    assert source.probe is not None
    small = fits_bits(source.probe, source.from_).cte("small")
    is_small = select(small.c.small).scalar_subquery()
    by_bits = _by_bits(source, vector, cut, oversample, is_small).subquery("by_bits")
    by_index = _by_index(source, vector, cut, oversample, not_(is_small)).subquery("by_index")
    return union_all(select(by_bits), select(by_index)).subquery("vscan")


def _row(source: SearchSource, value: ColumnElement[Any]) -> tuple[Any, ...]:
    return (
        source.key.label("key"),
        source.created_at.label("created_at"),
        value.label("distance"),
    )


def _exactly(
    source: SearchSource, vector: Sequence[float], cut: int, _: int, *gate: Any
) -> Select[Any]:
    # "+ 0" hides the expression from the index: the filtered rows are ranked exactly.
    # Ordering by the output column computes the distance once per row.
    value = (distance(source.embedding, vector) + literal_column("0")).label("distance")
    return (
        select(*_row(source, value))
        .select_from(source.from_)
        .where(source.where, *gate)
        .order_by(value)
        .limit(cut)
    )


def _by_bits(
    source: SearchSource, vector: Sequence[float], cut: int, oversample: int, *gate: Any
) -> Select[Any]:
    if source.bits is None:
        raise ValueError("this source has no embedding bits")
    q = query_vector(source.embedding, vector)
    # computed once (an InitPlan), not once a row, whether the plan is custom or generic
    code = select(
        cast(func.binary_quantize(cast(q, source.embedding.type)), BIT(len(vector)))
    ).scalar_subquery()
    first = (
        select(source.key.label("key"))
        .select_from(source.from_)
        .where(source.where, *gate)
        .order_by(source.bits.op("<~>", return_type=F8)(code))
        .limit(max(oversample, cut))
        .subquery("by_bits_first")
    )
    value = distance(source.embedding, vector).label("distance")
    return (
        select(*_row(source, value))
        .select_from(source.from_.join(first, source.by_key(first.c.key)))
        .order_by(value)
        .limit(cut)
    )


def _by_index(
    source: SearchSource, vector: Sequence[float], cut: int, _: int, *gate: Any
) -> Select[Any]:
    value = distance(source.embedding, vector).label("distance")
    # The index read in distance order over the whole table; OFFSET 0 keeps the filter
    # above it, so the planner cannot trade the index for a sort of the filtered rows.
    # It carries the columns the filter and the rows read, no others.
    read = _columns(source.from_, source.key, source.created_at, source.where)
    walk = select(*read, value).order_by(value).offset(literal_column("0")).subquery("walk")
    adapt = ClauseAdapter(walk).traverse
    applied = _index_settings(cut)
    return (
        select(
            adapt(source.key).label("key"),
            adapt(source.created_at).label("created_at"),
            walk.c.distance,
        )
        .where(adapt(source.where), applied.is_not(None), *gate)
        .limit(cut)
    )


def _filtered(
    source: SearchSource, vector: Sequence[float], cut: int, _: int, *gate: Any
) -> Select[Any]:
    value = distance(source.embedding, vector).label("distance")
    return (
        select(*_row(source, value))
        .select_from(source.from_)
        .where(source.where, _index_settings(cut).is_not(None), *gate)
        .order_by(value)
        .limit(cut)
    )


def _index_settings(cut: int) -> Any:
    """A one-time filter's value that sets the HNSW settings of a scan of ``cut`` rows
    (:func:`index_settings`) as the statement runs, before the index scan starts."""
    return select(
        func.concat(
            *(
                func.set_config(name, literal(value), true())
                for name, value in index_settings(cut).items()
            )
        )
    ).scalar_subquery()


def _columns(table: Table, *clauses: ColumnElement[Any]) -> list[Any]:
    """The columns of ``table`` that ``clauses`` read (in a correlated subquery too), in
    the table's order."""
    named = {
        c.name
        for clause in clauses
        for c in visitors.iterate(clause)
        if isinstance(c, Column) and c.table is table
    }
    return [c for c in table.c if c.name in named]


__all__ = [
    "BITS_AT_LEAST",
    "BITS_AT_MOST",
    "MAX_EF_SEARCH",
    "MAX_SCAN_TUPLES",
    "MIN_EF_SEARCH",
    "OVERSAMPLE",
    "ROUTED_BITS_AT_MOST",
    "SHARE_K",
    "Path",
    "bits_below",
    "fits_bits",
    "index_settings",
    "nearest",
]
