"""Small helpers that drive the real schema through a typical agent's life."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api

CREATE_AGENT = """
mutation($ns: String!, $name: String!, $sessionless: Boolean!) {
  createAgent(input: {namespace: $ns, name: $name, sessionless: $sessionless}) { agent { id } }
}"""
PUBLISH = """
mutation($agent: ID!, $config: JSON!) {
  publishAgentVersion(input: {agentId: $agent, config: $config}) { agentVersion { id number } }
}"""
CREATE_SESSION = """
mutation($agent: ID!) { createSession(input: {agentId: $agent}) { session { id } } }"""
BEGIN = """
mutation($session: ID, $agent: ID, $preview: Boolean! = false, $replayOf: ID,
         $retryOf: ID, $key: String) {
  beginTurn(input: {sessionId: $session, agentId: $agent, preview: $preview,
                    replayOf: $replayOf, retryOf: $retryOf, idempotencyKey: $key}) {
    turn { id number attempt preview status }
    execution { id }
    pinned { recordId versionId summary line }
    instructions
  }
}"""
COMMIT = "mutation($turn: ID!) { commitTurn(input: {turnId: $turn}) { turn { id status } } }"
ROLLBACK = "mutation($turn: ID!) { rollbackTurn(input: {turnId: $turn}) { turn { id status } } }"
FAIL = """mutation($turn: ID!) {
  failTurn(input: {turnId: $turn, error: "boom"}) { turn { id status } } }"""
ADD = """
mutation($turn: ID!, $summary: String!, $content: String, $kind: String,
         $labels: [LabelInput!],
         $scope: Scope, $pinned: Boolean! = false, $replaces: ID, $execution: ID,
         $key: String) {
  addMemory(input: {turnId: $turn, summary: $summary, content: $content, kind: $kind,
                    labels: $labels, scope: $scope, pinned: $pinned, replaces: $replaces,
                    executionId: $execution, idempotencyKey: $key}) {
    execution { id name status output }
    memories { id recordId status summary record { id status scope preview pinned } }
  }
}"""
READ = """
mutation($turn: ID!, $id: ID!, $execution: ID) {
  readMemory(input: {turnId: $turn, id: $id, executionId: $execution}) {
    execution { id name output }
    sources { id recordId status summary }
  }
}"""
DELETE = """
mutation($turn: ID!, $id: ID!, $execution: ID) {
  deleteMemory(input: {turnId: $turn, id: $id, executionId: $execution}) {
    execution { id name output }
    memories { id recordId status summary record { id status preview replaces { id } } }
  }
}"""
HELPER = """
mutation($turn: ID!, $kind: HelperKind!) {
  startExecution(input: {turnId: $turn, kind: $kind, name: "helper"}) { execution { id kind } }
}"""

ALL_TOOLS = ["add_memory", "read_memory", "delete_memory"]


def label_list(labels: dict[str, Any]) -> list[dict[str, Any]]:
    """Labels as an input gives them: a list of {name, value}."""
    return [{"name": name, "value": value} for name, value in labels.items()]


def memory_config(
    *,
    read: list[str] | None = None,
    write: list[str] | None = None,
    tools: list[str] | None = None,
    pinned: int | None = None,
    labels: dict[str, Any] | None = None,
    kinds: list[str] | None = None,
    enabled: bool = True,
) -> dict[str, Any]:
    memory: dict[str, Any] = {"enabled": enabled, "tools": ALL_TOOLS if tools is None else tools}
    if read or write:
        memory["scope"] = {"read": read or ["session"], "write": write or ["session"]}
    if pinned is not None:
        memory["pinned"] = {"max_tokens": pinned}
    if labels is not None:
        memory["labels"] = labels
    if kinds is not None:
        memory["kinds"] = kinds
    return {"harness": {"memory": memory}}


class Scenario:
    """One agent in its own namespace, with helpers for its sessions and turns."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.agent_id = ""

    async def agent(
        self,
        config: dict[str, Any] | None = None,
        *,
        sessionless: bool = False,
        namespace: str | None = None,
    ) -> str:
        ns = namespace or f"ns{uuid.uuid4().hex[:10]}"
        data = await self.api.ok(CREATE_AGENT, ns=ns, name="agent", sessionless=sessionless)
        self.agent_id = data["createAgent"]["agent"]["id"]
        if config is not None:
            await self.publish(config)
        return self.agent_id

    async def publish(self, config: dict[str, Any]) -> dict[str, Any]:
        data = await self.api.ok(PUBLISH, agent=self.agent_id, config=config)
        return dict(data["publishAgentVersion"]["agentVersion"])

    async def session(self) -> str:
        data = await self.api.ok(CREATE_SESSION, agent=self.agent_id)
        return str(data["createSession"]["session"]["id"])

    async def begin(self, session: str | None = None, **kw: Any) -> dict[str, Any]:
        if session is None:
            kw["agent"] = self.agent_id
        data = await self.api.ok(BEGIN, session=session, **kw)
        return dict(data["beginTurn"])

    async def turn(self, session: str | None = None, **kw: Any) -> str:
        return str((await self.begin(session, **kw))["turn"]["id"])

    async def add(self, turn: str, summary: str, **kw: Any) -> dict[str, Any]:
        if isinstance(kw.get("labels"), dict):
            kw["labels"] = label_list(kw["labels"])
        data = await self.api.ok(ADD, turn=turn, summary=summary, **kw)
        return dict(data["addMemory"])

    async def add_id(self, turn: str, summary: str, **kw: Any) -> str:
        return str((await self.add(turn, summary, **kw))["memories"][0]["recordId"])

    async def commit(self, turn: str) -> None:
        await self.api.ok(COMMIT, turn=turn)

    async def rollback(self, turn: str) -> None:
        await self.api.ok(ROLLBACK, turn=turn)

    async def read(self, turn: str, record: str) -> tuple[str, dict[str, Any]] | dict[str, Any]:
        result = await self.api.execute(READ, turn=turn, id=record)
        if result.errors:
            return result.errors[0].message, dict(result.errors[0].extensions or {})
        return dict(result.data["readMemory"])

    async def can_read(self, turn: str, record: str) -> bool:
        return isinstance(await self.read(turn, record), dict)

    async def committed(self, summary: str, session: str | None = None, **kw: Any) -> str:
        turn = await self.turn(session)
        record = await self.add_id(turn, summary, **kw)
        await self.commit(turn)
        return record


# Dashboard views used to check what a call changed (or that it changed nothing).

TURN_VIEW = """
query($id: ID!) {
  turn(id: $id) {
    id number attempt status preview error endedAt
    replayOf { id } retryOf { id } session { id } agentVersion { id }
    executions {
      id kind name status error input output parent { id }
      invocations { id purpose model inputTokens outputTokens counted }
    }
    transcript { sequence type toolName payload execution { id } }
    memories {
      id status preview scope pinned replaces { id }
      current { id status summary }
    }
  }
}"""
RECORDS = """
query($agent: ID!, $filter: MemoryRecordFilter) {
  agent(id: $agent) {
    memoryRecords(first: 100, filter: $filter) {
      edges { node { id status scope preview pinned replaces { id } replacedBy { id }
                     current { id status summary kind labels } } }
    }
  }
}"""
MEMORY = """
query($id: ID!) {
  agentMemory(id: $id) {
    id status scope preview pinned
    replaces { id } replacedBy { id } session { id }
    current { id number status summary content kind labels }
    versions {
      id number status summary
      writtenBy {
        execution { id kind name } invocation { id purpose } agentVersion { id }
        session { id } turn { id }
      }
    }
  }
}"""
INVOKE = """
mutation($execution: ID!, $purpose: InvocationPurpose!, $model: String! = "model-a",
         $input: Int! = 0, $output: Int! = 0) {
  recordInvocation(input: {executionId: $execution, purpose: $purpose, model: $model,
                           inputTokens: $input, outputTokens: $output}) { invocation {
    id purpose model inputTokens outputTokens counted execution { id }
  } }
}"""
START_EXECUTION = """
mutation($turn: ID!, $kind: HelperKind!, $name: String! = "helper", $parent: ID) {
  startExecution(input: {turnId: $turn, kind: $kind, name: $name,
                         parentExecutionId: $parent}) { execution {
    id kind name status parent { id }
  } }
}"""


async def turn_view(api: Api, turn: str) -> dict[str, Any]:
    """A turn as a dashboard reads it: executions, transcript and memories."""
    return dict((await api.ok(TURN_VIEW, id=turn))["turn"])


async def records(api: Api, agent: str, **filter: Any) -> list[dict[str, Any]]:
    """Every committed record of the agent, newest first, as the record listing shows it."""
    data = await api.ok(RECORDS, agent=agent, filter=filter or None)
    return [edge["node"] for edge in data["agent"]["memoryRecords"]["edges"]]


async def memory_record(api: Api, record: str) -> dict[str, Any]:
    """One record with its full version history (R25)."""
    return dict((await api.ok(MEMORY, id=record))["agentMemory"])


# Summaries tests share where the words do not matter: the embedder caches repeated texts,
# so reusing them keeps the suite fast.
EMAIL = "The customer prefers email"
PHONE = "The customer prefers phone calls"
INVOICES = "Invoices go out on the first of the month"
OVERDUE = "Account 17 is overdue"
REFUNDS = "Refunds are paid as store credit"
SHIPPING = "Orders ship on Mondays"
