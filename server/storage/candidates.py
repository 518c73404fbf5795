"""The candidates of a hybrid search (R41, R62): the rows of a :class:`SearchSource`
nearest the query in meaning, and its best keyword matches.

- by meaning (the CTE ``v``): rows under ``where`` ordered by ``embedding <=> :q``
  (the HNSW index), the first ``P + slack``, then re-ordered exactly by
  ``cosine DESC, created_at DESC, key`` and cut to ``P`` (the slack settles ties
  at the cut that the index order leaves open), then those under ``min_score``
  dropped;
- by keywords (the CTE ``l``): the source's BM25 candidates
  (:mod:`server.storage.bm25`: from its postings, bounded by ``P``, when the source
  says they are exactly what ``where`` admits; otherwise the rows under ``where``
  whose ``search_tsv`` matches the full-text query,
  :func:`server.storage.search_terms.tsquery`), by BM25 score desc, newer first,
  then key, the first ``P``.

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
from dataclasses import dataclass, field
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
    union,
    union_all,
)

from server.domain.bm25 import Seeking
from server.domain.ranking_presets import DEFAULT_PRESET
from server.models import HistoryPart, MemoryVersion, table
from server.storage import bm25
from server.storage.search_terms import F8, cosine, distance, tsquery, uses_web_syntax

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
    ``keywords``: the reader's view of the rows' BM25 postings (a keyword search needs
    it); ``bounded``: its ranges admit exactly the rows ``where`` admits, so the keyword
    candidates come from the postings (:func:`server.storage.bm25.bounded`) rather than
    from every full-text match under ``where``.
    """

    from_: FromClause
    key: ColumnElement[Any]
    embedding: ColumnElement[Any]
    tsv: ColumnElement[Any]
    created_at: ColumnElement[datetime]
    where: ColumnElement[bool]
    probe: Select[Any] | None = None
    keywords: bm25.Postings | None = None
    bounded: bool = False

    @classmethod
    def of(
        cls,
        model: type[MemoryVersion] | type[HistoryPart],
        *,
        where: ColumnElement[bool],
        probe: Select[Any] | None = None,
        keywords: bm25.Postings | None = None,
        bounded: bool = False,
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
            keywords=keywords,
            bounded=bounded,
        )


@dataclass(frozen=True, slots=True)
class Candidates:
    """How a search picks its candidates in ``source``: the first ``pool`` by meaning
    (cosine at least ``min_score``; exactly or on the index as ``exact`` and
    ``exact_below`` decide) and the first ``pool`` by keywords (BM25, the query's terms
    found as ``seeking`` says)."""

    source: SearchSource
    pool: int
    min_score: float
    exact: bool | None
    exact_below: int
    seeking: Seeking = DEFAULT_PRESET.seeking
    _weights: dict[str, Any] = field(default_factory=dict, compare=False)

    def keyword_weights(self, text: str) -> Any:
        """The CTE ``w`` of the query's terms and weights (:func:`server.storage.bm25.weights`),
        one object per statement, shared by both candidate lists."""
        web = uses_web_syntax(text)
        key = "web" if web else "plain"
        if key not in self._weights:
            keywords = self.source.keywords
            if keywords is None:
                raise ValueError("a keyword search needs the source's postings")
            self._weights[key] = bm25.weights(keywords, text, seeking=self.seeking, depth=self.pool)
        return self._weights[key]

    def keyword_score(self, text: str, key: ColumnElement[Any]) -> Any:
        """The BM25 score of the row ``key`` for ``text`` (NULL: it holds no term)."""
        keywords = self.source.keywords
        assert keywords is not None
        return cast(bm25.score(keywords, self.keyword_weights(text), key), F8)

    def by_meaning(self, vector: Sequence[float], *, text: str | None) -> Any:
        """The CTE ``v``: ``(key, created_at, cosine, vlexical, vrank)``; ``vlexical`` is
        the candidate's BM25 score for ``text`` (NULL without one, or when it does not
        match the full-text query)."""
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
            # The keyword score of a candidate found by meaning (computed for the pool only),
            # reported even when it is past the keyword pool (it then adds nothing).
            vlexical: ColumnElement[Any] = case(
                (found.c.tsv.op("@@")(tsquery(text)), self.keyword_score(text, found.c.key)),
                else_=cast(null(), F8),
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
        """The CTE ``l``: ``(key, created_at, lexical, lcosine, lrank)``; ``lexical`` is the
        BM25 score, ``lcosine`` the candidate's cosine to ``vector`` (NULL without one)."""
        source = self.source
        if source.bounded and not uses_web_syntax(text):
            assert source.keywords is not None
            found = bm25.bounded(source.keywords, self.keyword_weights(text)).subquery("lfound")
        else:
            found = (
                select(source.key.label("key"), source.created_at.label("created_at"))
                .select_from(source.from_)
                .where(source.where, source.tsv.op("@@")(tsquery(text)))
                .subquery("lfound")
            )
        # OFFSET 0: each candidate is scored once (a flattened subquery would score it again
        # in the filter below)
        scored = (
            select(
                found.c.key,
                found.c.created_at,
                self.keyword_score(text, found.c.key).label("lexical"),
            )
            .offset(0)
            .subquery("lscored")
        )
        top = (
            select(scored)
            .where(scored.c.lexical.is_not(None))
            .order_by(scored.c.lexical.desc(), scored.c.created_at.desc(), scored.c.key)
            .limit(self.pool)
            .subquery("ltop")
        )
        if vector is None:
            lcosine: ColumnElement[Any] = cast(null(), F8)
            rows = select(top.c.key, top.c.created_at, top.c.lexical, lcosine.label("lcosine"))
        else:
            lcosine = cosine(source.embedding, vector)
            rows = (
                select(top.c.key, top.c.created_at, top.c.lexical, lcosine.label("lcosine"))
                .select_from(top)
                .join(source.from_, source.key == top.c.key)
            )
        near = rows.subquery("lnear")
        return select(
            near,
            func.row_number()
            .over(order_by=(near.c.lexical.desc(), near.c.created_at.desc(), near.c.key))
            .label("lrank"),
        ).cte("l")

    def keys(self, vector: Sequence[float], text: str) -> Any:
        """The keys of both lists, as a CTE ``seeds(key)``."""
        v = self.by_meaning(vector, text=None)
        lex = self.by_keywords(text, vector=None)
        return union(select(v.c.key), select(lex.c.key)).cte("seeds")


__all__ = ["EXACT_BELOW", "TIE_SLACK", "Candidates", "SearchSource"]
