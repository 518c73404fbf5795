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
from resolvers.types.base import Node, column, node_id, related
from resolvers.types.turns import ExecutionType, TranscriptEventType, TurnType
from server import models
from server.domain import history as rules
from server.domain.history import ToolCall
from server.services.history_reads import EventDetails
from server.services.history_search import HistoryHit


def _header(event: models.HistoryEvent) -> str:
    """The event's header line (R62); its role was kept as a ``rules.Role``."""
    return rules.header(event.turn_number, cast("rules.Role", event.role), event.tool_name)


@strawberry.enum
class HistoryRole(Enum):
    USER = "user"
    AGENT = "agent"
    TOOL = "tool"


@strawberry.type(name="ToolCall", description="A tool call an agent reply made.")
class ToolCallType:
    id: str
    name: str
    arguments: JSON = strawberry.field(
        description="What the call was given; a memory tool's arguments are memory (R71)."
    )
    agent_id: strawberry.Private[uuid.UUID]

    @classmethod
    def of(cls, call: ToolCall | None, agent_id: uuid.UUID) -> ToolCallType | None:
        if call is None:
            return None
        return cls(id=call.id, name=call.name, arguments=call.arguments, agent_id=agent_id)


@strawberry.type(name="HistoryPart", description="A searchable piece of a kept event.")
class HistoryPartType(Node):
    row: strawberry.Private[models.HistoryPart]

    id: strawberry.ID = node_id()
    part: int = column(description="1-based position in the event.")
    parts: int = column()
    text: str = column()
    created_at: datetime = column()


@strawberry.type(name="HistoryEvent", description="An event a committed turn kept (R60).")
class HistoryEventType(Node):
    row: strawberry.Private[models.HistoryEvent]
    details: strawberry.Private[EventDetails]

    id: strawberry.ID = node_id()
    turn_number: int = column()
    role: HistoryRole = column(convert=HistoryRole)
    tool_name: str | None = column()

    tool_call_id: str | None = column(
        description="For a tool result or error: the call it answers."
    )

    is_error: bool = column()
    preview: bool = column()
    sequence: int = column(description="The event's position in its turn's transcript.")

    @strawberry.field(description="Who it is from: `turn 12, user`, `agent` or `tool <name>`.")
    def header(self) -> str:
        return _header(self.row)

    text: str = column(description="The event's whole text, as kept.")
    created_at: datetime = column()

    @strawberry.field
    def parts(self) -> list[HistoryPartType]:
        return [HistoryPartType(row=p) for p in self.details.parts]

    @strawberry.field(description="For a tool result or error: the call it answers.")
    def call(self) -> ToolCallType | None:
        return ToolCallType.of(self.details.call, self.row.agent_id)

    @strawberry.field(description="For an agent reply: the tool calls it made.")
    def tool_calls(self) -> list[ToolCallType]:
        return [
            ToolCallType(id=c.id, name=c.name, arguments=c.arguments, agent_id=self.row.agent_id)
            for c in self.details.tool_calls
        ]

    @strawberry.field
    def transcript_event(self) -> TranscriptEventType | None:
        t = self.details.transcript
        return TranscriptEventType(row=t) if t is not None else None

    execution: ExecutionType | None = related(
        "execution", "execution_id", lambda r: ExecutionType(row=r)
    )

    turn: TurnType = related("turn", "turn_id", lambda r: TurnType(row=r))


@strawberry.type(name="HistoryResult", description="One search_history result (R62).")
class HistoryResultType:
    hit: strawberry.Private[HistoryHit]

    @strawberry.field
    def event_id(self) -> uuid.UUID:
        return self.hit.event.id

    @strawberry.field
    def turn(self) -> int:
        return self.hit.event.turn_number

    @strawberry.field
    def role(self) -> HistoryRole:
        return HistoryRole(self.hit.event.role)

    @strawberry.field
    def tool_name(self) -> str | None:
        return self.hit.event.tool_name

    @strawberry.field
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
        return len(self.hit.details.parts) or 1

    @strawberry.field(description="The event's position in its turn's transcript.")
    def sequence(self) -> int:
        return self.hit.event.sequence

    @strawberry.field(description="The ranking score; null for events read by id.")
    def score(self) -> float | None:
        return self.hit.score

    @strawberry.field(description="For a tool result or error: the call it answers.")
    def call(self) -> ToolCallType | None:
        return ToolCallType.of(self.hit.details.call, self.hit.event.agent_id)

    @strawberry.field(description="The execution the event belongs to.")
    async def execution(self, info: Info) -> ExecutionType | None:
        if self.hit.event.execution_id is None:
            return None
        row = await info.context.loaders.execution.load(self.hit.event.execution_id)
        return ExecutionType(row=row) if row else None

    @strawberry.field
    def event(self) -> HistoryEventType:
        return HistoryEventType(row=self.hit.event, details=self.hit.details)
