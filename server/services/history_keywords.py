"""The keyword side of a history search (R62): which words of a query find the
keyword candidates, and what each word weighs.

A session's own common words (a speaker's name, a word every reply uses) match
nearly every part and only drown the words that tell parts apart, so the
keyword candidates are found without them
(:func:`server.domain.history.keyword_query`), and each word weighs its inverse
document frequency (:func:`server.domain.history.keyword_weight`). Both are
counted on the parts the reader may see, in one small statement before the
search (:func:`word_counts`). A query in web-search syntax is read as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Text, bindparam, cast, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import history as rules
from server.domain.history import HistoryReader
from server.models import HistoryPart
from server.storage.history_gate import history_condition
from server.storage.search_terms import uses_web_syntax


@dataclass(frozen=True, slots=True)
class Keywords:
    """The keyword side of a search (R62): ``text``, what the keyword candidates are
    found by (the query without its common words); ``weights``, each distinct keyword of
    the query (a word's ``plainto_tsquery``, common words included) with its
    :func:`server.domain.history.keyword_weight`. No weights: a query in web-search
    syntax, ranked by ``ts_rank_cd`` as written."""

    text: str
    weights: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class WordCounts:
    """How many of ``parts`` sampled parts hold each word of a query (R62): per word
    of :func:`server.domain.history.query_words`, its count (``None``: a stop word, no
    keyword) and its ``plainto_tsquery`` text (its stems)."""

    parts: int
    words: tuple[tuple[str, int | None, str], ...]

    def keywords(self, query: str, *, share: float = rules.COMMON_WORD_SHARE) -> Keywords:
        """The :class:`Keywords` of ``query``, leaving out words in more than ``share``."""
        counts = {w: n for w, n, _ in self.words}
        weights: dict[str, tuple[str, float]] = {}  # by the word's tsquery: one per stem
        for _, n, stems in self.words:
            if n is not None and stems not in weights:
                weights[stems] = (stems, rules.keyword_weight(n, self.parts))
        text = rules.keyword_query(query, counts, self.parts, share=share)
        return Keywords(text, tuple(weights.values()))


async def word_counts(db: AsyncSession, *, reader: HistoryReader, query: str) -> WordCounts:
    """The :class:`WordCounts` of ``query`` over the parts ``reader`` may see, counted in
    one small statement on a sample of those parts."""
    words = rules.query_words(query)
    if not words:
        return WordCounts(0, ())
    sample = (
        select(HistoryPart.search_tsv.label("tsv"))
        .where(history_condition(reader))
        .limit(rules.COMMON_WORD_SAMPLE)
        .cte("sample")
    )
    english: ColumnElement[Any] = literal_column("'english'")
    columns: list[Any] = [func.count().label("parts")]
    for i, word in enumerate(words):
        keyword = func.plainto_tsquery(english, bindparam(f"w{i}", word))
        columns.append(func.count().filter(sample.c.tsv.op("@@")(keyword)).label(f"n{i}"))
        columns.append(func.numnode(keyword).label(f"k{i}"))
        columns.append(cast(keyword, Text).label(f"q{i}"))
    row = (await db.execute(select(*columns).select_from(sample))).one()
    return WordCounts(
        int(row[0]),
        tuple(
            (w, None if row[3 * i + 2] == 0 else int(row[3 * i + 1]), str(row[3 * i + 3]))
            for i, w in enumerate(words)
        ),
    )


async def keywords_of(db: AsyncSession, *, reader: HistoryReader, query: str) -> Keywords:
    """The keywords of ``query`` over the parts ``reader`` may see (R62), counted in one
    small statement on a sample of those parts (:func:`word_counts`)."""
    if not rules.query_words(query) or uses_web_syntax(query):
        return Keywords(query)
    return (await word_counts(db, reader=reader, query=query)).keywords(query)


__all__ = ["Keywords", "WordCounts", "keywords_of", "word_counts"]
