"""Session history in GraphQL (R60-R64): ``recordEvents`` and ``searchHistory`` for the
runtime, kept events for dashboards (``Session.history``, ``historyEvent``).

The event vocabulary and what is kept are documented in
:mod:`server.services.history_record`, :mod:`server.services.history` and
docs/history.md.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Annotated, Any, cast

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info, call_ref
from resolvers.idempotent import once_shown
from resolvers.kinds import Kind
from resolvers.nodes import read_node
from resolvers.types.base import EXECUTION_ID, INVOCATION_ID, TURN_ID, idempotency_key
from resolvers.types.history import HistoryEventType, HistoryResultType
from resolvers.types.turns import ExecutionType, TranscriptEventType
from server import models
from server.domain.history import ToolCall
from server.services import history_reads, history_record, history_search
from server.services.lookup import get


@strawberry.enum(description="What an event the runtime records is.")
class ConversationEventType(Enum):
    _value_: str  # the value the service takes
    USER_MESSAGE = strawberry.enum_value(
        "USER_MESSAGE", description="The incoming message, as the agent received it (text)."
    )
    AGENT_MESSAGE = strawberry.enum_value(
        "AGENT_MESSAGE", description="A reply of the agent (text), with its toolCalls."
    )
    TOOL_RESULT = strawberry.enum_value(
        "TOOL_RESULT",
        description="A tool call's result (text), answering toolCallId; for a native tool, "
        "its toolExecutionId instead of text.",
    )
    TOOL_ERROR = strawberry.enum_value(
        "TOOL_ERROR", description="A tool call's error (text), answering toolCallId."
    )
    SKILL_LOAD = strawberry.enum_value(
        "SKILL_LOAD", description="A skill the agent loaded: its name and content (text)."
    )
    RETRIEVAL = strawberry.enum_value(
        "RETRIEVAL",
        description="Content the runtime retrieved for the model (text) and where it came "
        "from (name).",
    )


@strawberry.input(description="A tool call an agent reply made.")
class ToolCallInput:
    id: str = strawberry.field(description="The call's id, unique in the turn.")
    name: str = strawberry.field(description="The tool's name.")
    arguments: JSON | None = strawberry.field(
        default=None, description="What the call was given, a JSON object; null: {}."
    )


@strawberry.input(description="One event; which fields it takes depends on its type.")
class ConversationEventInput:
    type: ConversationEventType = strawberry.field(description="What the event is.")
    text: str | None = strawberry.field(
        default=None,
        description="The message, reply, result or error text; a skill's or retrieval's content.",
    )
    name: str | None = strawberry.field(
        default=None, description="SKILL_LOAD: the skill; RETRIEVAL: where it came from."
    )
    tool_calls: list[ToolCallInput] | None = strawberry.field(
        default=None, description="AGENT_MESSAGE: the tool calls the reply made."
    )
    tool_call_id: str | None = strawberry.field(
        default=None, description="TOOL_RESULT, TOOL_ERROR: the call answered."
    )
    tool_execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="TOOL_RESULT, TOOL_ERROR of a native tool call: the execution the "
        "server recorded for it; its output is the result, so text is left out.",
    )


@strawberry.input(description="Events of a turn's conversation to record.")
class RecordEventsInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn.")
    events: list[ConversationEventInput] = strawberry.field(
        description="The events, in the order they happened."
    )
    execution_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="Whose conversation this is: a helper's execution; null or omitted: "
        "the turn's own.",
    )
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="The search_history tool's arguments: a query, or ids.")
class SearchHistoryInput:
    turn_id: uuid.UUID = strawberry.field(description=TURN_ID)
    query: str | None = strawberry.field(
        default=None, description="The text to rank parts by; give it or ids."
    )
    ids: list[uuid.UUID] | None = strawberry.field(
        default=None, description="Read these events whole instead of searching."
    )
    limit: int | None = strawberry.field(
        default=None,
        description=f"At most this many results (default {history_search.DEFAULT_LIMIT}, "
        f"at most {history_search.MAX_LIMIT}).",
    )
    execution_id: uuid.UUID | None = strawberry.field(default=None, description=EXECUTION_ID)
    invocation_id: uuid.UUID | None = strawberry.field(default=None, description=INVOCATION_ID)
    idempotency_key: str | None = idempotency_key()


@strawberry.type(description="The events recorded.")
class RecordEventsPayload:
    events: list[TranscriptEventType] = strawberry.field(
        description="The transcript events written, in input order."
    )


@strawberry.type(description="What search_history found.")
class SearchHistoryPayload:
    execution: ExecutionType = strawberry.field(
        description="The tool call's execution, with its input and output."
    )
    results: list[HistoryResultType] = strawberry.field(
        description="The results, best first; for ids, in the order given."
    )


def _tool_calls(value: list[ToolCallInput] | None) -> list[ToolCall] | None:
    if value is None:
        return None
    return [ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in value]


@strawberry.type
class HistoryQuery:
    @strawberry.field(description="A kept history event by id.")
    async def history_event(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The event's id.")],
    ) -> HistoryEventType | None:
        return cast(HistoryEventType, await read_node(info.context, Kind.HISTORY_EVENT, id))


@strawberry.type
class HistoryMutation:
    @strawberry.mutation(
        description="Append the turn's conversation to its transcript: messages, replies "
        "with their tool calls, tool results and errors, skill loads, retrievals."
    )
    async def record_events(
        self,
        info: Info,
        input: Annotated[RecordEventsInput, strawberry.argument(description="The events.")],
    ) -> RecordEventsPayload:
        async def run() -> tuple[list[models.TranscriptEvent], dict[str, Any]]:
            rows = await history_record.record_events(
                db,
                turn_id=input.turn_id,
                execution_id=input.execution_id,
                events=[
                    history_record.EventInput(
                        type=e.type.value,
                        text=e.text,
                        name=e.name,
                        tool_calls=_tool_calls(e.tool_calls),
                        tool_call_id=e.tool_call_id,
                        tool_execution_id=e.tool_execution_id,
                    )
                    for e in input.events
                ],
            )
            return rows, {"events": [str(r.id) for r in rows]}

        async def reload(result: dict[str, Any]) -> list[models.TranscriptEvent]:
            return await history_reads.transcript_events(
                db, [uuid.UUID(e) for e in result["events"]]
            )

        db = info.context.db
        rows, _ = await once_shown(info, "recordEvents", input, run, reload)
        return RecordEventsPayload(events=[TranscriptEventType(row=r) for r in rows])

    @strawberry.mutation(
        # R62-R64
        description="The native search_history tool: rank the parts of the events the "
        "session's earlier committed turns kept, or read events whole by id; recorded as an "
        "execution whose output lists the events returned."
    )
    async def search_history(
        self,
        info: Info,
        input: Annotated[
            SearchHistoryInput, strawberry.argument(description="The tool's arguments.")
        ],
    ) -> SearchHistoryPayload:
        async def run() -> tuple[history_search.HistorySearch, dict[str, Any]]:
            found = await history_search.search_history(
                db,
                info.context.embedder,
                ref=call_ref(input),
                query=input.query,
                ids=input.ids,
                limit=input.limit,
            )
            hits = [h.to_json() for h in found.hits]
            return found, {"execution": str(found.execution.id), "hits": hits}

        async def reload(result: dict[str, Any]) -> history_search.HistorySearch:
            execution = await get(db, models.Execution, uuid.UUID(result["execution"]))
            hits = await history_search.load_hits(db, result["hits"], agent_id=execution.agent_id)
            return history_search.HistorySearch(execution=execution, hits=hits)

        db = info.context.db
        found, _ = await once_shown(info, "searchHistory", input, run, reload)
        return SearchHistoryPayload(
            execution=ExecutionType(row=found.execution),
            results=[HistoryResultType(hit=h) for h in found.hits],
        )


__all__ = ["HistoryMutation", "HistoryQuery"]
