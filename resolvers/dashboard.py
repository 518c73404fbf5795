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
from resolvers.grants import readable_namespaces
from resolvers.search import MemorySearchResultType, found_results
from resolvers.types.base import LabelInput
from resolvers.types.ranking import ScoreExplanationType
from server.services import search_api

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
        description="The namespaces that have agents and in which the caller may read "
        "something (agents, sessions or memory), in name order; every namespace for an "
        "admin."
    )
    async def namespaces(self, info: Info) -> list[str]:
        names = await search_api.namespaces(info.context.db)
        return await readable_namespaces(info.context, names)
