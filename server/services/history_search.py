"""search_history (R62-R64): the native tool that searches a session's kept events
for a turn, and the results it returns.

A search is an execution of the native ``search_history`` tool inside an open
turn (R63), recorded like the memory tools: its input, its output (the events
it returned), a ``tool.result`` (or, refused, a ``tool.error``) transcript
event, a RETRIEVED output use per part that reached the model, and for a query
the ``embed`` usage of its embedding (an invocation no limit counts, and a
``usage`` transcript event).

With a query it returns the best parts the reader may see
(:func:`server.services.history_ranking.rank_parts`), each with its event. With
``ids`` it reads those events whole, in the order asked; an id the reader may
not see is left out, as an unknown one is. (An event of another session, or a
preview turn's named by a live turn, never gets here: the call is refused before it
runs, resolvers/ownership.py.)
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.counts import check_count, check_limit
from server.domain.history import HistoryReader
from server.domain.text import check_text
from server.embedding import Embedder
from server.errors import BadInputError, NotAllowedError
from server.models import Execution, HistoryEvent, HistoryPart
from server.services.history_ranking import ranked_parts
from server.services.history_reads import EventDetails, event_details, events_by_id
from server.services.tools import CallRef, record_embed, record_retrieved, record_tool
from server.services.turn_scope import TurnScope
from server.storage.history_gate import history_condition
from server.storage.owners import remember

TOOL = "search_history"


@dataclass(frozen=True, slots=True)
class HistoryHit:
    """One result: a part of an event (``part`` set), or the event whole (``ids``).
    ``details``: what the event links to, read with an event read whole; for a part a
    query found, None (a reader that wants them loads them: the search does not)."""

    event: HistoryEvent
    part: HistoryPart | None
    score: float | None
    details: EventDetails | None

    @property
    def text(self) -> str:
        return self.part.text if self.part is not None else self.event.text

    @property
    def parts(self) -> int:
        """How many parts the event has."""
        if self.part is not None:
            return self.part.parts
        assert self.details is not None
        return self.details.parts[0].parts if self.details.parts else 1

    def to_json(self) -> dict[str, Any]:
        """Named as the HistoryResult type names them (partId: the part read)."""
        return {
            "eventId": str(self.event.id),
            "partId": str(self.part.id) if self.part is not None else None,
            "turn": self.event.turn_number,
            "part": self.part.part if self.part is not None else None,
            "parts": self.parts,
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
            (rank, part.id) for rank, hit in enumerate(hits, start=1) for part in _parts_shown(hit)
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
        writes=False,
    )
    return HistorySearch(execution=execution, hits=hits)


def _parts_shown(hit: HistoryHit) -> list[HistoryPart]:
    """The parts a hit put before the model: its part, or every part of an event read
    whole."""
    if hit.part is not None:
        return [hit.part]
    assert hit.details is not None
    return hit.details.parts


# What a call may ask for: results by default and at most, the longest query, the most
# ids read whole.
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
MAX_QUERY = 2_000
MAX_IDS = 50


def _check(query: str | None, ids: Sequence[uuid.UUID] | None, limit: int | None) -> int:
    """The limit of a call, once its arguments are checked."""
    if (query is None) == (ids is None):
        raise BadInputError(
            "pass a query to search, or ids to read events whole, not both", field="query"
        )
    if query is not None:
        check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    if ids is not None:
        check_count(ids, field="ids", maximum=MAX_IDS)
    return check_limit(DEFAULT_LIMIT if limit is None else limit, maximum=MAX_LIMIT)


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
        return await _read_whole(db, reader, ids, the_limit)
    assert query is not None
    # the model's own vector, not the int8 query graph's: the history ranking's nested
    # CV fell 0.0075 with it (docs/scaling.md, "The query embedding")
    vector, tokens = await embedder.embed_one(query)
    await record_embed(db, scope, execution, embedder, tokens)
    found = await ranked_parts(db, reader=reader, query=query, vector=vector, limit=the_limit)
    for _, event, _ in found:  # the answer's details are read by the event's id next
        remember(db, event.id, event.agent_id)
    return [HistoryHit(event, part, score, None) for part, event, score in found]


async def _read_whole(
    db: AsyncSession, reader: HistoryReader, ids: Sequence[uuid.UUID], limit: int
) -> list[HistoryHit]:
    """The events of ``ids`` that ``reader`` may see, whole, in the order asked."""
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
    chosen = [found[i] for i in wanted if i in found][:limit]
    return await _hits(db, found, [(e.id, None, None) for e in chosen])


async def _parts(
    db: AsyncSession, ids: Sequence[uuid.UUID], *, agent_id: uuid.UUID
) -> dict[uuid.UUID, HistoryPart]:
    if not ids:
        return {}
    rows = await db.scalars(
        select(HistoryPart).where(
            col(HistoryPart.agent_id) == agent_id, col(HistoryPart.id).in_(ids)
        )
    )
    return {p.id: p for p in rows.all()}


async def _hits(
    db: AsyncSession,
    events: dict[uuid.UUID, HistoryEvent],
    found: Sequence[tuple[uuid.UUID, HistoryPart | None, float | None]],
) -> list[HistoryHit]:
    """The hits of ``found`` (an event's id, the part or ``None`` for the event whole, the
    score), in order; an event not in ``events`` is left out."""
    shown = {e: events[e] for e, _, _ in found if e in events}
    details = await event_details(db, list(shown.values()))
    return [HistoryHit(shown[e], part, score, details[e]) for e, part, score in found if e in shown]


async def load_hits(
    db: AsyncSession, stored: Sequence[dict[str, Any]], *, agent_id: uuid.UUID
) -> list[HistoryHit]:
    """The hits of a stored search output of ``agent_id`` (an idempotent replay reloads
    them)."""
    events = await events_by_id(db, {uuid.UUID(h["eventId"]) for h in stored}, agent_id=agent_id)
    parts = await _parts(
        db, [uuid.UUID(h["partId"]) for h in stored if h["partId"]], agent_id=agent_id
    )
    found = [
        (
            uuid.UUID(h["eventId"]),
            parts.get(uuid.UUID(h["partId"])) if h["partId"] else None,
            h["score"],
        )
        for h in stored
    ]
    return await _hits(db, events, found)
