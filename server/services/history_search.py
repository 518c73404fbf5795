"""search_history (R62-R64): ranking the session's kept events for a turn.

A search is an execution of the native ``search_history`` tool inside an open
turn (R63), recorded like the memory tools: its input, its output (the events
it returned), a ``tool.result`` (or, refused, a ``tool.error``) transcript
event, a RETRIEVED output use per part that reached the model, and for a query
the ``embed`` usage of its embedding (an invocation no limit counts, and a
``usage`` transcript event).

With a query it ranks the parts the reader may see (:func:`history_condition`,
R64) by :func:`server.storage.hybrid.hybrid_search` with the memory search's
fusion preset; each result is one part. The keyword half reads the query
without the words too common in the session to tell its parts apart
(:func:`keyword_text`, :func:`server.domain.history.keyword_query`), counted on
the parts the reader may see in one small statement before the search. With
``ids`` it reads those events whole, in the order asked; an id the reader may
not see is left out, as an unknown one is.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, false, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import history as rules
from server.domain.history import HistoryReader
from server.domain.ranking import Mode
from server.embedding import Embedder
from server.errors import BadInputError, NotAllowedError
from server.models import (
    Execution,
    HistoryEvent,
    HistoryPart,
    OutputUse,
)
from server.services.history_reads import EventDetails, event_details, events_by_id
from server.services.memory import CallRef, record_tool
from server.services.search import record_embed
from server.services.turns import TurnScope
from server.storage.hybrid import Hit, SearchSource, hybrid_search, uses_web_syntax

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


def history_condition(reader: HistoryReader, m: Any = HistoryPart) -> ColumnElement[bool]:
    """The SQL twin of :func:`server.domain.history.visible_part` over ``m`` (a part or
    an event: both carry the agent, session, turn number and preview flag)."""
    if reader.session_id is None:
        return false()
    conds = [
        m.agent_id == reader.agent_id,
        m.session_id == reader.session_id,
        m.turn_number < reader.turn_number,
    ]
    if not reader.preview:
        conds.append(m.preview.is_(False))
    return and_(*conds)


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
        db.add_all(
            OutputUse(
                agent_id=scope.turn.agent_id,
                execution_id=execution.id,
                kind="RETRIEVED",
                history_part_id=part.id,
                rank=rank,
            )
            for rank, hit in enumerate(hits, start=1)
            for part in ([hit.part] if hit.part is not None else hit.details.parts)
        )
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
    if query is not None and not (query.strip() and len(query) <= MAX_QUERY):
        raise BadInputError(f"query must be 1 to {MAX_QUERY} characters", field="query")
    if ids is not None and not 1 <= len(ids) <= MAX_IDS:
        raise BadInputError(f"ids must hold 1 to {MAX_IDS} ids", field="ids")
    the_limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    return the_limit


async def keyword_text(db: AsyncSession, *, reader: HistoryReader, query: str) -> str:
    """The text the keyword search reads for ``query`` (R62): the query without its words
    that too many of the parts ``reader`` may see contain. A query in web-search syntax
    (phrases, ``OR``, ``-word``) is read as written."""
    words = rules.query_words(query)
    if not words or uses_web_syntax(query):
        return query
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
    row = (await db.execute(select(*columns).select_from(sample))).one()
    counts = {
        w: (None if row[2 * i + 2] == 0 else int(row[2 * i + 1])) for i, w in enumerate(words)
    }
    return rules.keyword_query(query, counts, int(row[0]))


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
    """The parts ``reader`` may see, ranked for ``query`` (R62: hybrid, the memory search's
    preset, keywords by :func:`keyword_text`). Other modes and thresholds are for
    evaluation (bench/locomo_history.py)."""
    keywords = query if mode == "vector" else await keyword_text(db, reader=reader, query=query)
    return await hybrid_search(
        db,
        source=SearchSource(
            from_=HistoryPart.__table__,  # type: ignore[attr-defined]
            key=HistoryPart.id,  # type: ignore[arg-type]
            embedding=HistoryPart.embedding,
            tsv=HistoryPart.search_tsv,
            created_at=HistoryPart.created_at,  # type: ignore[arg-type]
            where=history_condition(reader),
        ),
        text=keywords,
        vector=vector,
        mode=mode,
        min_score=min_score,
        limit=limit,
        preset=rules.PRESET,
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
                    HistoryEvent.id.in_(wanted),  # type: ignore[attr-defined]
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
                await db.scalars(select(HistoryPart).where(HistoryPart.id.in_(part_ids)))  # type: ignore[attr-defined]
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
