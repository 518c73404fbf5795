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
``v FULL JOIN l`` scored by the preset's formula in ``float8`` in the
reference's order of operations, so scores equal :func:`rank`'s bit for bit;
ordered by ``score DESC, created_at DESC, key``; the first ``limit``, each then
joined to its row for the signal its list did not compute (the cosine of a row
found by keywords alone, the BM25 score of one found by meaning alone): for the
rows returned only. ``vector`` and ``lexical`` modes build only their own
candidate list.
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


def _fused_score(
    v: Any, lex: Any, created_at: ColumnElement[Any], *, now: datetime, preset: FusionPreset
) -> ColumnElement[Any]:
    k = float_param("rrf_k", preset.rrf_k)
    vterm = func.coalesce(float_param("vector_weight", preset.vector_weight) / (k + v.c.vrank), 0)
    lterm = func.coalesce(
        float_param("lexical_weight", preset.lexical_weight) / (k + lex.c.lrank), 0
    )
    age = cast(extract("epoch", bindparam("now", now) - created_at), F8)
    days = func.greatest(age, literal_column("0")) / float_param("day", 86_400.0)
    fresh = func.power(
        literal_column("0.5::float8"),
        days / float_param("half_life", preset.recency_half_life_days),
    )
    recency = (
        float_param("recency_weight", preset.recency_weight)
        * fresh
        / float_param("k1", preset.rrf_k + 1)
    )
    return (vterm + lterm) + recency


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
    """The one statement of a search; rows ``(key, score, cosine, lexical, created_at)``."""
    _check(mode=mode, text=text, vector=vector, min_score=min_score, limit=limit)
    found = Candidates(source, preset.pool_size(limit), min_score, path, seeking=preset.seeking)
    if mode == "vector":
        assert vector is not None
        v = found.by_meaning(vector)
        no_rank = cast(null(), F8)
        top = _first(v.c.key, v.c.cosine, v.c.cosine, no_rank, v.c.created_at, limit)
    elif mode == "lexical":
        assert text is not None
        lex = found.by_keywords(text)
        no_cosine = cast(null(), F8)
        top = _first(lex.c.key, lex.c.lexical, no_cosine, lex.c.lexical, lex.c.created_at, limit)
    else:
        assert vector is not None and text is not None
        v = found.by_meaning(vector)
        lex = found.by_keywords(text)
        created_at = func.coalesce(v.c.created_at, lex.c.created_at)
        fused = (
            select(
                func.coalesce(v.c.key, lex.c.key).label("key"),
                _fused_score(v, lex, created_at, now=now, preset=preset).label("score"),
                v.c.cosine,
                lex.c.lexical,
                created_at.label("created_at"),
            )
            .select_from(v.join(lex, v.c.key == lex.c.key, full=True))
            .subquery("fused")
        )
        c = fused.c
        top = _first(c.key, c.score, c.cosine, c.lexical, c.created_at, limit)
    return _signals(top.subquery("top"), found, text=text, vector=vector)


def _first(
    key: Any, score: Any, cosine: Any, lexical: Any, created_at: Any, limit: int
) -> Select[Any]:
    """Rows ``(key, score, cosine, lexical, created_at)``, the first ``limit`` by score,
    newer first on a tie, then by key: the order of :func:`server.domain.ranking.rank`."""
    named = zip((key, score, cosine, lexical, created_at), _ROW, strict=True)
    return (
        select(*(c if getattr(c, "name", None) == name else c.label(name) for c, name in named))
        .order_by(score.desc(), created_at.desc(), key)
        .limit(bindparam("limit", limit))
    )


def _signals(
    top: Any, found: Candidates, *, text: str | None, vector: Sequence[float] | None
) -> Select[Any]:
    """The first rows, each with both signals: the cosine of a row found by keywords alone
    and the BM25 score of one found by meaning alone (when it matches the full-text
    query), read for those rows only, from each row joined by its key."""
    source = found.source
    cosine = top.c.cosine
    if vector is not None:
        cosine = func.coalesce(cosine, literal_column("1") - distance(source.embedding, vector))
    lexical = top.c.lexical
    if text is not None:
        matches = source.tsv.op("@@")(tsquery(text))
        lexical = func.coalesce(
            lexical, case((matches, found.keyword_score(text, top.c.key)), else_=cast(null(), F8))
        )
    return (
        select(
            top.c.key,
            top.c.score,
            cosine.label("cosine"),
            lexical.label("lexical"),
            top.c.created_at,
        )
        .select_from(top)
        .join(source.from_, source.by_key(top.c.key))
        .order_by(top.c.score.desc(), top.c.created_at.desc(), top.c.key)
    )


# The columns of a search's rows; a column already so named keeps its name unlabelled.
_ROW = ("key", "score", "cosine", "lexical", "created_at")


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
