"""Memory search for API readers such as dashboards, and the namespaces they may browse.

A dashboard's search ranks an agent's records by text (R41) exactly as the agent's own
``search_memory`` does: the same statement (:func:`server.memory_search.ranking.ranked`), the
mode and minimum score of the agent's latest version (defaults when it has none). It
reads as an API reader (:meth:`server.domain.visibility.Reader.for_api`): committed
ACTIVE records of the agent, live or preview, of either scope (R14). Unlike the tool it
runs in no turn, so it records nothing: no execution, no model-call usage, no output use.
Who may ask is decided by the caller's grants (R71), before this runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import ranking
from server.domain.config import SearchConfig
from server.domain.ranking import Mode
from server.domain.text import check_text
from server.domain.visibility import Reader
from server.embedding import Embedder
from server.errors import BadInputError, NotFoundError
from server.memory_search.ranking import Filters, Found, MemoryQuery, ranked
from server.memory_search.tool import MAX_LIMIT, MAX_QUERY
from server.models import Agent, AgentVersion
from server.services.agents import config_of

DEFAULT_LIMIT = 10


@dataclass(frozen=True, slots=True)
class AgentSearch:
    """A search's results, best first, and what explains them: who read, the query as
    ranked (mode, vector, preset, ...) and the moment recency was measured from."""

    hits: list[Found]
    reader: Reader
    query: MemoryQuery
    now: datetime


async def _search_config(db: AsyncSession, agent: Agent) -> SearchConfig:
    latest = await db.scalar(
        select(AgentVersion)
        .where(col(AgentVersion.agent_id) == agent.id)
        .order_by(col(AgentVersion.number).desc())
        .limit(1)
    )
    return SearchConfig() if latest is None else config_of(latest, agent).memory.search


async def search_agent_memory(
    db: AsyncSession,
    embedder: Embedder,
    *,
    agent_id: uuid.UUID,
    query: str,
    limit: int | None = None,
    kind: str | None = None,
    labels: Sequence[tuple[str, str]] = (),
) -> AgentSearch:
    """The agent's records best matching ``query``, best first; nothing is written."""
    check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    the_limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    agent = await db.get(Agent, agent_id)
    if agent is None:
        raise NotFoundError(f"no agent with id {agent_id}", field="agentId")
    search = await _search_config(db, agent)
    vector = None if search.mode == "lexical" else (await embedder.embed_query(query))[0]
    asked = MemoryQuery(
        query,
        vector,
        search.mode,
        search.min_score,
        the_limit,
        Filters(kind=kind, labels=tuple(sorted(dict(labels).items()))),
    )
    reader = Reader.for_api(agent_id=agent_id)
    now = datetime.now(UTC)
    return AgentSearch(await ranked(db, reader, asked, now=now), reader, asked, now)


async def explain(db: AsyncSession, search: AgentSearch) -> list[ranking.Explanation]:
    """Why each hit ranked where it did (R41), in the hits' order: the terms of its score
    (:func:`server.domain.ranking.explain`). A hybrid search's positions by meaning and by
    keywords are read with the same statement in ``vector`` and ``lexical`` mode over the
    same candidates (the preset's pool for the search's limit): the lists it fused."""
    asked = search.query

    async def positions(mode: Mode) -> dict[uuid.UUID, int]:
        pool = replace(asked, mode=mode, limit=asked.preset.pool_size(asked.limit))
        found = await ranked(db, search.reader, pool, now=search.now)
        return {f.version.id: i for i, f in enumerate(found, start=1)}

    if asked.mode == "hybrid":
        by_meaning = await positions("vector")
        by_keywords = await positions("lexical")
    else:
        own = {h.version.id: i for i, h in enumerate(search.hits, start=1)}
        by_meaning = own if asked.mode == "vector" else {}
        by_keywords = own if asked.mode == "lexical" else {}
    return [
        ranking.explain(
            mode=asked.mode,
            score=h.score if h.score is not None else 0.0,
            terms=h.terms,
            created_at=h.version.created_at,
            now=search.now,
            meaning_rank=by_meaning.get(h.version.id),
            keyword_rank=by_keywords.get(h.version.id),
            preset=asked.preset,
        )
        for h in search.hits
    ]


async def namespaces(db: AsyncSession) -> list[str]:
    """Every namespace that has an agent, in name order."""
    rows = await db.scalars(select(col(Agent.namespace)).distinct().order_by(col(Agent.namespace)))
    return list(rows)
