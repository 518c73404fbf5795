"""Types of a turn's work: turns, executions, invocations and transcript events."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import Node, column, later, listed, node_id, paginated_instead, related
from resolvers.types.enums import (
    ExecutionKind,
    ExecutionStatus,
    InvocationPurpose,
    TranscriptEventKind,
    TurnStatus,
)
from resolvers.types.pages import Connection, paged
from resolvers.types.usage import UsageType
from server import models
from server.domain.usage import ModelTotals
from server.models.rows import ExecutionRow
from server.services import reads

if TYPE_CHECKING:
    from resolvers.types.memory import MemoryRecordType
    from resolvers.types.uses import OutputUseType

_MEMORY = "resolvers.types.memory"
_USES = "resolvers.types.uses"
_record = later(_MEMORY, "MemoryRecordType")
_use = later(_USES, "OutputUseType")

# What of memory a reader sees (R12, R70, R71), said once for the fields that show it.
_MEMORY_TOOL_IO = (
    "A memory tool's input and output are memory: null without SELECT on "
    "<namespace>.AgentMemory.indexes.* and <namespace>.AgentMemory.document. In an open "
    'turn, {"redacted": "staged: the turn has not committed"} for every reader until it '
    "commits (but in the answers of that turn's own mutations). In a rolled-back or failed "
    'turn, {"redacted": "discarded: the turn rolled back"} (or "... failed") for every '
    "reader but the agent itself."
)


@strawberry.type(
    name="Turn",
    description="One attempt of an agent at a step of its work: opened by beginTurn, ended "
    "by commitTurn, rollbackTurn or failTurn. Its memory is published only if it commits.",
)
class TurnType(Node):
    row: strawberry.Private[models.Turn]

    id: strawberry.ID = node_id("The turn's id.")
    number: int = column(
        description="The turn's position in its session, from 1; a retry keeps it."
    )
    attempt: int = column(description="Which attempt at this number it is, from 1.")
    status: TurnStatus = column(convert=TurnStatus, description="Where the turn stands.")
    preview: bool = column(
        description="True for a turn in preview mode: what it writes are preview records."
    )
    error: str | None = column(description="The error failTurn gave; null otherwise.")
    created_at: datetime = column(description="When the turn began.")
    ended_at: datetime | None = column(description="When the turn ended; null while open.")
    replay_of: TurnType | None = related(
        "turn",
        "replay_of_id",
        lambda r: TurnType(row=r),
        description="The earlier turn this one replays, if any.",
    )
    retry_of: TurnType | None = related(
        "turn",
        "retry_of_id",
        lambda r: TurnType(row=r),
        description="The failed attempt this one retries, if any.",
    )
    session: SessionType | None = related(
        "session",
        "session_id",
        lambda r: SessionType(row=r),
        description="The session of the turn; null for an agent without sessions.",
    )
    agent: AgentType = related(
        "agent", "agent_id", lambda r: AgentType(row=r), description="The agent that ran it."
    )

    agent_version: AgentVersionType = related(
        "agent_version",
        "agent_version_id",
        lambda r: AgentVersionType(row=r),
        description="The version of the agent's configuration the turn runs.",
    )

    executions: list[ExecutionType] = listed(
        "executions_of_turn",
        lambda r: ExecutionType(row=r),
        description="Every execution of the turn, oldest first.",
        deprecation_reason=paginated_instead("executionsConnection"),
    )
    executions_connection: Connection[ExecutionType] = paged(
        reads.list_executions,
        lambda r: ExecutionType(row=r),
        description="The turn's executions, oldest first, a page at a time.",
        turn_id="id",
    )
    transcript: list[TranscriptEventType] = listed(
        "events_of_turn",
        lambda r: TranscriptEventType(row=r),
        description="The turn's transcript events, in order; kept whatever the turn's end. "
        "See TranscriptEvent.payload for what of memory a reader sees.",
        deprecation_reason=paginated_instead("transcriptConnection"),
    )
    transcript_connection: Connection[TranscriptEventType] = paged(
        reads.list_transcript,
        lambda r: TranscriptEventType(row=r),
        description="The turn's transcript events in order, a page at a time; each reads as "
        "in transcript.",
        turn_id="id",
    )

    @strawberry.field(description="Every model call of the turn's executions, added up, by model.")
    async def usage(self, info: Info) -> UsageType:
        rows = await info.context.loaders.usage_of_turn.load(self.row.id)
        return UsageType.of(rows, info.context.settings.model_prices)

    @strawberry.field(
        description="What the turn wrote: live and preview records it created or changed; "
        "a preview deletion is a preview record of status DELETED."
    )
    async def memories(
        self, info: Info
    ) -> list[Annotated[MemoryRecordType, strawberry.lazy(_MEMORY)]]:
        rows = await reads.turn_memories(
            info.context.db, agent_id=self.row.agent_id, turn_id=self.row.id
        )
        return [_record(row=r) for r in rows]


@strawberry.type(
    name="Execution",
    description="A unit of work inside a turn: the agent's own run, a native tool call, a "
    "helper or a program.",
)
class ExecutionType(Node):
    row: strawberry.Private[models.Execution | ExecutionRow]

    id: strawberry.ID = node_id("The execution's id.")
    kind: ExecutionKind = column(convert=ExecutionKind, description="What it records.")
    name: str = column(
        description="The tool's name for a tool execution (add_memory, search_memory, ...); "
        "the name startExecution gave for a helper or program; turn for the turn's own."
    )
    status: ExecutionStatus = column(
        convert=ExecutionStatus, description="Where the execution stands."
    )
    input: JSON | None = column(description=_MEMORY_TOOL_IO)
    output: JSON | None = column(description=_MEMORY_TOOL_IO)
    error: str | None = column(description="Why it failed; null unless FAILED.")
    created_at: datetime = column(description="When it started.")
    ended_at: datetime | None = column(description="When it ended; null while RUNNING.")
    parent: ExecutionType | None = related(
        "execution",
        "parent_id",
        lambda r: ExecutionType(row=r),
        description="The execution that started or called it; null for the turn's own.",
    )

    turn: TurnType = related(
        "turn", "turn_id", lambda r: TurnType(row=r), description="The turn it belongs to."
    )
    children: list[ExecutionType] = listed(
        "children_of_execution",
        lambda r: ExecutionType(row=r),
        description="The executions it started or called, oldest first.",
    )
    invocations: list[InvocationType] = listed(
        "invocations_of_execution",
        lambda r: InvocationType(row=r),
        description="The model calls recorded on it, oldest first.",
    )

    uses: list[Annotated[OutputUseType, strawberry.lazy(_USES)]] | None = listed(
        "uses_of_execution",
        lambda r: _use(row=r),
        # R43, R63; the grants are R71's
        description="What the execution's output put before the model, in its order: "
        "RETRIEVED record versions for search_memory and recall, parts of kept events for "
        "search_history; empty for other executions. Memory uses need SELECT on "
        "<namespace>.AgentMemory.indexes.* and <namespace>.AgentMemory.document, history "
        "uses SELECT on <namespace>.Session: without them, null and FORBIDDEN.",
    )


@strawberry.type(
    name="Invocation", description="One model call recorded inside an execution: its usage."
)
class InvocationType(Node):
    row: strawberry.Private[models.Invocation]

    id: strawberry.ID = node_id("The invocation's id.")
    purpose: InvocationPurpose = column(
        convert=InvocationPurpose, description="What the model call was for."
    )
    model: str = column(description="The model's name, as recorded.")
    input_tokens: int = column(description="Tokens the model read.")
    output_tokens: int = column(description="Tokens the model wrote.")
    latency_ms: int | None = column(
        description="How long the call took, in milliseconds, as the runtime gave it; null "
        "when it did not (and for EMBED)."
    )

    @strawberry.field(
        description="What the call cost, in the currency of the server's price table "
        "(AGENT_MEMORY_MODEL_PRICES, per million tokens); null when the table does not "
        "price its model."
    )
    def cost(self, info: Info) -> float | None:
        row = self.row
        totals = ModelTotals(row.model, 1, row.input_tokens, row.output_tokens, 0, 0)
        return totals.cost(info.context.settings.model_prices)

    counted: bool = column(description="False for usage no limit counts (EMBED).")
    created_at: datetime = column(
        description="When it was recorded: the call ended then, latencyMs before."
    )
    execution: ExecutionType = related(
        "execution",
        "execution_id",
        lambda r: ExecutionType(row=r),
        description="The execution the call was made in.",
    )


@strawberry.type(
    name="TranscriptEvent",
    description="One event of a turn's transcript: what was said and done, in order.",
)
class TranscriptEventType(Node):
    row: strawberry.Private[models.TranscriptEvent]

    id: strawberry.ID = node_id("The event's id.")
    sequence: int = column(description="The event's position in its turn's transcript, from 1.")

    type: TranscriptEventKind = column(
        convert=TranscriptEventKind, description="What the event records."
    )

    tool_name: str | None = column(
        description="For a tool result or error: the tool's name; null otherwise."
    )
    tool_call_id: str | None = column(
        description="For a tool result or error: the id of the call it answers; null otherwise."
    )
    payload: JSON = column(
        # R12, R70, R71
        description="What the event holds, by its type (a message's text, a result, the "
        "pinned versions, usage). A memory tool's event (and MEMORY_PINNED, RETRIEVAL) is "
        "memory: without SELECT on <namespace>.AgentMemory.indexes.* and "
        '<namespace>.AgentMemory.document it is {"redacted": ...}, and so are the '
        "arguments of the memory calls an agent reply names. In an open turn it is "
        '{"redacted": "staged: the turn has not committed"} for every reader until it '
        "commits (but in the answers of that turn's own mutations). In a rolled-back or "
        'failed turn it is {"redacted": "discarded: the turn rolled back"} (or "... '
        'failed") for every reader but the agent itself.'
    )
    created_at: datetime = column(description="When it was recorded.")

    execution: ExecutionType | None = related(
        "execution",
        "execution_id",
        lambda r: ExecutionType(row=r),
        description="Whose conversation it belongs to: the turn's own run, a helper's, or "
        "the native tool call it records.",
    )
