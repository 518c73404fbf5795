"""Memory search for API readers such as dashboards, and the namespaces they may browse.

A dashboard's search ranks an agent's records by text (R41) exactly as the agent's own
``search_memory`` does: the same statement (:func:`server.services.memory_ranking.ranked`), the
mode and minimum score of the agent's latest version (defaults when it has none). It
reads as an API reader (:meth:`server.domain.visibility.Reader.for_api`): committed
ACTIVE records of the agent, live or preview, of either scope (R14). Unlike the tool it
runs in no turn, so it records nothing: no execution, no model-call usage, no output use.
Who may ask is decided by the caller's grants (R71), before this runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.config import SearchConfig
from server.domain.text import check_text
from server.domain.visibility import Reader
from server.embedding import Embedder
from server.errors import BadInputError, NotFoundError
from server.models import Agent, AgentVersion
from server.services.agents import config_of
from server.services.memory_ranking import Filters, Found, ranked_by
from server.services.search import MAX_LIMIT, MAX_QUERY

DEFAULT_LIMIT = 10


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
) -> list[Found]:
    """The agent's records best matching ``query``, best first; nothing is written."""
    check_text(query, field="query", maximum=MAX_QUERY, blank=False)
    the_limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= the_limit <= MAX_LIMIT:
        raise BadInputError(f"limit must be from 1 to {MAX_LIMIT}", field="limit")
    agent = await db.get(Agent, agent_id)
    if agent is None:
        raise NotFoundError(f"no agent with id {agent_id}", field="agentId")
    search = await _search_config(db, agent)
    found, _ = await ranked_by(
        db,
        embedder,
        reader=Reader.for_api(agent_id=agent_id),
        search=search,
        query=query,
        limit=the_limit,
        filters=Filters(kind=kind, labels=tuple(sorted(dict(labels).items()))),
    )
    return found


async def namespaces(db: AsyncSession) -> list[str]:
    """Every namespace that has an agent, in name order."""
    rows = await db.scalars(select(col(Agent.namespace)).distinct().order_by(col(Agent.namespace)))
    return list(rows)
