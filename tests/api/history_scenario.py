"""Helpers and GraphQL documents for the session history tests (R60-R64)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import update

from server.models import HistoryEvent, HistoryPart
from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api

RECORD = """
mutation($turn: ID!, $events: [ConversationEventInput!]!, $execution: ID, $key: String) {
  recordEvents(input: {turnId: $turn, events: $events, executionId: $execution,
                       idempotencyKey: $key}) {
    events { id sequence type toolName toolCallId payload execution { id kind name } }
  }
}"""
RESULT_FIELDS = """
  eventId turn role toolName isError header text part parts sequence score
  execution { id kind name }
  call { id name arguments }
  event { id text toolCalls { id name arguments } parts { id part parts text } }
"""
SEARCH = (
    """
mutation($turn: ID!, $q: String, $ids: [ID!], $limit: Int, $execution: ID,
         $key: String) {
  searchHistory(input: {turnId: $turn, query: $q, ids: $ids, limit: $limit,
                        executionId: $execution, idempotencyKey: $key}) {
    execution {
      id kind name status input output error parent { id }
      invocations { purpose model inputTokens counted }
    }
    results { """
    + RESULT_FIELDS
    + """ }
  }
}"""
)
EVENT_FIELDS = """
  id turnNumber role toolName toolCallId isError preview sequence header text
  parts { id part parts text }
  call { id name arguments }
  toolCalls { id name arguments }
  execution { id kind name }
  turn { id number attempt status }
  transcriptEvent { id type sequence }
"""
SESSION_HISTORY = (
    """
query($session: ID!, $first: Int!, $after: String, $turnNumber: Int) {
  session(id: $session) {
    history(first: $first, after: $after, turnNumber: $turnNumber) {
      edges { cursor node { """
    + EVENT_FIELDS
    + """ } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
)
HISTORY_EVENT = "query($id: ID!) { historyEvent(id: $id) { " + EVENT_FIELDS + " } }"


def history_config(index: str | None = "messages_and_tools", **memory: Any) -> dict[str, Any]:
    config = memory_config(**memory)
    if index is not None:
        config["harness"]["history"] = {"index": index}
    return config


def user(text: str) -> dict[str, Any]:
    return {"type": "USER_MESSAGE", "text": text}


def agent(text: str | None = None, *calls: tuple[str, str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "AGENT_MESSAGE"}
    if text is not None:
        event["text"] = text
    if calls:
        event["toolCalls"] = [{"id": i, "name": n, "arguments": a} for i, n, a in calls]
    return event


async def dated(api: Api, session: str, turn_number: int, at: datetime) -> None:
    """Date a kept turn as if it had been kept at ``at``."""
    async with api.database.session() as db:
        for model in (HistoryPart, HistoryEvent):
            await db.execute(
                update(model)
                .where(
                    model.session_id == uuid.UUID(session),  # type: ignore[arg-type]
                    model.turn_number == turn_number,
                )  # type: ignore[arg-type]
                .values(created_at=at)
            )
        await db.commit()


def result(
    call_id: str, text: str | None = None, *, execution: str | None = None, error: bool = False
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "TOOL_ERROR" if error else "TOOL_RESULT",
        "toolCallId": call_id,
    }
    if text is not None:
        event["text"] = text
    if execution is not None:
        event["toolExecutionId"] = execution
    return event


class HistoryScenario(Scenario):
    """A Scenario with the history mutations and reads."""

    def __init__(self, api: Api) -> None:
        super().__init__(api)

    async def record(self, turn: str, *events: dict[str, Any], **kw: Any) -> list[dict[str, Any]]:
        data = await self.api.ok(RECORD, turn=turn, events=list(events), **kw)
        return list(data["recordEvents"]["events"])

    async def record_error(self, turn: str, *events: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return await self.api.error(RECORD, turn=turn, events=list(events))

    async def committed_turn(self, session: str, *events: dict[str, Any], **kw: Any) -> str:
        turn = await self.turn(session, **kw)
        await self.record(turn, *events)
        await self.commit(turn)
        return turn

    async def search(self, turn: str, query: str | None = None, **kw: Any) -> dict[str, Any]:
        data = await self.api.ok(SEARCH, turn=turn, q=query, **kw)
        return dict(data["searchHistory"])

    async def results(self, turn: str, query: str | None = None, **kw: Any) -> list[dict[str, Any]]:
        return list((await self.search(turn, query, **kw))["results"])

    async def search_error(
        self, turn: str, query: str | None = None, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        return await self.api.error(SEARCH, turn=turn, q=query, **kw)

    async def history(self, session: str, **kw: Any) -> list[dict[str, Any]]:
        """Every kept event of the session, newest first (all pages)."""
        nodes: list[dict[str, Any]] = []
        after = None
        while True:
            data = await self.api.ok(SESSION_HISTORY, session=session, first=100, after=after, **kw)
            page = data["session"]["history"]
            nodes.extend(edge["node"] for edge in page["edges"])
            if not page["pageInfo"]["hasNextPage"]:
                return nodes
            after = page["pageInfo"]["endCursor"]
