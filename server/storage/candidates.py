"""The candidates of a hybrid search (R41, R62): the rows of a
:class:`server.storage.source.SearchSource` nearest the query in meaning, and its best
keyword matches.

- by meaning (the CTE ``v``): the first ``P + slack`` rows under ``where`` by
  ``embedding <=> :q`` (:func:`server.storage.nearest.nearest`: exactly, by the
  embedding's bits then exactly, or on the HNSW index), re-ordered exactly by
  ``cosine DESC, created_at DESC, key`` and cut to ``P`` (the slack settles ties at
  the cut that an approximate order leaves open), then those under ``min_score``
  dropped;
- by keywords (the CTE ``l``): the source's BM25 candidates by BM25 score desc, newer
  first, then key, the first ``P``: from its postings (:mod:`server.storage.bm25`, one
  grouped read of the query terms' postings: every match, each with its exact score,
  while the terms hold no more than the preset's budget of postings; beyond it each
  term's best share, the first by their partial sums scored again exactly) when the
  source says they are exactly what ``where`` admits; otherwise the rows under
  ``where`` whose ``search_tsv`` matches the full-text query
  (:func:`server.storage.search_terms.tsquery`), each scored.

A candidate's other signal (the BM25 score of one found by meaning, the cosine of one
found by keywords) is not computed here: the search reads it for the rows it returns
(:func:`server.storage.hybrid.build_search`).

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
    not_,
    select,
    union,
    union_all,
)

from server.domain.bm25 import Seeking
from server.domain.ranking_presets import DEFAULT_PRESET
from server.storage import bm25
from server.storage.nearest import OVERSAMPLE, Path, nearest
from server.storage.search_terms import F8, tsquery, uses_web_syntax
from server.storage.source import SearchSource

# Rows the index order contributes past the pool, so that exact ties at the cut
# are settled by (created_at, key) as the reference does.
TIE_SLACK = 8


@dataclass(frozen=True, slots=True)
class Lexical:
    """A row's BM25 score (:meth:`Candidates.lexical_of`): ``score``, given ``joined``
    left-joined on ``on`` when it is set."""

    score: ColumnElement[Any]
    joined: Any = None
    on: ColumnElement[bool] | None = None


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
    _built: dict[str, Any] = field(default_factory=dict, compare=False)

    def keyword_weights(self, text: str) -> Any:
        """The CTE ``w`` of the query's terms and weights (:func:`server.storage.bm25.weights`),
        one object per statement, shared by both candidate lists."""
        return self._once(
            "w",
            text,
            lambda keywords: bm25.weights(keywords, text, seeking=self.seeking, pool=self.pool),
        )

    def keyword_read(self, text: str) -> Any:
        """The CTE ``lread``: the documents of the postings read
        (:func:`server.storage.bm25.read`), one object per statement."""
        w = self.keyword_weights(text)
        return self._once("lread", text, lambda keywords: bm25.read(keywords, w).cte("lread"))

    def lexical_of(self, text: str, key: ColumnElement[Any]) -> Lexical:
        """The BM25 score of the row ``key`` (NULL: it holds no term of the query): the
        sum the keyword read made of its postings, when that read every posting (the
        read to join, :attr:`Lexical.joined`), else a probe of the row's postings."""
        probe = self.keyword_score(text, key)
        if not (self.source.bounded and not uses_web_syntax(text)):
            return Lexical(probe)
        read = self.keyword_read(text)
        return Lexical(
            case((self._whole(text), read.c.lexical), else_=probe), read, read.c.key == key
        )

    def _whole(self, text: str) -> ColumnElement[bool]:
        """True when every posting of the query's terms is read (:func:`bm25.weights`)."""
        return select(func.bool_and(self.keyword_weights(text).c.whole)).scalar_subquery()

    def _once(self, name: str, text: str, make: Any) -> Any:
        """One object per statement and kind of query (plain or web-search syntax)."""
        key = f"{name}:{'web' if uses_web_syntax(text) else 'plain'}"
        if key not in self._built:
            keywords = self.source.keywords
            if keywords is None:
                raise ValueError("a keyword search needs the source's postings")
            self._built[key] = make(keywords)
        return self._built[key]

    def keyword_score(self, text: str, key: ColumnElement[Any]) -> Any:
        """The BM25 score of the row ``key`` for ``text`` (NULL: it holds no term)."""
        keywords = self.source.keywords
        assert keywords is not None
        return cast(bm25.score(keywords, self.keyword_weights(text), key), F8)

    def by_meaning(self, vector: Sequence[float]) -> Any:
        """The CTE ``v``: ``(key, created_at, cosine, vrank)``."""
        pool = self.pool
        cut = pool + TIE_SLACK
        found = nearest(
            self.source, vector, cut=cut, path=self.path, oversample=self.oversample * cut
        )
        similarity = (literal_column("1") - found.c.distance).label("cosine")
        ordered = select(found.c.key, found.c.created_at, similarity).subquery("vexact")
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

    def by_keywords(self, text: str) -> Any:
        """The CTE ``l``: ``(key, created_at, lexical)``, ``lexical`` the BM25 score."""
        source = self.source
        keywords = source.keywords
        assert keywords is not None
        w = self.keyword_weights(text)
        if source.bounded and not uses_web_syntax(text):
            found = self._read(text)
        else:
            matches = (
                select(source.key.label("key"), source.created_at.label("created_at"))
                .select_from(source.from_)
                .where(source.where, source.tsv.op("@@")(tsquery(text)))
                .subquery("lfound")
            )
            found = bm25.scored(keywords, w, matches).subquery("lscored")
        top = (
            select(found)
            .order_by(found.c.lexical.desc(), found.c.created_at.desc(), found.c.key)
            .limit(self.pool)
            .subquery("ltop")
        )
        return select(top).cte("l")

    def _read(self, text: str) -> Any:
        """``(key, created_at, lexical)`` of the documents the postings find
        (:func:`server.storage.bm25.read`): their sums as they are when every posting was
        read (exact), else the first ``2P`` by their partial sums, scored exactly."""
        keywords = self.source.keywords
        assert keywords is not None
        read = self.keyword_read(text)
        whole = self._whole(text)
        exact = select(read.c.key, read.c.created_at, read.c.lexical).where(read.c.found, whole)
        partial = (
            select(read.c.key, read.c.created_at)
            .where(read.c.found, not_(whole))
            .order_by(read.c.lexical.desc(), read.c.created_at.desc(), read.c.key)
            .limit(2 * self.pool)
            .subquery("lpartial")
        )
        rescored = bm25.scored(keywords, self.keyword_weights(text), partial)
        return union_all(exact, rescored).subquery("lfound")

    def keys(self, vector: Sequence[float], text: str) -> Any:
        """The keys of both lists, as a CTE ``seeds(key)``."""
        v = self.by_meaning(vector)
        lex = self.by_keywords(text)
        return union(select(v.c.key), select(lex.c.key)).cte("seeds")


__all__ = ["TIE_SLACK", "Candidates", "Lexical"]
