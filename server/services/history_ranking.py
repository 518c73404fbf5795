"""The ranking of a history search (R62): the statement that ranks the parts a reader
may see (:func:`server.storage.history_gate.history_condition`, R64) for a query.

A hybrid search ranks in context (:func:`context_search`): the candidates of a
hybrid search (:func:`server.storage.hybrid.candidate_keys`, the history fusion
preset's pool) and every part of their turns, each scored by its cosine and
keyword weight, its predecessor's, its successor's and its turn's, and by
whether it was kept in a period the query names (:mod:`server.domain.history`,
:func:`server.domain.dates.query_periods`); each result is one part. The
keywords come from :mod:`server.services.history_keywords`. ``vector`` and
``lexical`` modes rank one signal as memory search does; they and other
thresholds are for evaluation (bench/locomo_history.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    cast,
    extract,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlmodel import col

from server.domain import history as rules
from server.domain.dates import Period, query_periods
from server.domain.history import HistoryReader
from server.domain.ranking import Mode
from server.models import HistoryEvent, HistoryPart
from server.services.history_keywords import Keywords, keywords_of
from server.storage.candidates import SearchSource
from server.storage.history_gate import history_condition
from server.storage.hybrid import candidate_keys
from server.storage.hybrid_run import Hit, hits, hybrid_search, scanned_rows
from server.storage.search_terms import F8, cosine, float_param, tsquery

# Parts have no vector index (migration 0006): a search ranks its session's parts
# exactly, and runs under the planner's own settings. Those that steer a search to an
# HNSW index (server.storage.hybrid_run.scan_settings, enable_sort off among them)
# would only make it avoid the sorts it needs (docs/scaling.md, "Figures behind the
# code").
EXACT = True

_ZERO: ColumnElement[Any] = literal_column("0::float8")


def _source(reader: HistoryReader) -> SearchSource:
    return SearchSource.of(HistoryPart, where=history_condition(reader))


def _keyword_weight(keywords: Keywords) -> ColumnElement[Any]:
    """A part's keyword weight: the sum of the weights of the query's keywords it holds,
    or, without weights (web-search syntax), its ``ts_rank_cd``; 0 when it matches none."""
    tsv = HistoryPart.search_tsv
    if keywords.weights:
        return sum(
            (
                case(
                    (
                        tsv.op("@@")(cast(bindparam(f"kw{i}", stems), TSQUERY)),
                        float_param(f"kwt{i}", weight),
                    ),
                    else_=_ZERO,
                )
                for i, (stems, weight) in enumerate(keywords.weights)
            ),
            start=_ZERO,
        )
    query = tsquery(keywords.text)
    return case((tsv.op("@@")(query), cast(func.ts_rank_cd(tsv, query), F8)), else_=_ZERO)


def _in_context(scored: Any, signal: Any) -> Any:
    """``signal`` plus ``context_share`` of the lead the part before it in its turn has
    over it, and ``next_share`` of the lead of the part after it."""
    order = (scored.c.sequence, scored.c.part)
    before = func.lag(signal).over(partition_by=scored.c.turn, order_by=order)
    after = func.lead(signal).over(partition_by=scored.c.turn, order_by=order)
    share = float_param("context_share", rules.CONTEXT.context_share)
    next_share = float_param("next_share", rules.CONTEXT.next_share)
    return (
        signal
        + share * func.greatest(func.coalesce(before - signal, _ZERO), _ZERO)
        + next_share * func.greatest(func.coalesce(after - signal, _ZERO), _ZERO)
    )


def context_search(
    *,
    reader: HistoryReader,
    keywords: Keywords,
    vector: Sequence[float],
    min_score: float,
    limit: int,
    now: datetime | None = None,
    periods: Sequence[Period] = (),
) -> Select[Any]:
    """The statement of a hybrid history search (R62, ranking in context): the turns of
    the hybrid candidates (:func:`server.storage.hybrid.candidate_keys`), every part of
    them scored as :mod:`server.domain.history` states, a part kept in one of
    ``periods`` (those the query names) gaining; rows ``(key, score, cosine, lexical,
    created_at)``, best first, the first ``limit``."""
    seeds = candidate_keys(
        source=_source(reader),
        text=keywords.text,
        vector=vector,
        min_score=min_score,
        pool=rules.PRESET.pool_size(limit),
        exact=EXACT,
    )
    now = now if now is not None else datetime.now(UTC)
    seed = aliased(HistoryPart, name="seed")
    turns = select(col(seed.turn_number)).where(
        col(seed.agent_id) == reader.agent_id, col(seed.id).in_(select(seeds.c.key))
    )
    scored = (
        select(
            col(HistoryPart.id).label("key"),
            col(HistoryPart.turn_number).label("turn"),
            col(HistoryPart.created_at).label("created_at"),
            col(HistoryEvent.sequence).label("sequence"),
            col(HistoryPart.part).label("part"),
            cosine(HistoryPart.embedding, vector).label("cosine"),
            _keyword_weight(keywords).label("lexical"),
        )
        .select_from(HistoryPart)
        .join(
            HistoryEvent,
            and_(
                col(HistoryEvent.id) == col(HistoryPart.event_id),
                col(HistoryEvent.agent_id) == col(HistoryPart.agent_id),
            ),
        )
        .where(history_condition(reader), col(HistoryPart.turn_number).in_(turns))
        .subquery("scored")
    )
    near = select(
        scored,
        _in_context(scored, scored.c.cosine).label("cs"),
        _in_context(scored, scored.c.lexical).label("ls"),
    ).subquery("near")
    low = func.min(near.c.cs).over()
    spread = func.nullif(func.max(near.c.cs).over() - low, _ZERO)
    top = func.nullif(func.max(near.c.ls).over(), _ZERO)
    context = rules.CONTEXT
    blend = float_param("cosine_share", context.cosine_share) * func.coalesce(
        (near.c.cs - low) / spread, _ZERO
    ) + float_param("keyword_share", 1.0 - context.cosine_share) * func.coalesce(
        near.c.ls / top, _ZERO
    )
    blended = select(near, blend.label("blend")).subquery("blended")
    # recency as memory search weighs it (R41, ContextPreset.recency_weight): it settles
    # near-ties, it never outranks a clear match
    age = cast(extract("epoch", bindparam("now", now) - blended.c.created_at), F8)
    fresh = func.power(
        literal_column("0.5::float8"),
        func.greatest(age, _ZERO)
        / float_param("half_life", context.fusion.recency_half_life_days * 86_400),
    )
    dated: ColumnElement[Any] = _ZERO
    if periods:
        within = or_(
            *(
                and_(
                    blended.c.created_at >= bindparam(f"from{i}", start),
                    blended.c.created_at < bindparam(f"until{i}", end),
                )
                for i, (start, end) in enumerate(periods)
            )
        )
        dated = case((within, float_param("date_share", context.date_share)), else_=_ZERO)
    score = (
        blended.c.blend
        + float_param("turn_share", context.turn_share)
        * func.max(blended.c.blend).over(partition_by=blended.c.turn)
        + dated
        + float_param("recency_weight", context.recency_weight) * fresh
    )
    ranked = select(
        blended.c.key,
        score.label("score"),
        blended.c.cosine,
        func.nullif(blended.c.lexical, _ZERO).label("lexical"),
        blended.c.created_at,
    ).subquery("ranked")
    return (
        select(ranked)
        .order_by(ranked.c.score.desc(), ranked.c.created_at.desc(), ranked.c.key)
        .limit(bindparam("limit", limit))
    )


async def rank_parts(
    db: AsyncSession,
    *,
    reader: HistoryReader,
    query: str,
    vector: Sequence[float] | None,
    limit: int,
    mode: Mode = "hybrid",
    min_score: float = rules.MIN_SCORE,
) -> list[Hit]:
    """The parts ``reader`` may see, ranked for ``query`` (R62): ``hybrid`` in context
    (:func:`context_search`, keywords by :func:`keywords_of`); ``vector`` and ``lexical``
    (the memory search's ranking of one signal, keywords by :func:`keywords_of`) and
    other thresholds are for evaluation (bench/locomo_history.py)."""
    if mode == "vector":
        keywords = Keywords(query)
    else:
        keywords = await keywords_of(db, reader=reader, query=query)
    if mode == "hybrid" and vector is not None:
        if limit == 0:
            return []
        now = datetime.now(UTC)
        stmt = context_search(
            reader=reader,
            keywords=keywords,
            vector=vector,
            min_score=min_score,
            limit=limit,
            now=now,
            periods=query_periods(query, now=now),
        )
        rows = await scanned_rows(
            db, stmt, mode=mode, limit=limit, preset=rules.PRESET, exact=EXACT
        )
        return hits(rows)
    return await hybrid_search(
        db,
        source=_source(reader),
        text=keywords.text,
        vector=vector,
        mode=mode,
        min_score=min_score,
        limit=limit,
        preset=rules.PRESET,
        exact=EXACT,
    )


__all__ = ["EXACT", "context_search", "rank_parts"]
