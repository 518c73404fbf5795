"""Agents, their versions and their sessions."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.permissions import CanReadMemory, CanReadSessions
from resolvers.types.base import LabelInput, Node, column, later, node_id, related
from resolvers.types.enums import ListOrder, MemoryStatus, Scope
from resolvers.types.pages import After, Connection, First
from resolvers.types.usage import DayActivityType, DayMemoryType, UsageType
from server import models
from server.domain.config import memory_config_to_json
from server.errors import BadInputError
from server.services import history_reads, memory_as_of, reads, usage
from server.services.agents import config_of
from server.services.memory_as_of import Moment

if TYPE_CHECKING:
    from resolvers.types.history import HistoryEventType
    from resolvers.types.memory import MemoryRecordType
    from resolvers.types.turns import TurnType

# how many days an agent's day-by-day fields cover
Days = Annotated[int, strawberry.argument(description=f"How many days, 1 to {usage.MAX_DAYS}.")]

_TURNS = "resolvers.types.turns"
_MEMORY = "resolvers.types.memory"
_HISTORY = "resolvers.types.history"
_turn = later(_TURNS, "TurnType")
_record = later(_MEMORY, "MemoryRecordType")
_history_event = later(_HISTORY, "HistoryEventType")


@strawberry.input(
    description="Which memory records to list; every field given must match, a null field "
    "matches every record."
)
class MemoryRecordFilter:
    status: MemoryStatus | None = strawberry.field(
        default=None, description="Only records in this status."
    )
    kind: str | None = strawberry.field(
        default=None, description="Only records of this kind (their current version's)."
    )
    scope: Scope | None = strawberry.field(default=None, description="Only records of this scope.")
    session_id: uuid.UUID | None = strawberry.field(
        default=None, description="Only records this session wrote."
    )
    preview: bool | None = strawberry.field(
        default=None, description="True: only preview records; false: only live ones."
    )
    labels: list[LabelInput] | None = strawberry.field(
        default=None,
        description="Only records whose current version has every one of these label values.",
    )


@strawberry.input(
    description="Which sessions to list; every field given must match, a null field matches "
    "every session."
)
class SessionFilter:
    started_after: datetime | None = strawberry.field(
        default=None, description="Only sessions created at or after this time."
    )
    started_before: datetime | None = strawberry.field(
        default=None, description="Only sessions created before this time."
    )
    has_failed_turns: bool | None = strawberry.field(
        default=None,
        description="True: only sessions with a turn that failed or rolled back; false: only "
        "sessions without one.",
    )
    preview: bool | None = strawberry.field(
        default=None,
        description="True: only sessions with a turn in preview mode; false: only sessions "
        "without one.",
    )

    def matching(self) -> reads.SessionFilter:
        return reads.SessionFilter(
            started_after=self.started_after,
            started_before=self.started_before,
            has_failed_turns=self.has_failed_turns,
            preview=self.preview,
        )


@strawberry.input(
    name="MemoryAsOf",
    description="A moment of an agent's memory: a turn or a time, exactly one. The records "
    "that stood then, each as its version in force then (its status, text, kind and "
    "labels then), its versions up to that one.",
)
class MemoryAsOfInput:
    turn_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="A turn of this agent: the memory as that turn could see it when it "
        "began (its session's records and the scopes its agent version reads, live or "
        "preview as the turn was), before anything it wrote. Needs SELECT on "
        "<namespace>.Session too; a turn of another agent is NOT_FOUND.",
    )
    time: datetime | None = strawberry.field(
        default=None,
        description="A time, with its UTC offset: the memory as this listing showed it then "
        "(every committed record of the agent).",
    )


async def _moment(info: Info, agent: models.Agent, as_of: MemoryAsOfInput) -> Moment:
    """The moment ``as_of`` names. That a turn is the agent's and readable (R10, R70)
    was checked before the field ran (resolvers/ownership.py, ``check_on``)."""
    if (as_of.turn_id is None) == (as_of.time is None):
        raise BadInputError("asOf takes a turnId or a time, one of them", field="asOf")
    if as_of.time is not None:
        return memory_as_of.moment_at(agent_id=agent.id, at=as_of.time)
    assert as_of.turn_id is not None
    return await memory_as_of.moment_of_turn(
        info.context.db, agent_id=agent.id, turn_id=as_of.turn_id
    )


@strawberry.type(
    name="Agent",
    description="An agent: a named identity in a namespace, with published versions of its "
    "configuration, its sessions and its memory.",
)
class AgentType(Node):
    row: strawberry.Private[models.Agent]

    id: strawberry.ID = node_id("The agent's id.")
    namespace: str = column(description="The namespace the agent belongs to.")
    name: str = column(description="The agent's name, unique in its namespace.")
    sessionless: bool = column(
        description="True for an agent that runs without sessions: its memory is agent scope only."
    )
    created_at: datetime = column(description="When the agent was created.")

    @strawberry.field(description="Every published version, oldest first.")
    async def versions(self, info: Info) -> list[AgentVersionType]:
        rows = await info.context.loaders.versions_of_agent.load(self.row.id)
        return [AgentVersionType(row=v) for v in rows]

    @strawberry.field(
        description="The newest version; turns use it unless they name another. Null "
        "before the first version is published."
    )
    async def latest_version(self, info: Info) -> AgentVersionType | None:
        rows = await info.context.loaders.versions_of_agent.load(self.row.id)
        return AgentVersionType(row=rows[-1]) if rows else None

    @strawberry.field(
        description="The agent's sessions, newest first. Needs SELECT on "
        "<namespace>.Session; without it, FORBIDDEN.",
        permission_classes=[CanReadSessions],
    )
    async def sessions(
        self,
        info: Info,
        first: First,
        after: After = None,
        filter: Annotated[
            SessionFilter | None,
            strawberry.argument(description="Only the sessions that match; null: every one."),
        ] = None,
    ) -> Connection[SessionType]:
        return await Connection.read(
            info,
            reads.list_sessions,
            lambda s: SessionType(row=s),
            agent_id=self.row.id,
            first=first,
            after=after,
            filter=filter.matching() if filter is not None else None,
        )

    @strawberry.field(
        description="The agent's session its runtime named externalId in createSession "
        "(unique per agent); null when there is none. Needs SELECT on <namespace>.Session; "
        "without it, FORBIDDEN.",
        permission_classes=[CanReadSessions],
    )
    async def session(
        self,
        info: Info,
        external_id: Annotated[
            str, strawberry.argument(description="The caller's own id for the session.")
        ],
    ) -> SessionType | None:
        row = await reads.session_by_external_id(
            info.context.db, agent_id=self.row.id, external_id=external_id
        )
        return SessionType(row=row) if row is not None else None

    @strawberry.field(
        description="Every model call of the agent's turns, added up, by model. Needs "
        "SELECT on <namespace>.Session; without it, FORBIDDEN.",
        permission_classes=[CanReadSessions],
    )
    async def usage(self, info: Info) -> UsageType:
        rows = await usage.of_agent(info.context.db, agent_id=self.row.id)
        return UsageType.of(rows, info.context.settings.model_prices)

    @strawberry.field(
        description="The agent's work on each of its last days (UTC), oldest first: turns "
        "begun, model calls and their tokens; every day, zero when nothing happened. "
        "Needs SELECT on <namespace>.Session; without it, FORBIDDEN.",
        permission_classes=[CanReadSessions],
    )
    async def activity(
        self,
        info: Info,
        days: Days = 30,
    ) -> list[DayActivityType]:
        found = await usage.daily_work(info.context.db, agent_id=self.row.id, days=days)
        return [DayActivityType(found=d) for d in found]

    @strawberry.field(
        description="The memory records the agent's committed turns created on each of its "
        "last days (UTC), oldest first. Needs SELECT on "
        "<namespace>.AgentMemory.indexes.* and <namespace>.AgentMemory.document; without "
        "them, FORBIDDEN.",
        permission_classes=[CanReadMemory],
    )
    async def memory_activity(
        self,
        info: Info,
        days: Days = 30,
    ) -> list[DayMemoryType]:
        found = await usage.daily_records(info.context.db, agent_id=self.row.id, days=days)
        return [DayMemoryType(found=d) for d in found]

    @strawberry.field(
        description="The agent's committed memory records in any status, newest first. "
        "Needs SELECT on <namespace>.AgentMemory.indexes.* and on "
        "<namespace>.AgentMemory.document; without them, FORBIDDEN.",
        permission_classes=[CanReadMemory],
    )
    async def memory_records(
        self,
        info: Info,
        first: First,
        after: After = None,
        filter: Annotated[
            MemoryRecordFilter | None,
            strawberry.argument(
                description="Only the records that match; null: every record. With asOf, "
                "status, kind and labels are those of the version in force then."
            ),
        ] = None,
        as_of: Annotated[
            MemoryAsOfInput | None,
            strawberry.argument(
                description="The memory as it stood at a turn or a time; null: as it stands."
            ),
        ] = None,
    ) -> Connection[Annotated[MemoryRecordType, strawberry.lazy(_MEMORY)]]:
        f = filter or MemoryRecordFilter()
        matching = reads.RecordFilter(
            status=f.status.value if f.status else None,
            kind=f.kind,
            scope=f.scope.value if f.scope else None,
            session_id=f.session_id,
            preview=f.preview,
            labels=tuple((lf.name, lf.value) for lf in f.labels or []),
        )
        if as_of is not None:
            return await Connection.read(
                info,
                memory_as_of.list_records_as_of,
                lambda item: _record(row=item[0], as_of=item[1]),
                moment=await _moment(info, self.row, as_of),
                first=first,
                after=after,
                filter=matching,
            )
        return await Connection.read(
            info,
            reads.list_records,
            lambda r: _record(row=r),
            agent_id=self.row.id,
            first=first,
            after=after,
            filter=matching,
        )


@strawberry.type(
    name="AgentVersion",
    description="An immutable, numbered version of an agent's configuration.",
)
class AgentVersionType(Node):
    row: strawberry.Private[models.AgentVersion]

    id: strawberry.ID = node_id("The version's id.")
    number: int = column(description="The version's number in its agent, from 1.")
    label: str | None = column(description="The label given when it was published, if any.")

    @strawberry.field(description='The configuration as published: {"harness": ...}.')
    def config(self) -> JSON:
        return JSON(self.row.config)

    @strawberry.field(
        description="The memory configuration (harness.memory) with every default the "
        "server applies filled in."
    )
    async def effective_memory_config(self, info: Info) -> JSON:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return JSON(memory_config_to_json(config_of(self.row, agent).memory))

    created_at: datetime = column(description="When the version was published.")

    @strawberry.field(description="The agent the version belongs to.")
    async def agent(self, info: Info) -> AgentType:
        agent = await info.context.loaders.agent.load(self.row.agent_id)
        assert agent is not None
        return AgentType(row=agent)


@strawberry.type(
    name="Session",
    description="A conversation of an agent: its turns, in order, and the history they kept.",
)
class SessionType(Node):
    row: strawberry.Private[models.Session]

    id: strawberry.ID = node_id("The session's id.")
    external_id: str | None = column(
        description="The caller's own id for the session, as given to createSession; null "
        "when none was given."
    )
    created_at: datetime = column(description="When the session was created.")

    agent: AgentType = related(
        "agent",
        "agent_id",
        lambda r: AgentType(row=r),
        description="The agent the session belongs to.",
    )

    @strawberry.field(
        description="The session's turns, every attempt: newest first, or in the order "
        "they began (order: OLDEST_FIRST), as a conversation reads."
    )
    async def turns(
        self,
        info: Info,
        first: First,
        after: After = None,
        order: Annotated[
            ListOrder, strawberry.argument(description="Newest first (the default) or oldest.")
        ] = ListOrder.NEWEST_FIRST,
    ) -> Connection[Annotated[TurnType, strawberry.lazy(_TURNS)]]:
        return await Connection.read(
            info,
            reads.list_turns,
            lambda t: _turn(row=t),
            session_id=self.row.id,
            first=first,
            after=after,
            oldest_first=order is ListOrder.OLDEST_FIRST,
        )

    @strawberry.field(
        description="Every model call of the session's turns (every attempt), added up, by model."
    )
    async def usage(self, info: Info) -> UsageType:
        rows = await info.context.loaders.usage_of_session.load(self.row.id)
        return UsageType.of(rows, info.context.settings.model_prices)

    @strawberry.field(
        description="The events the session's committed turns kept as history, newest first."
    )
    async def history(
        self,
        info: Info,
        first: First,
        after: After = None,
        turn_number: Annotated[
            int | None,
            strawberry.argument(description="Only the events of this turn; null: every turn."),
        ] = None,
    ) -> Connection[Annotated[HistoryEventType, strawberry.lazy(_HISTORY)]]:
        db = info.context.db
        page = await history_reads.list_session_history(
            db,
            session_id=self.row.id,
            first=first,
            after=after,
            turn_number=turn_number,
            maximum=info.context.settings.max_page_size,
        )
        details = await history_reads.event_details(db, [e for _, e in page.items])
        return Connection.of(page, lambda e: _history_event(row=e, details=details[e.id]))
