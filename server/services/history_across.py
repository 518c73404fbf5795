"""A search of many sessions' kept history for API readers such as dashboards: "where
is the conversation with customer X?" (R62's ranking, across sessions).

Each session is ranked exactly as its agent's ``search_history`` ranks it
(:func:`server.services.history_ranking.ranked_parts`, the same statement), read as a
reader who sees every kept event of the session: every committed turn, live or preview
(what ``Session.history`` lists). The best parts of every session are then merged by
that statement's own order (score, then the newer), so a part ranks among other
sessions' parts as it would among its own session's.

A session's statement reads its own parts (their index holds a session's parts as one
range): one statement per session. So a search ranks at most :data:`MAX_SESSIONS`
sessions, the newest that kept history among those the filter matches, and says
whether older ones were left out (narrow the filter's dates to reach them). Which
agents' sessions a reader may search is decided by its grants (R70, R71: SELECT on
``<namespace>.Session``) before this runs. Nothing is recorded: no turn, execution or
usage.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.counts import check_limit
from server.domain.history import HistoryReader
from server.domain.text import check_text
from server.embedding import Embedder
from server.models import HistoryEvent, HistoryPart, Session
from server.services.history_ranking import ranked_parts
from server.services.history_search import MAX_LIMIT, MAX_QUERY
from server.services.reads import SessionFilter, session_conditions
from server.storage.owners import remember

# the sessions one search ranks, newest first (one statement each)
MAX_SESSIONS = 50
DEFAULT_LIMIT = 10
# a reader of a whole session: every turn's kept events (turn numbers are int4)
_EVERY_TURN = 2**31 - 1


@dataclass(frozen=True, slots=True)
class AcrossSessions:
    """The best parts, best first, each with its event and score; how many sessions were
    ranked, and whether older ones the filter matches were left out."""

    hits: list[tuple[HistoryPart, HistoryEvent, float]]
    sessions: int
    more: bool


async def search_sessions(
    db: AsyncSession,
    embedder: Embedder,
    *,
    agent_ids: Sequence[uuid.UUID],
    query: str,
    limit: int | None = None,
    filter: SessionFilter | None = None,
) -> AcrossSessions:
    """Rank the kept history of the newest :data:`MAX_SESSIONS` sessions of ``agent_ids``
    that ``filter`` matches, for ``query``."""
    check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    wanted = check_limit(DEFAULT_LIMIT if limit is None else limit, maximum=MAX_LIMIT)
    if not agent_ids:
        return AcrossSessions([], 0, False)
    kept = (
        select(col(HistoryEvent.id))
        .where(
            col(HistoryEvent.session_id) == col(Session.id),
            col(HistoryEvent.agent_id) == col(Session.agent_id),
        )
        .exists()
    )
    rows = (
        await db.execute(
            select(col(Session.id), col(Session.agent_id))
            .where(col(Session.agent_id).in_(agent_ids), kept)
            .where(*session_conditions(filter or SessionFilter()))
            .order_by(col(Session.created_at).desc(), col(Session.id).desc())
            .limit(MAX_SESSIONS + 1)
        )
    ).all()
    sessions = rows[:MAX_SESSIONS]
    if not sessions:
        return AcrossSessions([], 0, False)
    vector, _ = await embedder.embed_one(query)
    found: list[tuple[HistoryPart, HistoryEvent, float]] = []
    for session_id, agent_id in sessions:
        reader = HistoryReader(
            agent_id=agent_id, session_id=session_id, turn_number=_EVERY_TURN, preview=True
        )
        found.extend(
            await ranked_parts(db, reader=reader, query=query, vector=vector, limit=wanted)
        )
    # the statement's own order: score, then the newer, then the id
    found.sort(key=lambda h: (-h[2], -h[0].created_at.timestamp(), str(h[0].id)))
    for _, event, _ in found[:wanted]:  # their details are read by the event's id next
        remember(db, event.id, event.agent_id)
    return AcrossSessions(found[:wanted], len(sessions), len(rows) > MAX_SESSIONS)
