"""Dashboard queries: memory search by text without a turn, and the namespaces to browse.

Thin resolvers over :mod:`server.services.search_api`; the grants (R71) are checked by
:mod:`resolvers.permissions` before anything is searched.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from typing import Annotated

import strawberry
from sqlalchemy.ext.asyncio import AsyncSession

from resolvers.context import Info
from resolvers.grants import Resource, decide, readable_namespaces
from resolvers.search import MemorySearchResultType, found_results
from resolvers.types.agents import SessionFilter
from resolvers.types.base import LabelInput
from resolvers.types.history import SessionHistoryHitType, SessionHistorySearchType
from resolvers.types.ranking import ScoreExplanationType
from server.errors import ForbiddenError, NotFoundError
from server.services import history_across, reads, search_api

AGENT_ID = "The agent whose memory to search."
QUERY = "The text to match, 1 to 2000 characters."
LIMIT = "How many results, 1 to 100; default 10."
KIND = "Only records of this kind."
LABELS = "Only records with every one of these label values."


class _Explained:
    """The explanations of one search's results, read once, when the first is asked for."""

    def __init__(self, db: AsyncSession, search: search_api.AgentSearch) -> None:
        self.db = db
        self.search = search
        self.lock = asyncio.Lock()
        self.done: list[ScoreExplanationType] | None = None

    async def at(self, index: int) -> ScoreExplanationType:
        async with self.lock:
            if self.done is None:
                preset = self.search.query.preset
                self.done = [
                    ScoreExplanationType.of(
                        e, preset=preset.name, half_life_days=preset.recency_half_life_days
                    )
                    for e in await search_api.explain(self.db, self.search)
                ]
        return self.done[index]


@strawberry.type
class DashboardQuery:
    @strawberry.field(
        description="Rank an agent's active memory records by how well they match a text, "
        "best first, as the agent's own memory search would (by meaning and by words, as "
        "its latest version configures), each with why it ranked where it did "
        "(explanation). Reads committed records of both scopes, live or "
        "preview. Nothing is recorded: no turn, execution or usage. Needs the grants that "
        "read the agent's memory: SELECT on <namespace>.AgentMemory.indexes.* and on "
        "<namespace>.AgentMemory.document; without them the field is null with FORBIDDEN "
        "(NOT_FOUND, as for an unknown agent, to a caller that may not read the agent)."
    )
    async def search_agent_memory(
        self,
        info: Info,
        agent_id: Annotated[uuid.UUID, strawberry.argument(description=AGENT_ID)],
        query: Annotated[str, strawberry.argument(description=QUERY)],
        limit: Annotated[int | None, strawberry.argument(description=LIMIT)] = None,
        kind: Annotated[str | None, strawberry.argument(description=KIND)] = None,
        labels: Annotated[list[LabelInput] | None, strawberry.argument(description=LABELS)] = None,
    ) -> list[MemorySearchResultType] | None:
        db = info.context.db
        search = await search_api.search_agent_memory(
            db,
            info.context.embedder,
            agent_id=agent_id,
            query=query,
            limit=limit,
            kind=kind,
            labels=[(lf.name, lf.value) for lf in labels or []],
        )
        results = found_results(search.hits)
        explained = _Explained(db, search)
        for index, result in enumerate(results):
            result.explained = functools.partial(explained.at, index)
        return results

    @strawberry.field(
        # R62 across sessions, R70
        description="Search the kept history of a namespace's sessions (or of one agent's) "
        "by text: each session ranked as its agent's search_history ranks it, every turn "
        "of it, live or preview; the best parts of all merged by score. It ranks the "
        f"newest {history_across.MAX_SESSIONS} sessions that kept history among those the "
        "filter matches, and says whether it left older ones out. Only the sessions of "
        "agents whose sessions the caller may read (SELECT on <namespace>.Session) are "
        "searched; none: FORBIDDEN. Nothing is recorded."
    )
    async def search_session_history(
        self,
        info: Info,
        namespace: Annotated[str, strawberry.argument(description="The namespace.")],
        query: Annotated[str, strawberry.argument(description=QUERY)],
        agent_id: Annotated[
            uuid.UUID | None,
            strawberry.argument(description="Only this agent's sessions; null: every agent's."),
        ] = None,
        limit: Annotated[
            int | None, strawberry.argument(description="How many results, 1 to 50; default 10.")
        ] = None,
        filter: Annotated[
            SessionFilter | None,
            strawberry.argument(description="Only the sessions that match; null: every one."),
        ] = None,
    ) -> SessionHistorySearchType | None:
        context = info.context
        agents = await reads.agent_ids_in(context.db, namespace=namespace, agent_id=agent_id)
        if agent_id is not None and not agents:
            raise NotFoundError(f"no agent {agent_id} in {namespace}", field="agentId")
        readable = []
        refusal = None
        for agent in agents:
            decision = await decide(context, Resource.SESSION, agent, namespace)
            if decision.allowed:
                readable.append(agent)
            else:
                refusal = refusal or decision.reason
        if refusal is not None and not readable:
            raise ForbiddenError(f"not allowed: {refusal}")
        found = await history_across.search_sessions(
            context.db,
            context.embedder,
            agent_ids=readable,
            query=query,
            limit=limit,
            filter=filter.matching() if filter is not None else None,
        )
        return SessionHistorySearchType(
            hits=[
                SessionHistoryHitType(row=part, found_in=event, score=score)
                for part, event, score in found.hits
            ],
            sessions_searched=found.sessions,
            more_sessions=found.more,
        )

    @strawberry.field(
        description="The namespaces that have agents and in which the caller may read "
        "something (agents, sessions or memory), in name order; every namespace for an "
        "admin."
    )
    async def namespaces(self, info: Info) -> list[str]:
        names = await search_api.namespaces(info.context.db)
        return await readable_namespaces(info.context, names)
