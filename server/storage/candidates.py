"""The candidates of a hybrid search (R41, R62): the rows of a
:class:`server.storage.source.SearchSource` nearest the query in meaning, and its best
keyword matches.

- by meaning (the CTE ``v``): the first ``P + slack`` rows under ``where`` by
  ``embedding <=> :q`` (:func:`server.storage.nearest.nearest`: exactly, by the
  embedding's bits then exactly, or on the HNSW index), re-ordered exactly by
  ``cosine DESC, created_at DESC, key`` and cut to ``P`` (the slack settles ties at
  the cut that an approximate order leaves open), then those under ``min_score``
  dropped;
- by keywords (the CTE ``l``): rows under ``where`` whose ``search_tsv`` matches
  the full-text query (:func:`server.storage.search_terms.tsquery`), by
  ``ts_rank_cd`` desc, the first ``P``, a rank of 0 dropped.

Filtered vector search keeps its recall: how, and how often the approximate paths
miss a row exact ranking finds, is :mod:`server.storage.nearest`'s (and the bench's
and the tests'); ``path`` forces one (the tests compare them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    bindparam,
    case,
    cast,
    func,
    literal_column,
    null,
    select,
)

from server.storage.nearest import OVERSAMPLE, Path, nearest
from server.storage.search_terms import F8, cosine, tsquery
from server.storage.source import SearchSource

# Rows the index order contributes past the pool, so that exact ties at the cut
# are settled by (created_at, key) as the reference does.
TIE_SLACK = 8


@dataclass(frozen=True, slots=True)
class Candidates:
    """How a search picks its candidates in ``source``: the first ``pool`` by meaning
    (cosine at least ``min_score``; found by ``path``, :mod:`server.storage.nearest`,
    None: as the source allows) and the first ``pool`` by keywords."""

    source: SearchSource
    pool: int
    min_score: float
    path: Path | None = None
    oversample: int = OVERSAMPLE

    def by_meaning(self, vector: Sequence[float], *, text: str | None) -> Any:
        """The CTE ``v``: ``(key, created_at, cosine, vlexical, vrank)``; ``vlexical`` is
        the candidate's full-text rank for ``text`` (NULL without one)."""
        pool = self.pool
        cut = pool + TIE_SLACK
        found = nearest(
            self.source, vector, cut=cut, path=self.path, oversample=self.oversample * cut
        )
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


__all__ = ["TIE_SLACK", "Candidates"]
