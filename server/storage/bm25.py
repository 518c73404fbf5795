"""The keyword leg of a search as SQL: :mod:`server.domain.bm25` over the postings of
migration 0011, its cost bounded by a budget of postings, not by the matches.

A search reads a kind's index (memory versions, history parts) through
:class:`Postings`, what one reader reaches of it:

1. :func:`weights`: the query's terms (its lexemes; for web-search syntax those it
   does not negate), each with its ``idf`` from the reader's statistics rows (one
   index probe a term), whether it finds candidates and how many of its postings it
   reads (:func:`server.domain.bm25.reading`: every posting when the terms hold no
   more than the budget, else each finding term its best share of it);
2. :func:`read`: those postings, each term's in each of the reader's ranges (an index
   range already in the order ``impact DESC, created_at DESC, key``: one index-only
   scan), plus the few postings outside the ranges the reader may find (memory: the
   versions an open turn or a preview wrote, through the full gate), summed by
   document in one grouped pass: a document's BM25 over the postings read, with no
   probe per document;
3. :func:`scored` / :func:`score`: a document's BM25 over every term of the query,
   read by the postings' key (``(agent_id, key, term)``, one probe a document), for
   the few documents whose sum in (2) may be partial.

When every posting is read (the query's terms hold at most the budget: a small
reach, rare words) the sums of (2) are the documents' exact scores and the keyword
candidates are every match: the ranking is the exhaustive one, at the cost of one
index-only read of the matches' postings. Beyond the budget the best postings of
each term stand for the rest, and the first candidates by their partial sums are
scored again exactly (docs/scaling.md measures how often the first ten then differ
from an exhaustive ranking).

A search that filters on more than who may see (memory: kind, labels, ids), an API
reader (every session of an agent) and a query in web-search syntax read their
matches from the full-text index instead (``tsv @@ query``, every match), scored by
the same :func:`score`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Select,
    Table,
    Text,
    and_,
    any_,
    bindparam,
    case,
    cast,
    column,
    func,
    literal_column,
    not_,
    null,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.bm25 import Seeking
from server.storage.search_terms import F8, uses_web_syntax

_ENGLISH: ColumnElement[Any] = literal_column("'english'")


@dataclass(frozen=True, slots=True)
class Postings:
    """What one reader reaches of a kind's BM25 index.

    ``table`` holds the postings (``agent_id``, ``term``, ``impact``, ``created_at`` and
    the document's key column ``key``); ``agent`` is the reader's agent, which prefixes
    every lookup by key. ``ranges``: the postings the reader may find, each
    condition one index range that is best first once the term is fixed; ``few``: any
    others the reader may find (read whole, then filtered). ``stats`` and
    ``stats_where``: the reader's statistics rows (``term``, ``docs``)."""

    table: Table
    key: str
    agent: Any
    ranges: tuple[ColumnElement[bool], ...]
    few: ColumnElement[bool] | None
    stats: Table
    stats_where: ColumnElement[bool]


def _terms(text: str, web: bool) -> Any:
    """The query's distinct lexemes, ``term``: those of ``to_tsvector`` (the words the
    documents' vectors hold), or, for web-search syntax, those of the query's
    searchable part (``querytree``: its negated words left out)."""
    text_ = bindparam("text", text, type_=Text())
    if not web:
        lexemes = func.unnest(func.tsvector_to_array(func.to_tsvector(_ENGLISH, text_)))
        return select(lexemes.label("term")).distinct().subquery("qterms")
    searched = cast(func.querytree(func.websearch_to_tsquery(_ENGLISH, text_)), Text)
    quoted = (
        func.regexp_matches(
            searched, literal_column("'''((?:[^'']|'''')*)'''"), literal_column("'g'")
        )
        .table_valued(column("m", ARRAY(Text())))
        .render_derived(name="quoted")
    )
    lexeme = func.replace(quoted.c.m[1], literal_column("''''''"), literal_column("''''"))
    return select(lexeme.label("term")).select_from(quoted).distinct().subquery("qterms")


def weights(postings: Postings, text: str, *, seeking: Seeking, pool: int) -> Any:
    """The CTE ``w``: ``(term, idf, finds, depth, whole)``, the terms of the query ``text``
    (the parameter ``text``) with their inverse document frequency among the reader's
    documents, whether each finds candidates (:func:`server.domain.bm25.seekers`) and how
    many of its best postings it reads (:func:`server.domain.bm25.reading` with the pool
    ``pool``; NULL: all of them); ``whole``, the same on every row: every posting of
    every term is read."""
    terms = _terms(text, uses_web_syntax(text))
    s = postings.stats
    df = (
        select(func.coalesce(func.sum(s.c.docs), 0))
        .where(postings.stats_where, s.c.term == terms.c.term)
        .scalar_subquery()
    )
    docs = (
        select(func.coalesce(func.sum(s.c.docs), 0))
        .where(postings.stats_where, s.c.term == literal_column("''"))
        .scalar_subquery()
    )
    # MATERIALIZED: each term's statistics probed once (inlined, ``df`` would be probed
    # again wherever the CTEs above read it)
    counted = (
        select(terms.c.term, cast(df, F8).label("df"), cast(docs, F8).label("docs"))
        .cte("wcount")
        .prefix_with("MATERIALIZED")
    )
    one: ColumnElement[Any] = literal_column("1.0::float8")
    half: ColumnElement[Any] = literal_column("0.5::float8")
    idf = func.ln(one + (counted.c.docs - counted.c.df + half) / (counted.c.df + half))
    if seeking.common_share is None:
        common: ColumnElement[bool] = literal_column("false")
    else:
        floor = func.greatest(
            literal_column(f"{float(seeking.common_share)!r}::float8") * counted.c.docs,
            literal_column(f"{int(seeking.common_min)}::float8"),
        )
        common = counted.c.df > floor
    # the rarest terms find candidates; the common ones only when every term is common
    any_rare = func.bool_or(not_(common)).over()
    judged = select(
        counted.c.term,
        counted.c.df,
        idf.label("idf"),
        or_(not_(common), not_(any_rare)).label("finding"),
    ).subquery("wjudged")
    rank = func.row_number().over(
        order_by=(case((judged.c.finding, 0), else_=1), judged.c.df, judged.c.term.collate("C"))
    )
    placed = select(
        judged.c.term,
        judged.c.df,
        judged.c.idf,
        and_(judged.c.finding, rank <= seeking.most).label("finds"),
        rank.label("place"),
    ).subquery("wplaced")
    budget = float(seeking.budget * pool)
    # the finding terms come first in ``place``: a finding term is read whole while it and
    # the rarer ones hold at most half the budget
    held_before = func.sum(placed.c.df).over(order_by=placed.c.place)
    kept = and_(placed.c.finds, held_before <= literal_column(f"{budget / 2!r}::float8"))
    sized = select(
        placed,
        kept.label("kept"),
        (func.sum(placed.c.df).over() <= literal_column(f"{budget!r}::float8")).label("whole"),
    ).subquery("wsized")
    spent = func.coalesce(func.sum(sized.c.df).filter(sized.c.kept).over(), literal_column("0"))
    rest = func.sum(sized.c.df).filter(and_(sized.c.finds, not_(sized.c.kept))).over()
    share = func.ceil((literal_column(f"{budget!r}::float8") - spent) * sized.c.df / rest)
    reads = case(
        (sized.c.whole, cast(null(), F8)),
        (not_(sized.c.finds), literal_column("0::float8")),
        (sized.c.kept, sized.c.df),
        else_=func.greatest(func.least(sized.c.df, literal_column(f"{int(pool)}::float8")), share),
    )
    return select(
        sized.c.term,
        sized.c.idf,
        sized.c.finds,
        cast(reads, BigInteger).label("depth"),
        sized.c.whole,
    ).cte("w")


def read(postings: Postings, w: Any) -> Select[Any]:
    """``(key, created_at, lexical, found)``: the documents of the postings read (each
    term's first ``w.depth`` in each range of the reader, and the few others it may
    find), each with the sum, in term order, of ``idf * impact`` over the postings read
    (its exact BM25 when ``w.whole``) and whether it holds a term that finds."""
    p = postings.table
    key = p.c[postings.key]
    # in term order: a document's sum adds its terms' weights in the order the
    # reference does (:func:`server.domain.bm25.score`), as the grouping takes its rows
    # in the order read
    ordered = select(w).order_by(w.c.term.collate("C")).subquery("wordered")
    branches: list[Select[Any]] = []
    for reach in postings.ranges:
        branches.append(
            select(key.label("key"), p.c.created_at, p.c.impact)
            .where(reach, p.c.term == ordered.c.term)
            .order_by(p.c.impact.desc(), p.c.created_at.desc(), key)
            .limit(ordered.c.depth)
        )
    if postings.few is not None:
        branches.append(
            select(key.label("key"), p.c.created_at, p.c.impact).where(
                postings.few, p.c.term == ordered.c.term
            )
        )
    found = union_all(*branches).lateral("postings_read")
    return (
        select(
            found.c.key,
            func.max(found.c.created_at).label("created_at"),
            func.sum(ordered.c.idf * found.c.impact).label("lexical"),
            func.bool_or(ordered.c.finds).label("found"),
        )
        .select_from(ordered)
        .join(found, true())
        .group_by(found.c.key)
    )


def _scoring(postings: Postings, w: Any) -> tuple[Any, Any, ColumnElement[bool]]:
    """The postings table (aliased), the BM25 sum over its rows joined to ``w`` (in term
    order, so every caller adds the same floats in the same order) and the condition
    that a posting is one of the query's terms."""
    p = postings.table.alias("scored_posting")
    terms = select(func.array_agg(w.c.term)).scalar_subquery()
    total = func.sum(aggregate_order_by(w.c.idf * p.c.impact, p.c.term.collate("C")))
    return p, total, p.c.term == any_(cast(terms, ARRAY(Text())))


def score(postings: Postings, w: Any, key: ColumnElement[Any]) -> Any:
    """The BM25 score of the document ``key`` for the query: the sum, in term order, of
    ``idf * impact`` over the query's terms it holds; NULL when it holds none."""
    p, total, of_query = _scoring(postings, w)
    return (
        select(total)
        .select_from(p)
        .join(w, w.c.term == p.c.term)
        .where(p.c.agent_id == postings.agent, p.c[postings.key] == key, of_query)
        .scalar_subquery()
    )


def scored(postings: Postings, w: Any, found: Any) -> Select[Any]:
    """``(key, created_at, lexical)``: the documents of ``found`` (``key``, ``created_at``)
    that hold a term of the query, each with its :func:`score`, in one join (a probe a
    document) rather than one subquery a document."""
    p, total, of_query = _scoring(postings, w)
    return (
        select(found.c.key, found.c.created_at, total.label("lexical"))
        .select_from(found)
        .join(
            p,
            and_(p.c.agent_id == postings.agent, p.c[postings.key] == found.c.key, of_query),
        )
        .join(w, w.c.term == p.c.term)
        .group_by(found.c.key, found.c.created_at)
    )


async def query_terms(db: AsyncSession, text: str) -> list[str]:
    """The terms a search reads of ``text`` (:func:`weights`), in term order."""
    terms = _terms(text, uses_web_syntax(text))
    return sorted((await db.execute(select(terms.c.term))).scalars())


__all__ = ["Postings", "query_terms", "read", "score", "scored", "weights"]
