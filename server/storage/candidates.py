"""The candidates of a hybrid search (R41, R62): the rows of a :class:`SearchSource`
nearest the query in meaning, and its best keyword matches.

- by meaning (the CTE ``v``): rows under ``where`` ordered by ``embedding <=> :q``
  (the HNSW index), the first ``P + slack``, then re-ordered exactly by
  ``cosine DESC, created_at DESC, key`` and cut to ``P`` (the slack settles ties
  at the cut that the index order leaves open), then those under ``min_score``
  dropped;
- by keywords (the CTE ``l``): rows under ``where`` whose ``search_tsv`` matches
  the full-text query (:func:`server.storage.search_terms.tsquery`), by
  ``ts_rank_cd`` desc, the first ``P``, a rank of 0 dropped.

Filtered vector search keeps its recall. A source may give a ``probe``: a
cheap query whose rows include every row ``where`` admits (for memory, the
agent's versions, counted on an index). When it finds at most ``exact_below``
rows (:data:`EXACT_BELOW`), the candidates are ranked exactly, never missing
one; above it they come from the HNSW index, run under the scan settings of
:mod:`server.storage.hybrid_run`. Both branches are in the one statement and a
one-time filter runs one. ``exact=True`` / ``False`` forces a path (the tests
compare them). HNSW is approximate: on the index path a true neighbour may be
missed (the bench and the tests measure how often); below ``exact_below``
nothing is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Select,
    bindparam,
    case,
    cast,
    func,
    literal_column,
    not_,
    null,
    select,
    union_all,
)

from server.models import HistoryPart, MemoryVersion, table
from server.storage.search_terms import F8, cosine, distance, tsquery

# Rows the index order contributes past the pool, so that exact ties at the cut
# are settled by (created_at, key) as the reference does.
TIE_SLACK = 8
# A source whose probe finds at most this many rows is ranked exactly: below it an exact
# scan of the rows is as fast as the index and never misses (bench/search.py measures it).
EXACT_BELOW = 10_000


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

    @classmethod
    def of(
        cls,
        model: type[MemoryVersion] | type[HistoryPart],
        *,
        where: ColumnElement[bool],
        probe: Select[Any] | None = None,
    ) -> SearchSource:
        """The rows of a searchable model's table: its ``id``, ``embedding``,
        ``search_tsv`` and ``created_at`` columns."""
        rows = table(model)
        return cls(
            from_=rows,
            key=rows.c.id,
            embedding=model.embedding,
            tsv=model.search_tsv,
            created_at=rows.c.created_at,
            where=where,
            probe=probe,
        )


@dataclass(frozen=True, slots=True)
class Candidates:
    """How a search picks its candidates in ``source``: the first ``pool`` by meaning
    (cosine at least ``min_score``; exactly or on the index as ``exact`` and
    ``exact_below`` decide) and the first ``pool`` by keywords."""

    source: SearchSource
    pool: int
    min_score: float
    exact: bool | None
    exact_below: int

    def by_meaning(self, vector: Sequence[float], *, text: str | None) -> Any:
        """The CTE ``v``: ``(key, created_at, cosine, vlexical, vrank)``; ``vlexical`` is
        the candidate's full-text rank for ``text`` (NULL without one)."""
        source, pool = self.source, self.pool
        to_query = distance(source.embedding, vector)

        def scan(ranked_exactly: bool, *gate: ColumnElement[bool]) -> Any:
            # "+ 0" hides the expression from the index: the filtered rows are ranked
            # exactly. Ordering by the output column computes the distance once per row.
            value = (to_query + literal_column("0") if ranked_exactly else to_query).label(
                "distance"
            )
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

        if self.exact is not None or source.probe is None:
            found = scan(bool(self.exact)).subquery("vscan")
        else:
            # Both paths in one statement; a one-time filter runs exactly one of them.
            probe = source.probe.limit(self.exact_below + 1).subquery("probe")
            small = (
                select((func.count() <= self.exact_below).label("small"))
                .select_from(probe)
                .cte("small")
            )
            is_small = select(small.c.small).scalar_subquery()
            by_index = scan(False, not_(is_small)).subquery("by_index")
            exactly = scan(True, is_small).subquery("exactly")
            found = union_all(select(by_index), select(exactly)).subquery("vscan")
        if text is not None:
            # The full-text rank of a candidate found by meaning (computed for the pool
            # only), reported even when it is past the keyword pool (it then adds nothing).
            query = tsquery(text)
            rank = cast(func.ts_rank_cd(found.c.tsv, query), F8)
            vlexical: ColumnElement[Any] = case(
                (found.c.tsv.op("@@")(query), rank), else_=cast(null(), F8)
            )
        else:
            vlexical = cast(null(), F8)
        similarity = (literal_column("1") - found.c.distance).label("cosine")
        ordered = select(
            found.c.key, found.c.created_at, similarity, vlexical.label("vlexical")
        ).subquery("vexact")
        numbered = select(
            ordered,
            func.row_number()
            .over(order_by=(ordered.c.cosine.desc(), ordered.c.created_at.desc(), ordered.c.key))
            .label("vrank"),
        ).subquery("vnum")
        return (
            select(numbered)
            .where(
                numbered.c.vrank <= pool,
                numbered.c.cosine >= bindparam("min_score", self.min_score),
            )
            .cte("v")
        )

    def by_keywords(self, text: str, *, vector: Sequence[float] | None) -> Any:
        """The CTE ``l``: ``(key, created_at, lexical, lcosine, lrank)``; ``lcosine`` is
        the candidate's cosine to ``vector`` (NULL without one)."""
        source = self.source
        query = tsquery(text)
        rank = cast(func.ts_rank_cd(source.tsv, query), F8)
        lcosine = cast(null(), F8) if vector is None else cosine(source.embedding, vector)
        top = (
            select(
                source.key.label("key"),
                source.created_at.label("created_at"),
                rank.label("lexical"),
                lcosine.label("lcosine"),
            )
            .select_from(source.from_)
            .where(source.where, source.tsv.op("@@")(query))
            .order_by(rank.desc(), source.created_at.desc(), source.key)
            .limit(self.pool)
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


__all__ = ["EXACT_BELOW", "TIE_SLACK", "Candidates", "SearchSource"]
