"""The statement of a hybrid history search (R62, ranking in context), built once per
shape and run with the search's values as parameters (:mod:`server.storage.built`).

The candidates of a hybrid search (:meth:`server.storage.candidates.Candidates.keys`, the
history preset's pool; by meaning, the session's parts ranked by the embedding's bits
and the best of them exactly, :mod:`server.storage.nearest`) name turns; every part of
those turns is scored as :mod:`server.domain.history` states (its cosine and keyword
weight, its predecessor's, its successor's and its turn's, a gain when it was kept in
a period the query names, recency), best first.

A part's keyword weight is its BM25 score (:mod:`server.storage.bm25`, over the
session's postings), from the same terms and weights that find the keyword candidates.

What changes the statement's text is its :class:`ContextShape` (a preview reader or
not, web-search syntax, whether the query names a period, the limit); everything else
is a parameter (:func:`context_parameters`): the reader's agent, session and turn, the
query text and vector, the periods (one ``tstzmultirange``), ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Text,
    Uuid,
    and_,
    bindparam,
    case,
    extract,
    func,
    literal_column,
    select,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import TSTZMULTIRANGE
from sqlalchemy.orm import aliased, defer
from sqlmodel import col

from server.domain import history as rules
from server.domain.dates import Period
from server.domain.history import HistoryReader
from server.models import HistoryEvent, HistoryPart, table
from server.models.memory import EMBEDDING_DIM
from server.storage.built import built_once
from server.storage.candidates import Candidates
from server.storage.history_gate import history_condition
from server.storage.hybrid import search_parameters
from server.storage.nearest import Path
from server.storage.reaches import history_postings
from server.storage.search_terms import F8, cosine, float_param, uses_web_syntax
from server.storage.source import SearchSource

# Parts have no vector index (migration 0006): a search ranks its session's parts by the
# embedding's bits, read from the index of the session's parts, and the best of them
# exactly (migration 0012, server.storage.nearest).
PATH: Path = "bits"

_ZERO: ColumnElement[Any] = literal_column("0::float8")


@dataclass(frozen=True, slots=True)
class ContextShape:
    """What decides the text of a history search's statement."""

    preview: bool
    web: bool
    dated: bool  # the query names a period
    limit: int
    path: Path = PATH  # how the candidates by meaning are found (forced by the bench)


def source(reader: HistoryReader) -> SearchSource:
    """The parts ``reader`` may search (R64), with the postings of those parts (their
    ranges admit exactly those parts: the keyword candidates are read from them)."""
    return SearchSource.of(
        HistoryPart,
        where=history_condition(reader),
        keywords=history_postings(reader),
        bounded=True,
        agent=reader.agent_id,
    )


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


def _reader(shape: ContextShape) -> HistoryReader:
    """A reader whose agent, session and turn are the parameters ``reader_*``."""
    uid: Uuid[Any] = Uuid()
    return HistoryReader(
        agent_id=cast(Any, bindparam("reader_agent", type_=uid)),
        session_id=cast(Any, bindparam("reader_session", type_=uid)),
        turn_number=cast(Any, bindparam("reader_turn", type_=Integer())),
        preview=shape.preview,
    )


@built_once
def context_statement(shape: ContextShape) -> Select[Any]:
    """The statement of a hybrid history search of ``shape``: rows ``(key, score, cosine,
    lexical, created_at)``, best first, the first ``limit``."""
    reader = _reader(shape)
    vector = [0.0] * EMBEDDING_DIM
    text = '"' if shape.web else ""  # the query is the parameter ``text``
    found = Candidates(
        source(reader),
        rules.PRESET.pool_size(shape.limit),
        0.0,
        shape.path,
        seeking=rules.PRESET.seeking,
    )
    seeds = found.keys(vector, text)
    # a part's keyword weight: its BM25 score (0: it holds no term of the query), from
    # the same terms and weights as the candidates: the sum the keyword read made of its
    # postings (every posting was read) or a probe of them
    lexical = found.lexical_of(text, table(HistoryPart).c.id)
    weight = func.coalesce(lexical.score, _ZERO)
    seed = aliased(HistoryPart, name="seed")
    turns = select(col(seed.turn_number)).where(
        col(seed.agent_id) == reader.agent_id, col(seed.id).in_(select(seeds.c.key))
    )
    events = and_(
        col(HistoryEvent.id) == col(HistoryPart.event_id),
        col(HistoryEvent.agent_id) == col(HistoryPart.agent_id),
    )
    joined = table(HistoryPart).join(table(HistoryEvent), events)
    if lexical.joined is not None:
        joined = joined.outerjoin(lexical.joined, lexical.on)
    scored = (
        select(
            col(HistoryPart.id).label("key"),
            col(HistoryPart.turn_number).label("turn"),
            col(HistoryPart.created_at).label("created_at"),
            col(HistoryEvent.sequence).label("sequence"),
            col(HistoryPart.part).label("part"),
            cosine(HistoryPart.embedding, vector).label("cosine"),
            weight.label("lexical"),
        )
        .select_from(joined)
        .where(history_condition(reader), col(HistoryPart.turn_number).in_(turns))
        # OFFSET 0: each part's cosine and keyword weight computed here, once, so that the
        # windows above sort those numbers, not the parts' vectors they are computed from
        .offset(literal_column("0"))
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
    now = bindparam("now", type_=blended.c.created_at.type)
    age = sql_cast(extract("epoch", now - blended.c.created_at), F8)
    fresh = func.power(
        literal_column("0.5::float8"),
        func.greatest(age, _ZERO)
        / float_param("half_life", context.fusion.recency_half_life_days * 86_400),
    )
    dated: ColumnElement[Any] = _ZERO
    if shape.dated:
        # the periods the query names, one multirange (computed once, not once a row)
        periods = select(
            sql_cast(bindparam("periods", type_=Text()), TSTZMULTIRANGE)
        ).scalar_subquery()
        within = periods.op("@>")(blended.c.created_at)
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
        .limit(bindparam("limit", shape.limit))
    )


@built_once
def context_rows(shape: ContextShape) -> Select[Any]:
    """:func:`context_statement` with each part and its event: rows ``(part, event,
    score)``, best first (no vectors: parsing them costs more than the query)."""
    top = context_statement(shape).subquery("top")
    agent = _reader(shape).agent_id  # every table on the reader's agent's shard (Citus)
    return (
        select(HistoryPart, HistoryEvent, top.c.score)
        .select_from(top)
        .join(
            HistoryPart,
            and_(col(HistoryPart.id) == top.c.key, col(HistoryPart.agent_id) == agent),
        )
        .join(
            HistoryEvent,
            and_(
                col(HistoryEvent.id) == col(HistoryPart.event_id),
                col(HistoryEvent.agent_id) == agent,
            ),
        )
        .options(defer(HistoryPart.embedding), defer(HistoryPart.search_tsv))
        .order_by(top.c.score.desc(), top.c.created_at.desc(), top.c.key)
    )


def shape_of(
    reader: HistoryReader,
    *,
    text: str,
    periods: Sequence[Period],
    limit: int,
    path: Path = PATH,
) -> ContextShape:
    """The shape of a search: what decides its statement's text."""
    return ContextShape(
        preview=reader.preview,
        web=uses_web_syntax(text),
        dated=bool(periods),
        limit=limit,
        path=path,
    )


def context_parameters(
    reader: HistoryReader,
    *,
    text: str,
    vector: Sequence[float],
    min_score: float,
    limit: int,
    now: datetime,
    periods: Sequence[Period],
) -> dict[str, Any]:
    """The values of a statement of :func:`context_statement` for one search."""
    params = search_parameters(text=text, vector=vector, min_score=min_score, limit=limit, now=now)
    params["reader_agent"] = reader.agent_id
    params["reader_session"] = reader.session_id
    params["reader_turn"] = reader.turn_number
    if periods:
        ranges = (f'["{a.isoformat()}","{b.isoformat()}")' for a, b in periods)
        params["periods"] = "{" + ",".join(ranges) + "}"
    return params


__all__ = [
    "PATH",
    "ContextShape",
    "context_parameters",
    "context_rows",
    "context_statement",
    "shape_of",
    "source",
]
