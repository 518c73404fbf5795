"""Hybrid search as one SQL statement: :func:`server.domain.ranking.rank` in PostgreSQL.

Memory search (R40-R42) and history search (R62) rank rows of a *searchable
table* (:mod:`server.storage.source`). A caller describes what to rank with a
:class:`server.storage.source.SearchSource` and runs the search with
:func:`server.storage.hybrid_run.hybrid_search`::

    source = SearchSource.of(
        MemoryVersion,
        where=searchable_version(reader),  # server.storage.gate
    )
    hits = await hybrid_search(db, source=source, text="...", vector=[...],
                               mode="hybrid", min_score=0.3, limit=10)

A caller that runs the same statement often builds it once with
:func:`build_search` and runs it with
:func:`server.storage.hybrid_run.scanned_rows`, giving the values that change
from call to call by name (:func:`search_parameters`; :mod:`server.storage.built`,
docs/scaling.md, "Statements built once").

``where`` may be any SQL condition over ``from_`` (a visibility gate, a
session, a turn range); rows it rejects are never candidates. The key must be
a ``uuid`` column (byte order is the reference's code-point order of the
string form); pass a ``COLLATE "C"`` expression for a text key.

The statement is ``WITH v, l SELECT ...``: ``v`` and ``l`` are the candidates
by meaning and by keywords (:mod:`server.storage.candidates`, the first ``P``
of each, ``P`` the preset's pool for ``limit``), and the fusion is
``v FULL JOIN l``, each candidate given the signal its list did not compute (the
cosine of one found by keywords alone, read from its row; the BM25 score of one
found by meaning alone, from its postings), scored by the
preset's blend (each signal scaled over the candidates by a window over all of them)
in ``float8`` in the reference's order of operations, so scores equal
:func:`rank`'s bit for bit; ordered by ``score DESC, created_at DESC, key``; the
first ``limit``. ``vector`` and ``lexical`` modes build only their own candidate
list (a lexical search given a vector reads the cosine of the rows it returns).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    bindparam,
    case,
    cast,
    extract,
    func,
    literal_column,
    null,
    select,
)

from server.domain.ranking import Mode
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.storage.candidates import Candidates
from server.storage.nearest import Path
from server.storage.search_terms import F8, distance, float_param, tsquery
from server.storage.source import SearchSource

MODES: tuple[Mode, ...] = ("hybrid", "lexical", "vector")


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
    _check_min_score(min_score)


def _check_min_score(min_score: float) -> None:
    if not -1.0 <= min_score <= 1.0:
        raise ValueError("min_score must be from -1 to 1")


def _blended(fused: Any, *, now: datetime, preset: FusionPreset) -> Select[Any]:
    """The rows of ``fused`` (``key, cosine, lexical, created_at``: every candidate, with
    both signals) with their meaning and keyword terms and their score, the reference's
    blend in its order of operations: each signal scaled over the candidates (windows
    over all of them), blended by the preset's shares, plus the recency term."""
    c = fused.c
    low = func.min(c.cosine, type_=F8).over()
    high = func.max(c.cosine, type_=F8).over()
    top = func.max(c.lexical, type_=F8).over()
    zero: ColumnElement[float] = literal_column("0::float8")
    share = float_param("cosine_share", preset.cosine_share)
    meaning = case((high > low, share * ((c.cosine - low) / (high - low))), else_=zero)
    words = case(
        (
            top > zero,
            float_param("keyword_share", preset.keyword_share)
            * (func.coalesce(c.lexical, zero) / top),
        ),
        else_=zero,
    )
    age = cast(extract("epoch", bindparam("now", now) - c.created_at), F8)
    days = func.greatest(age, zero) / float_param("day", 86_400.0)
    fresh = func.power(
        literal_column("0.5::float8"),
        days / float_param("half_life", preset.recency_half_life_days),
    )
    terms = select(
        c.key,
        c.cosine,
        c.lexical,
        c.created_at,
        meaning.label("meaning"),
        words.label("keywords"),
        (float_param("recency_gain", preset.recency_gain) * fresh).label("fresh"),
    ).subquery("terms")
    t = terms.c
    return select(
        t.key,
        ((t.meaning + t.keywords) + t.fresh).label("score"),
        t.cosine,
        t.lexical,
        t.created_at,
        t.meaning,
        t.keywords,
    )


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
    path: Path | None = None,
) -> Select[Any]:
    """The one statement of a search; rows ``(key, score, cosine, lexical, created_at,
    meaning, keywords)``."""
    _check(mode=mode, text=text, vector=vector, min_score=min_score, limit=limit)
    found = Candidates(source, preset.pool_size(limit), min_score, path, seeking=preset.seeking)
    if mode == "vector":
        assert vector is not None
        v = found.by_meaning(vector)
        no_rank = cast(null(), F8)
        return _best_first(v.c.key, v.c.cosine, v.c.cosine, no_rank, v.c.created_at, limit)
    if mode == "lexical":
        assert text is not None
        lex = found.by_keywords(text)
        no_cosine = cast(null(), F8)
        top = _best_first(
            lex.c.key, lex.c.lexical, no_cosine, lex.c.lexical, lex.c.created_at, limit
        ).subquery("top")
        if vector is None:
            return select(top).order_by(top.c.score.desc(), top.c.created_at.desc(), top.c.key)
        t = _with_signals(top, found, text=None, vector=vector).subquery("shown")
        return select(t).order_by(t.c.score.desc(), t.c.created_at.desc(), t.c.key)
    assert vector is not None and text is not None
    v = found.by_meaning(vector)
    lex = found.by_keywords(text)
    fused = (
        select(
            func.coalesce(v.c.key, lex.c.key).label("key"),
            v.c.cosine,
            lex.c.lexical,
            func.coalesce(v.c.created_at, lex.c.created_at).label("created_at"),
        )
        .select_from(v.join(lex, v.c.key == lex.c.key, full=True))
        .subquery("fused")
    )
    # OFFSET 0: each candidate's signals computed here, once; inlined, the cosine and the
    # BM25 probe would be computed again for every window and term of the blend that
    # reads them
    both = (
        _with_signals(fused, found, text=text, vector=vector)
        .offset(literal_column("0"))
        .subquery("candidates")
    )
    scored = _blended(both, now=now, preset=preset).subquery("scored")
    c = scored.c
    return _best_first(
        c.key, c.score, c.cosine, c.lexical, c.created_at, limit, terms=(c.meaning, c.keywords)
    )


def _best_first(
    key: Any,
    score: Any,
    cosine: Any,
    lexical: Any,
    created_at: Any,
    limit: int,
    *,
    terms: tuple[Any, Any] | None = None,
) -> Select[Any]:
    """Rows ``(key, score, cosine, lexical, created_at, meaning, keywords)``, the first
    ``limit`` by score, newer first on a tie, then by key: the order of
    :func:`server.domain.ranking.rank`. ``meaning`` and ``keywords`` are a hybrid
    score's terms (NULL in one signal's modes)."""
    none = cast(null(), F8)
    meaning, keywords = terms if terms is not None else (none, none)
    columns = (key, score, cosine, lexical, created_at, meaning, keywords)
    named = zip(columns, _ROW, strict=True)
    return (
        select(*(c if getattr(c, "name", None) == name else c.label(name) for c, name in named))
        .order_by(score.desc(), created_at.desc(), key)
        .limit(bindparam("limit", limit))
    )


def _with_signals(
    rows: Any, found: Candidates, *, text: str | None, vector: Sequence[float] | None
) -> Select[Any]:
    """``rows`` (every column kept) with both signals: a missing cosine read from the row
    (joined by its key), a missing BM25 score that of a row the full-text query matches,
    from the row's postings. Computed for these rows only: the candidates, or the rows a
    search returns."""
    source = found.source
    joined = rows.join(source.from_, source.by_key(rows.c.key))
    cosine: Any = rows.c.cosine
    if vector is not None:
        cosine = func.coalesce(cosine, literal_column("1") - distance(source.embedding, vector))
    lexical: Any = rows.c.lexical
    if text is not None:
        # a probe of the row's postings: for a few dozen rows, cheaper than joining them
        # to every document the keyword read found
        score = found.keyword_score(text, rows.c.key)
        lexical = func.coalesce(
            lexical, case((source.tsv.op("@@")(tsquery(text)), score), else_=cast(null(), F8))
        )
    kept = [c for c in rows.c if c.name not in ("cosine", "lexical")]
    return select(*kept, cosine.label("cosine"), lexical.label("lexical")).select_from(joined)


# The columns of a search's rows; a column already so named keeps its name unlabelled.
_ROW = ("key", "score", "cosine", "lexical", "created_at", "meaning", "keywords")


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
    that keeps one statement per shape runs it with these
    (:func:`server.storage.hybrid_run.scanned_rows`)."""
    _check_min_score(min_score)
    params: dict[str, Any] = {"min_score": float(min_score), "limit": limit, "now": now}
    if text is not None:
        params["text"] = text
    if vector is not None:
        params["q"] = list(vector)
    return params


__all__ = [
    "MODES",
    "build_search",
    "search_parameters",
]
