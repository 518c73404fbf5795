"""The candidates of a hybrid search (R41, R62): the rows of a
:class:`server.storage.source.SearchSource` nearest the query in meaning, and its best
keyword matches.

- by meaning (the CTE ``v``): the first ``P + slack`` rows under ``where`` by
  ``embedding <=> :q`` (:func:`server.storage.nearest.nearest`: exactly, by the
  embedding's bits then exactly, or on the HNSW index), re-ordered exactly by
  ``cosine DESC, created_at DESC, key`` and cut to ``P`` (the slack settles ties at
  the cut that an approximate order leaves open), then those under ``min_score``
  dropped;
- by keywords (the CTE ``l``): the source's BM25 candidates
  (:mod:`server.storage.bm25`: from its postings, bounded by ``P``, when the source
  says they are exactly what ``where`` admits; otherwise the rows under ``where``
  whose ``search_tsv`` matches the full-text query,
  :func:`server.storage.search_terms.tsquery`), by BM25 score desc, newer first,
  then key, the first ``P``.

Filtered vector search keeps its recall: how, and how often the approximate paths
miss a row exact ranking finds, is :mod:`server.storage.nearest`'s (and the bench's
and the tests'); ``path`` forces one (the tests compare them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
    union,
)

from server.domain.bm25 import Seeking
from server.domain.ranking_presets import DEFAULT_PRESET
from server.storage import bm25
from server.storage.nearest import OVERSAMPLE, Path, nearest
from server.storage.search_terms import F8, cosine, tsquery, uses_web_syntax
from server.storage.source import SearchSource

# Rows the index order contributes past the pool, so that exact ties at the cut
# are settled by (created_at, key) as the reference does.
TIE_SLACK = 8


@dataclass(frozen=True, slots=True)
class Candidates:
    """How a search picks its candidates in ``source``: the first ``pool`` by meaning
    (cosine at least ``min_score``; found by ``path``, :mod:`server.storage.nearest`,
    None: as the source allows) and the first ``pool`` by keywords (BM25, the query's
    terms found as ``seeking`` says)."""

    source: SearchSource
    pool: int
    min_score: float
    path: Path | None = None
    oversample: int = OVERSAMPLE

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
        pool = self.pool
        cut = pool + TIE_SLACK
        found = nearest(
            self.source, vector, cut=cut, path=self.path, oversample=self.oversample * cut
        )
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
        """The CTE ``l``: ``(key, created_at, lexical, lcosine)``; ``lexical`` is the BM25
        score, ``lcosine`` the candidate's cosine to ``vector`` (NULL without one)."""
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
        keywords = source.keywords
        assert keywords is not None
        scored = bm25.scored(keywords, self.keyword_weights(text), found).subquery("lscored")
        top = (
            select(scored)
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
                .join(source.from_, source.by_key(top.c.key))
            )
        return rows.cte("l")

    def keys(self, vector: Sequence[float], text: str) -> Any:
        """The keys of both lists, as a CTE ``seeds(key)``."""
        v = self.by_meaning(vector, text=None)
        lex = self.by_keywords(text, vector=None)
        return union(select(v.c.key), select(lex.c.key)).cte("seeds")


__all__ = ["TIE_SLACK", "Candidates"]
