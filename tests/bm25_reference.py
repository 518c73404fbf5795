"""BM25 by hand for the tests (R41, R62): a document's terms as PostgreSQL's
``english`` configuration reads them, and its score by :mod:`server.domain.bm25`,
the document frequencies counted here over the documents a reader reaches (not read
from the statistics the database keeps), so that the tests check both."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import bm25
from server.storage.search_terms import uses_web_syntax


@dataclass(frozen=True)
class Document:
    """A document's term frequencies and length (its lexemes, with repeats)."""

    tfs: dict[str, int]
    length: int


async def query_terms(db: AsyncSession, query: str) -> list[str]:
    """The query's distinct lexemes; for web-search syntax, those it does not negate."""
    if uses_web_syntax(query):
        sql = (
            "SELECT DISTINCT replace(m[1], '''''', '''') FROM regexp_matches("
            "querytree(websearch_to_tsquery('english', :q))::text,"
            " '''((?:[^'']|'''')*)''', 'g') AS m"
        )
    else:
        sql = "SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', :q)))"
    return sorted(r[0] for r in (await db.execute(text(sql), {"q": query})).all())


async def documents(
    db: AsyncSession, *, table: str, key: str, where: str, params: Mapping[str, Any]
) -> dict[str, Document]:
    """Each row's terms, read from its ``search_tsv``, by its key (as text)."""
    rows = (
        await db.execute(
            text(
                f"SELECT {key}::text, u.lexeme, coalesce(array_length(u.positions, 1), 1)"
                f" FROM {table}, unnest(search_tsv) u WHERE {where}"
            ),
            dict(params),
        )
    ).all()
    tfs: dict[str, dict[str, int]] = {}
    for k, lexeme, tf in rows:
        tfs.setdefault(k, {})[lexeme] = tf
    keys = (
        await db.execute(text(f"SELECT {key}::text FROM {table} WHERE {where}"), dict(params))
    ).all()
    return {k: Document(tfs.get(k, {}), sum(tfs.get(k, {}).values())) for (k,) in keys}


def weights(reach: Mapping[str, Document], terms: Iterable[str]) -> dict[str, float]:
    """Each term's idf among the documents ``reach`` holds."""
    df: Counter[str] = Counter(t for d in reach.values() for t in d.tfs)
    return {t: bm25.idf(df[t], len(reach)) for t in terms}


def scores(
    docs: Mapping[str, Document],
    reach: Mapping[str, Document],
    terms: Iterable[str],
    p: bm25.Bm25 = bm25.BM25,
) -> dict[str, float | None]:
    """The BM25 score of each of ``docs`` (None: it holds no term), idf counted over
    ``reach``, with the kind's constants ``p``."""
    w = weights(reach, terms)
    return {k: bm25.score(d.tfs, d.length, w, p) for k, d in docs.items()}
