"""search_history (R62-R64): ranking the session's kept events for a turn.

A search is an execution of the native ``search_history`` tool inside an open
turn (R63), recorded like the memory tools: its input, its output (the events
it returned), a ``tool.result`` (or, refused, a ``tool.error``) transcript
event, a RETRIEVED output use per part that reached the model, and for a query
the ``embed`` usage of its embedding (an invocation no limit counts, and a
``usage`` transcript event).

With a query it ranks the parts the reader may see (:func:`history_condition`,
R64) in context (:func:`context_search`): the candidates of a hybrid search
(:func:`server.storage.hybrid.candidate_keys`, the history fusion preset's pool)
and every part of their turns, each scored by its cosine and keyword weight, its
predecessor's, its successor's and its turn's, and by whether it was kept in a
period the query names (:mod:`server.domain.history`,
:func:`server.domain.dates.query_periods`); each result is one part. The keyword
candidates are found without the words too common in the session to tell its
parts apart (:func:`keywords_of`,
:func:`server.domain.history.keyword_query`), and the keyword weight is the
words' inverse document frequency, both counted on the parts the reader may see
in one small statement before the search. With
``ids`` it reads those events whole, in the order asked; an id the reader may
not see is left out, as an unknown one is.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Text,
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
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TSQUERY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlmodel import col

from server.domain import history as rules
from server.domain.dates import Period, query_periods
from server.domain.history import HistoryReader
from server.domain.ranking import Mode
from server.domain.text import check_text
from server.embedding import Embedder
from server.errors import BadInputError, NotAllowedError
from server.models import (
    Execution,
    HistoryEvent,
    HistoryPart,
    table,
)
from server.services.history_reads import EventDetails, event_details, events_by_id
from server.services.tools import CallRef, record_embed, record_retrieved, record_tool
from server.services.turns import TurnScope
from server.storage.candidates import SearchSource
from server.storage.history_gate import history_condition
from server.storage.hybrid import candidate_keys
from server.storage.hybrid_run import Hit, hits, hybrid_search, scanned_rows
from server.storage.search_terms import float_param, tsquery, uses_web_syntax

TOOL = "search_history"
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
MAX_QUERY = 2_000
MAX_IDS = 50


@dataclass(frozen=True, slots=True)
class HistoryHit:
    """One result: a part of an event (``part`` set), or the event whole (``ids``)."""

    event: HistoryEvent
    part: HistoryPart | None
    score: float | None
    details: EventDetails

    @property
    def text(self) -> str:
        return self.part.text if self.part is not None else self.event.text

    def to_json(self) -> dict[str, Any]:
        return {
            "event": str(self.event.id),
            "part": str(self.part.id) if self.part is not None else None,
            "turn": self.event.turn_number,
            "partNumber": self.part.part if self.part is not None else None,
            "parts": self.details.parts[0].parts if self.details.parts else 1,
            "score": self.score,
        }


@dataclass(frozen=True, slots=True)
class HistorySearch:
    execution: Execution
    hits: list[HistoryHit]


def reader_of(scope: TurnScope) -> HistoryReader:
    turn = scope.turn
    return HistoryReader(
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        turn_number=turn.number,
        preview=turn.preview,
    )


async def search_history(
    db: AsyncSession,
    embedder: Embedder,
    *,
    ref: CallRef,
    query: str | None = None,
    ids: Sequence[uuid.UUID] | None = None,
    limit: int | None = None,
) -> HistorySearch:
    """Run the native ``search_history`` tool (R62, R63); a refusal is recorded failed."""
    args = {
        "query": query,
        "ids": None if ids is None else [str(i) for i in ids],
        "limit": limit,
    }

    async def body(scope: TurnScope, execution: Execution) -> list[HistoryHit]:
        hits = await _search(db, embedder, scope, execution, query=query, ids=ids, limit=limit)
        parts = [
            (rank, part.id)
            for rank, hit in enumerate(hits, start=1)
            for part in ([hit.part] if hit.part is not None else hit.details.parts)
        ]
        await record_retrieved(db, scope, execution, parts=parts)
        return hits

    execution, hits = await record_tool(
        db,
        ref=ref,
        name=TOOL,
        input=args,
        body=body,
        output=lambda hits: {"events": [h.to_json() for h in hits]},
    )
    return HistorySearch(execution=execution, hits=hits)


def _check(query: str | None, ids: Sequence[uuid.UUID] | None, limit: int | None) -> int:
    if (query is None) == (ids is None):
        raise BadInputError(
            "pass a query to search, or ids to read events whole, not both", field="query"
        )
    if query is not None:
        check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    if ids is not None and not 1 <= len(ids) <= MAX_IDS:
        raise BadInputError(f"ids must hold 1 to {MAX_IDS} ids", field="ids")
    the_limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    return the_limit


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


# Parts have no vector index (migration 0006): a search ranks its session's parts
# exactly, and runs under the planner's own settings. Those that steer a search to an
# HNSW index (server.storage.hybrid_run.scan_settings, enable_sort off among them) would
# only make it avoid the sorts it needs (docs/scaling.md, "Figures behind the code").
EXACT = True


def _source(reader: HistoryReader) -> SearchSource:
    return SearchSource(
        from_=table(HistoryPart),
        key=table(HistoryPart).c.id,
        embedding=HistoryPart.embedding,
        tsv=HistoryPart.search_tsv,
        created_at=table(HistoryPart).c.created_at,
        where=history_condition(reader),
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
    source = _source(reader)
    seeds = candidate_keys(
        source=source,
        text=keywords.text,
        vector=vector,
        min_score=min_score,
        pool=rules.PRESET.pool_size(limit),
        exact=EXACT,
    )
    now = now if now is not None else datetime.now(UTC)
    f8: DOUBLE_PRECISION[float] = DOUBLE_PRECISION()
    q = bindparam("q", list(vector), type_=HistoryPart.embedding.type)
    cosine = literal_column("1") - HistoryPart.embedding.op("<=>", return_type=f8)(q)
    tsv = HistoryPart.search_tsv
    lexical: ColumnElement[Any]
    if keywords.weights:
        lexical = sum(
            (
                case(
                    (
                        tsv.op("@@")(cast(bindparam(f"kw{i}", stems), TSQUERY)),
                        float_param(f"kwt{i}", weight),
                    ),
                    else_=literal_column("0::float8"),
                )
                for i, (stems, weight) in enumerate(keywords.weights)
            ),
            start=literal_column("0::float8"),
        )
    else:
        query = tsquery(keywords.text)
        lexical = case(
            (tsv.op("@@")(query), cast(func.ts_rank_cd(tsv, query), f8)),
            else_=literal_column("0::float8"),
        )
    seed = aliased(HistoryPart, name="seed")
    turns = select(col(seed.turn_number)).where(col(seed.id).in_(select(seeds.c.key)))
    scored = (
        select(
            col(HistoryPart.id).label("key"),
            col(HistoryPart.turn_number).label("turn"),
            col(HistoryPart.created_at).label("created_at"),
            col(HistoryEvent.sequence).label("sequence"),
            col(HistoryPart.part).label("part"),
            cosine.label("cosine"),
            lexical.label("lexical"),
        )
        .select_from(HistoryPart)
        .join(HistoryEvent, col(HistoryEvent.id) == col(HistoryPart.event_id))
        .where(history_condition(reader), col(HistoryPart.turn_number).in_(turns))
        .subquery("scored")
    )
    # a part gains context_share of the lead the part before it in its turn has over it,
    # and next_share of the lead of the part after it
    share = float_param("context_share", rules.CONTEXT.context_share)
    next_share = float_param("next_share", rules.CONTEXT.next_share)
    zero: ColumnElement[Any] = literal_column("0::float8")

    def in_context(signal: Any) -> Any:
        order = (scored.c.sequence, scored.c.part)
        before = func.lag(signal).over(partition_by=scored.c.turn, order_by=order)
        after = func.lead(signal).over(partition_by=scored.c.turn, order_by=order)
        return (
            signal
            + share * func.greatest(func.coalesce(before - signal, zero), zero)
            + next_share * func.greatest(func.coalesce(after - signal, zero), zero)
        )

    near = select(
        scored, in_context(scored.c.cosine).label("cs"), in_context(scored.c.lexical).label("ls")
    ).subquery("near")
    low = func.min(near.c.cs).over()
    spread = func.nullif(func.max(near.c.cs).over() - low, zero)
    top = func.nullif(func.max(near.c.ls).over(), zero)
    context = rules.CONTEXT
    blend = float_param("cosine_share", context.cosine_share) * func.coalesce(
        (near.c.cs - low) / spread, zero
    ) + float_param("keyword_share", 1.0 - context.cosine_share) * func.coalesce(
        near.c.ls / top, zero
    )
    blended = select(near, blend.label("blend")).subquery("blended")
    # recency as memory search weighs it (R41, ContextPreset.recency_weight): it settles
    # near-ties, it never outranks a clear match
    age = cast(extract("epoch", bindparam("now", now) - blended.c.created_at), f8)
    fresh = func.power(
        literal_column("0.5::float8"),
        func.greatest(age, zero)
        / float_param("half_life", context.fusion.recency_half_life_days * 86_400),
    )
    dated: ColumnElement[Any] = zero
    if periods:
        within = or_(
            *(
                and_(blended.c.created_at >= bindparam(f"from{i}", start),
                     blended.c.created_at < bindparam(f"until{i}", end))
                for i, (start, end) in enumerate(periods)
            )
        )  # fmt: skip
        dated = case((within, float_param("date_share", context.date_share)), else_=zero)
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
        func.nullif(blended.c.lexical, zero).label("lexical"),
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
            reader=reader, keywords=keywords, vector=vector, min_score=min_score, limit=limit,
            now=now, periods=query_periods(query, now=now),
        )  # fmt: skip
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


async def _search(
    db: AsyncSession,
    embedder: Embedder,
    scope: TurnScope,
    execution: Execution,
    *,
    query: str | None,
    ids: Sequence[uuid.UUID] | None,
    limit: int | None,
) -> list[HistoryHit]:
    if scope.turn.session_id is None:
        raise NotAllowedError(
            "this agent runs without sessions, so it has no session history to search",
            tool=TOOL,
        )
    if scope.config.history is None:
        raise NotAllowedError(
            "session history is off for this agent version (set harness.history.index to "
            "keep and search it)",
            tool=TOOL,
        )
    the_limit = _check(query, ids, limit)
    reader = reader_of(scope)
    if ids is not None:
        wanted = list(dict.fromkeys(ids))
        rows = (
            await db.scalars(
                select(HistoryEvent).where(
                    col(HistoryEvent.id).in_(wanted),
                    history_condition(reader, HistoryEvent),
                )
            )
        ).all()
        found = {r.id: r for r in rows}
        chosen = [found[i] for i in wanted if i in found][:the_limit]
        details = await event_details(db, chosen)
        return [HistoryHit(e, None, None, details[e.id]) for e in chosen]
    assert query is not None
    vector, tokens = await embedder.embed_one(query)
    await record_embed(db, scope, execution, embedder, tokens)
    found_hits = await rank_parts(db, reader=reader, query=query, vector=vector, limit=the_limit)
    parts = {
        p.id: p
        for p in (
            await db.scalars(
                select(HistoryPart).where(col(HistoryPart.id).in_([h.key for h in found_hits]))
            )
        ).all()
    }
    events = await events_by_id(db, {p.event_id for p in parts.values()})
    details = await event_details(db, list(events.values()))
    return [
        HistoryHit(
            events[parts[h.key].event_id], parts[h.key], h.score, details[parts[h.key].event_id]
        )
        for h in found_hits
    ]


async def load_hits(db: AsyncSession, stored: Sequence[dict[str, Any]]) -> list[HistoryHit]:
    """The hits of a stored search output (an idempotent replay reloads them)."""
    events = await events_by_id(db, {uuid.UUID(h["event"]) for h in stored})
    part_ids = [uuid.UUID(h["part"]) for h in stored if h["part"]]
    parts = (
        {
            p.id: p
            for p in (
                await db.scalars(select(HistoryPart).where(col(HistoryPart.id).in_(part_ids)))
            ).all()
        }
        if part_ids
        else {}
    )
    details = await event_details(db, list(events.values()))
    hits = []
    for h in stored:
        event = events.get(uuid.UUID(h["event"]))
        if event is None:
            continue
        part = parts.get(uuid.UUID(h["part"])) if h["part"] else None
        hits.append(HistoryHit(event, part, h["score"], details[event.id]))
    return hits
