"""Strawberry types of kept session history (R60-R62): events, their parts, the tool
calls they name, and search results."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import Enum
from typing import cast

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types.agents import SessionType
from resolvers.types.base import Node, column, node_id, related
from resolvers.types.turns import ExecutionType, TranscriptEventType, TurnType
from server import models
from server.domain import history as rules
from server.domain.history import ToolCall
from server.services import history_across
from server.services.history_reads import EventDetails
from server.services.history_search import HistoryHit


def _header(event: models.HistoryEvent) -> str:
    """The event's header line (R62); its role was kept as a ``rules.Role``."""
    return rules.header(event.turn_number, cast("rules.Role", event.role), event.tool_name)


@strawberry.enum(description="Who a kept event is from.")
class HistoryRole(Enum):
    _value_: str  # the stored value

    USER = strawberry.enum_value("user", description="The user: an incoming message.")
    AGENT = strawberry.enum_value("agent", description="The agent: a reply.")
    TOOL = strawberry.enum_value("tool", description="A tool: a result or an error.")


@strawberry.type(name="ToolCall", description="A tool call an agent reply made.")
class ToolCallType:
    id: str = strawberry.field(description="The call's id, unique in its turn.")
    name: str = strawberry.field(description="The tool's name.")
    arguments: JSON = strawberry.field(
        # R71
        description="What the call was given, as a JSON object. A memory tool's arguments "
        "are memory: without SELECT on <namespace>.AgentMemory.indexes.* and "
        '<namespace>.AgentMemory.document they are {"redacted": ...}.'
    )
    agent_id: strawberry.Private[uuid.UUID]

    @classmethod
    def of(cls, call: ToolCall, agent_id: uuid.UUID) -> ToolCallType:
        """The call as the agent ``agent_id`` made it (its arguments are that agent's)."""
        return cls(id=call.id, name=call.name, arguments=call.arguments, agent_id=agent_id)

    @classmethod
    def answered(cls, details: EventDetails, agent_id: uuid.UUID) -> ToolCallType | None:
        """The call a tool result or error answers; ``None`` for other events."""
        return None if details.call is None else cls.of(details.call, agent_id)


@strawberry.type(name="HistoryPart", description="A searchable piece of a kept event.")
class HistoryPartType(Node):
    row: strawberry.Private[models.HistoryPart]

    id: strawberry.ID = node_id("The part's id.")
    part: int = column(description="Its position in the event, from 1.")
    parts: int = column(description="How many parts the event has.")
    text: str = column(description="The part's text; neighbouring parts overlap a little.")
    created_at: datetime = column(description="When it was kept.")


@strawberry.type(
    name="HistoryEvent",
    # R60
    description="An event of the conversation a committed turn kept as searchable history: "
    "a message, a reply, or a tool's result or error.",
)
class HistoryEventType(Node):
    row: strawberry.Private[models.HistoryEvent]
    details: strawberry.Private[EventDetails]

    @classmethod
    def loaded(
        cls, found: tuple[models.HistoryEvent, EventDetails] | None
    ) -> HistoryEventType | None:
        """The event the ``history_event`` dataloader found, with its details; ``None``
        when it found none."""
        return None if found is None else cls(row=found[0], details=found[1])

    id: strawberry.ID = node_id("The event's id.")
    turn_number: int = column(description="The number of the turn that kept it.")
    role: HistoryRole = column(convert=HistoryRole, description="Who it is from.")
    tool_name: str | None = column(description="For a tool result or error: the tool's name.")

    tool_call_id: str | None = column(
        description="For a tool result or error: the call it answers."
    )

    is_error: bool = column(description="True for a tool error.")
    preview: bool = column(
        description="True when a turn in preview mode kept it: only preview turns search it."
    )
    sequence: int = column(description="The event's position in its turn's transcript.")

    @strawberry.field(description="Who it is from: `turn 12, user`, `agent` or `tool <name>`.")
    def header(self) -> str:
        return _header(self.row)

    text: str = column(description="The event's whole text, as kept.")
    created_at: datetime = column(description="When it was kept.")

    @strawberry.field(description="The searchable parts of its text, in order.")
    def parts(self) -> list[HistoryPartType]:
        return [HistoryPartType(row=p) for p in self.details.parts]

    @strawberry.field(description="For a tool result or error: the call it answers.")
    def call(self) -> ToolCallType | None:
        return ToolCallType.answered(self.details, self.row.agent_id)

    @strawberry.field(description="For an agent reply: the tool calls it made.")
    def tool_calls(self) -> list[ToolCallType]:
        return [ToolCallType.of(c, self.row.agent_id) for c in self.details.tool_calls]

    @strawberry.field(description="The transcript event it was kept from.")
    def transcript_event(self) -> TranscriptEventType | None:
        t = self.details.transcript
        return TranscriptEventType(row=t) if t is not None else None

    execution: ExecutionType | None = related(
        "execution",
        "execution_id",
        lambda r: ExecutionType(row=r),
        description="Whose conversation it belongs to.",
    )

    turn: TurnType = related(
        "turn", "turn_id", lambda r: TurnType(row=r), description="The turn that kept it."
    )


@strawberry.type(
    name="HistoryResult",
    # R62
    description="One search_history result: a part of a kept event, or an event read whole.",
)
class HistoryResultType:
    hit: strawberry.Private[HistoryHit]

    @strawberry.field(description="The kept event's id.")
    def event_id(self) -> uuid.UUID:
        return self.hit.event.id

    @strawberry.field(description="The number of the turn that kept it.")
    def turn(self) -> int:
        return self.hit.event.turn_number

    @strawberry.field(description="Who it is from.")
    def role(self) -> HistoryRole:
        return HistoryRole(self.hit.event.role)

    @strawberry.field(description="For a tool result or error: the tool's name.")
    def tool_name(self) -> str | None:
        return self.hit.event.tool_name

    @strawberry.field(description="True for a tool error.")
    def is_error(self) -> bool:
        return self.hit.event.is_error

    @strawberry.field(description="`turn 12, user`, `turn 12, agent` or `turn 12, tool <name>`.")
    def header(self) -> str:
        return _header(self.hit.event)

    @strawberry.field(description="The header line, then the part's (or whole event's) text.")
    def text(self) -> str:
        return f"{self.header()}\n{self.hit.text}"

    @strawberry.field(description="Which part this is; null when the event is read whole.")
    def part(self) -> int | None:
        return self.hit.part.part if self.hit.part is not None else None

    @strawberry.field(
        description="How many parts the event has; pass eventId in ids to read it whole."
    )
    def parts(self) -> int:
        return self.hit.parts

    @strawberry.field(description="The event's position in its turn's transcript.")
    def sequence(self) -> int:
        return self.hit.event.sequence

    @strawberry.field(description="The ranking score; null for events read by id.")
    def score(self) -> float | None:
        return self.hit.score

    @strawberry.field(description="For a tool result or error: the call it answers.")
    async def call(self, info: Info) -> ToolCallType | None:
        if self.hit.event.tool_call_id is None:
            return None
        details = await self._details(info)
        return ToolCallType.answered(details, self.hit.event.agent_id)

    async def _details(self, info: Info) -> EventDetails:
        """What the event links to: read with an event read whole, else loaded."""
        if self.hit.details is not None:
            return self.hit.details
        found = await info.context.loaders.history_event.load(self.hit.event.id)
        assert found is not None
        return found[1]

    @strawberry.field(description="The execution the event belongs to.")
    async def execution(self, info: Info) -> ExecutionType | None:
        if self.hit.event.execution_id is None:
            return None
        row = await info.context.loaders.execution.load(self.hit.event.execution_id)
        return ExecutionType(row=row) if row else None

    @strawberry.field(description="The kept event, whole.")
    async def event(self, info: Info) -> HistoryEventType:
        return HistoryEventType(row=self.hit.event, details=await self._details(info))


@strawberry.type(
    name="SessionHistoryHit",
    # R62, across sessions
    description="A part of a kept event a search across sessions found, with its session and turn.",
)
class SessionHistoryHitType:
    row: strawberry.Private[models.HistoryPart]
    found_in: strawberry.Private[models.HistoryEvent]

    score: float = strawberry.field(
        description="The score its session's search_history ranking gave it; hits of every "
        "session are merged by it."
    )

    @strawberry.field(description="Who it is from: `turn 12, user`, `agent` or `tool <name>`.")
    def header(self) -> str:
        return _header(self.found_in)

    @strawberry.field(
        # R71
        description="The part's text. The arguments of memory calls an agent reply made are "
        "masked without SELECT on <namespace>.AgentMemory.indexes.* and "
        "<namespace>.AgentMemory.document."
    )
    def text(self) -> str:
        return self.row.text

    @strawberry.field(description="Its position in the event, from 1.")
    def part(self) -> int:
        return self.row.part

    @strawberry.field(description="How many parts the event has.")
    def parts(self) -> int:
        return self.row.parts

    @strawberry.field(description="True when a turn in preview mode kept it.")
    def preview(self) -> bool:
        return self.row.preview

    @strawberry.field(description="The kept event, whole.")
    async def event(self, info: Info) -> HistoryEventType:
        found = await info.context.loaders.history_event.load(self.found_in.id)
        assert found is not None
        return HistoryEventType(row=found[0], details=found[1])

    @strawberry.field(description="The turn that kept it.")
    async def turn(self, info: Info) -> TurnType:
        row = await info.context.loaders.turn.load(self.found_in.turn_id)
        assert row is not None
        return TurnType(row=row)

    @strawberry.field(description="The session it was kept in.")
    async def session(self, info: Info) -> SessionType:
        row = await info.context.loaders.session.load(self.row.session_id)
        assert row is not None
        return SessionType(row=row)


@strawberry.type(
    name="SessionHistorySearch",
    description="What a search of many sessions' kept history found, and how far it looked.",
)
class SessionHistorySearchType:
    hits: list[SessionHistoryHitType] = strawberry.field(description="The best parts, best first.")
    sessions_searched: int = strawberry.field(
        description="How many sessions were ranked: the newest that kept history, at most "
        f"{history_across.MAX_SESSIONS}."
    )
    more_sessions: bool = strawberry.field(
        description="True when older sessions the filter matches were not searched: narrow "
        "startedAfter and startedBefore to reach them."
    )
