"""Per-request dataloaders: a page of records with their versions and provenance
costs a bounded number of SQL statements, whatever the page size."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import and_, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col
from strawberry.dataloader import DataLoader

from server.models import (
    Agent,
    AgentVersion,
    Execution,
    HistoryEvent,
    HistoryPart,
    Invocation,
    MemoryDeletion,
    MemoryRecord,
    MemoryReview,
    MemoryVersion,
    OutputUse,
    Principal,
    Session,
    TranscriptEvent,
    Turn,
)
from server.services import history_reads, usage
from server.services.history_reads import EventDetails
from server.storage.gate import staged_version
from server.storage.owners import kept, kept_agents


class _Row(Protocol):
    id: uuid.UUID


T = TypeVar("T", bound=_Row)


class Loaders:
    def __init__(self, db: AsyncSession) -> None:
        self.db = db
        self.agent = self._by_id(Agent)
        self.agent_version = self._by_id(AgentVersion)
        self.session = self._by_id(Session)
        self.turn = self._by_id(Turn)
        self.execution = self._by_id(Execution)
        self.invocation = self._by_id(Invocation)
        self.record = self._by_id(MemoryRecord)
        self.version = self._by_id(MemoryVersion)
        self.deletion = self._by_id(MemoryDeletion)
        self.principal = self._by_id(Principal)
        self.versions_of_record = self._grouped(MemoryVersion, "record_id", "number")
        self.usage_of_turn = DataLoader(load_fn=lambda keys: usage.of_turns(db, keys))
        self.usage_of_session = DataLoader(load_fn=lambda keys: usage.of_sessions(db, keys))
        self.executions_of_turn = self._grouped(Execution, "turn_id", "created_at")
        self.children_of_execution = self._grouped(Execution, "parent_id", "created_at")
        self.invocations_of_execution = self._grouped(Invocation, "execution_id", "created_at")
        self.events_of_turn = self._grouped(TranscriptEvent, "turn_id", "sequence")
        self.versions_of_agent = self._grouped(AgentVersion, "agent_id", "number")
        self.turn_status = self._column(Turn, "status")
        self.history_part = self._by_id(HistoryPart)
        self.transcript_event = self._by_id(TranscriptEvent)
        self.review = self._by_id(MemoryReview)
        self.use = self._by_id(OutputUse)
        self.history_event = DataLoader(load_fn=self._history_events)
        self.uses_of_execution = DataLoader(load_fn=self._uses)
        self._all = [v for v in vars(self).values() if isinstance(v, DataLoader)]

    def clear(self) -> None:
        for loader in self._all:
            loader.clear_all()

    def _by_id(self, model: type[T]) -> DataLoader[uuid.UUID, T | None]:
        async def load(keys: Sequence[uuid.UUID]) -> list[T | None]:
            rows = (
                await self.db.scalars(
                    select(model).where(col(model.id).in_(keys), *kept_agents(self.db, model, keys))
                )
            ).all()
            found = {row.id: row for row in rows}
            return [found.get(k) for k in keys]

        return DataLoader(load_fn=load)

    async def _history_events(
        self, keys: Sequence[uuid.UUID]
    ) -> list[tuple[HistoryEvent, EventDetails] | None]:
        """Kept events by id with what they link to (3 statements a batch); of their
        agent, when one agent's and it is known (on Citus: its shard alone)."""
        agents = {kept(self.db, k) for k in keys}
        agent = next(iter(agents)) if len(agents) == 1 else None
        found = await history_reads.events_by_id(self.db, set(keys), agent_id=agent)
        details = await history_reads.event_details(self.db, list(found.values()))
        return [(found[k], details[k]) if k in found else None for k in keys]

    async def _uses(self, keys: Sequence[uuid.UUID]) -> list[list[OutputUse]]:
        """Executions' output uses in the order their output gave them: by rank, the
        parts of an event read whole in their order. A use of a version an open turn
        staged is not shown until the turn commits, as the version is not (R12)."""
        rows = (
            await self.db.scalars(
                select(OutputUse)
                .outerjoin(
                    HistoryPart,
                    and_(
                        col(HistoryPart.id) == col(OutputUse.history_part_id),
                        col(HistoryPart.agent_id) == col(OutputUse.agent_id),
                    ),
                )
                .outerjoin(
                    MemoryVersion,
                    and_(
                        col(MemoryVersion.id) == col(OutputUse.memory_version_id),
                        col(MemoryVersion.agent_id) == col(OutputUse.agent_id),
                    ),
                )
                .outerjoin(
                    MemoryRecord,
                    and_(
                        col(MemoryRecord.id) == col(MemoryVersion.record_id),
                        col(MemoryRecord.agent_id) == col(MemoryVersion.agent_id),
                    ),
                )
                .where(
                    col(OutputUse.execution_id).in_(keys),
                    *kept_agents(self.db, OutputUse, keys),
                    or_(col(MemoryVersion.id).is_(None), not_(staged_version())),
                )
                .order_by(col(OutputUse.rank), col(HistoryPart.part))
            )
        ).all()
        groups: dict[uuid.UUID, list[OutputUse]] = defaultdict(list)
        for row in rows:
            groups[row.execution_id].append(row)
        return [groups.get(k, []) for k in keys]

    def _column(self, model: type[T], name: str) -> DataLoader[uuid.UUID, Any]:
        """One column of rows by id, read as a value: no row enters the session's
        identity map (the access gate's reads, resolvers/grants.py)."""
        key = col(model.id)
        value: Any = getattr(model, name)

        async def load(keys: Sequence[uuid.UUID]) -> list[Any]:
            rows = (
                await self.db.execute(
                    select(key, value).where(key.in_(keys), *kept_agents(self.db, model, keys))
                )
            ).all()
            found: dict[Any, Any] = dict(rows)
            return [found.get(k) for k in keys]

        return DataLoader(load_fn=load)

    def _grouped(self, model: type[T], key: str, order: str) -> DataLoader[uuid.UUID, list[T]]:
        column: Any = getattr(model, key)
        ordering: Any = getattr(model, order)

        async def load(keys: Sequence[uuid.UUID]) -> list[list[T]]:
            rows = (
                await self.db.scalars(
                    select(model)
                    .where(column.in_(keys), *kept_agents(self.db, model, keys))
                    .order_by(ordering)
                )
            ).all()
            groups: dict[uuid.UUID, list[T]] = defaultdict(list)
            for row in rows:
                groups[getattr(row, key)].append(row)
            return [groups.get(k, []) for k in keys]

        return DataLoader(load_fn=load)
