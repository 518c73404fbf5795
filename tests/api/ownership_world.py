"""A world of objects at every distance from one agent's open turn, built through the
real schema, for the ownership tests (docs/security.md, "Ownership"; R10-R13, R70).

Agent A of namespace NS1 runs turn T (live, open) in session S1. Around it: objects of
A in reach of T (``OWN``), of A in another session (``OTHER_SESSION``), in another
turn of S1 (``OTHER_TURN``), made by a preview turn of S1 (``PREVIEW``), staged by an
open turn of S1 that has not committed (``STAGED``), and of agent A2 of NS1
(``OTHER_AGENT``) and agent B of NS2 (``OTHER_NAMESPACE``), each of which has a life
like A's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from resolvers.kinds import Kind
from server import models
from tests.conftest import Api

OWN = "own"
OTHER_SESSION = "another session"
OTHER_TURN = "another turn"
PREVIEW = "a preview turn"
STAGED = "staged by another turn"
OTHER_AGENT = "another agent"
OTHER_NAMESPACE = "another namespace"

# which distances the world has an object of each kind at (besides OWN, OTHER_AGENT and
# OTHER_NAMESPACE, which it has of every kind)
AROUND: dict[Kind, set[str]] = {
    Kind.SESSION: {OTHER_SESSION},
    Kind.TURN: {OTHER_SESSION},
    Kind.EXECUTION: {OTHER_SESSION, OTHER_TURN},
    Kind.INVOCATION: {OTHER_SESSION, OTHER_TURN},
    Kind.MEMORY_RECORD: {OTHER_SESSION, PREVIEW, STAGED},
    Kind.MEMORY_VERSION: {STAGED},
    Kind.HISTORY_EVENT: {OTHER_SESSION, PREVIEW},
    Kind.OUTPUT_USE: {STAGED},
}


def distances(kind: Kind) -> set[str]:
    return {OWN, OTHER_AGENT, OTHER_NAMESPACE} | AROUND.get(kind, set())


CONFIG = {
    "harness": {
        "memory": {
            "enabled": True,
            "tools": ["add_memory", "read_memory", "delete_memory"],
            "scope": {"read": ["session", "agent"], "write": ["session", "agent"]},
        },
        "history": {"index": "messages_and_tools"},
    }
}

_AGENT = """mutation($ns: String!, $name: String!) {
  createAgent(input: {namespace: $ns, name: $name}) { agent { id } } }"""
_PUBLISH = """mutation($agent: ID!, $config: JSON!) {
  publishAgentVersion(input: {agentId: $agent, config: $config}) { agentVersion { id } } }"""
_SESSION = "mutation($agent: ID!) { createSession(input: {agentId: $agent}) { session { id } } }"
_BEGIN = """mutation($session: ID!, $preview: Boolean!) {
  beginTurn(input: {sessionId: $session, preview: $preview}) { turn { id } execution { id } } }"""
_EVENTS = """mutation($turn: ID!, $text: String!) {
  recordEvents(input: {turnId: $turn, events: [{type: USER_MESSAGE, text: $text},
    {type: AGENT_MESSAGE, text: "Noted."}]}) { events { id } } }"""
_INVOKE = """mutation($execution: ID!, $purpose: InvocationPurpose!) {
  recordInvocation(input: {executionId: $execution, purpose: $purpose, model: "m"}) {
    invocation { id } } }"""
_HELPER = """mutation($turn: ID!) {
  startExecution(input: {turnId: $turn, kind: HELPER, name: "helper"}) { execution { id } } }"""
_ADD = """mutation($turn: ID!, $summary: String!, $scope: Scope!) {
  addMemory(input: {turnId: $turn, summary: $summary, scope: $scope}) {
    execution { id } memories { id recordId } } }"""
_SEARCH = """mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { execution { id uses { id } } } }"""
_HISTORY_SEARCH = """mutation($turn: ID!, $q: String!) {
  searchHistory(input: {turnId: $turn, query: $q}) { execution { id uses { id } } } }"""
_REVIEW = """mutation($turn: ID!) {
  beginMemoryReview(input: {turnId: $turn}) { review { id execution { id } } } }"""
_COMMIT = "mutation($turn: ID!) { commitTurn(input: {turnId: $turn}) { turn { id } } }"
_FAIL = "mutation($turn: ID!) { failTurn(input: {turnId: $turn}) { turn { id } } }"
_KEPT = """query($session: ID!) { session(id: $session) {
  history(first: 50) { edges { node { id preview parts { id } } } } } }"""
_TRANSCRIPT = "query($turn: ID!) { turn(id: $turn) { transcript { id } } }"


@dataclass
class Life:
    """What one agent did: ids by kind, and the place each belongs to."""

    agent: str = ""
    version: str = ""
    s1: str = ""
    t1: str = ""  # committed in S1: records, history, uses
    turn: str = ""  # T: open, live, in S1
    execution: str = ""  # T's own
    helper: str = ""
    invocation: str = ""  # on T's own execution
    tool_execution: str = ""  # T's add_memory call
    review: str = ""
    review_invocation: str = ""
    objects: dict[Kind, str] = field(default_factory=dict)


class World:
    """Built once a module: :meth:`build`."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.tag = uuid.uuid4().hex[:8]
        self.ns1, self.ns2 = f"own{self.tag}", f"far{self.tag}"
        self.lives: dict[str, Life] = {}
        # kind -> distance -> id, around A's turn T
        self.at: dict[Kind, dict[str, str]] = {kind: {} for kind in Kind}
        self.extra: dict[str, str] = {}  # named ids the cases need

    async def _ok(self, document: str, **variables: Any) -> dict[str, Any]:
        return await self.api.ok(document, **variables)

    async def _turn(self, session: str, *, preview: bool = False) -> tuple[str, str]:
        begun = (await self._ok(_BEGIN, session=session, preview=preview))["beginTurn"]
        return begun["turn"]["id"], begun["execution"]["id"]

    async def _add(self, turn: str, summary: str, scope: str = "SESSION") -> dict[str, Any]:
        added = (await self._ok(_ADD, turn=turn, summary=summary, scope=scope))["addMemory"]
        return {
            "record": added["memories"][0]["recordId"],
            "version": added["memories"][0]["id"],
            "execution": added["execution"]["id"],
        }

    async def _invoke(self, execution: str, purpose: str = "TURN") -> str:
        data = await self._ok(_INVOKE, execution=execution, purpose=purpose)
        return str(data["recordInvocation"]["invocation"]["id"])

    async def _committed(self, session: str, text: str, *, preview: bool = False) -> dict[str, Any]:
        """A committed turn with a conversation, a record and a search (memory uses)."""
        turn, execution = await self._turn(session, preview=preview)
        await self._ok(_EVENTS, turn=turn, text=text)
        added = await self._add(turn, f"{text}: a fact")
        search = (await self._ok(_SEARCH, turn=turn, q=text))["searchMemory"]
        invocation = await self._invoke(execution)
        transcript = (await self._ok(_TRANSCRIPT, turn=turn))["turn"]["transcript"]
        await self._ok(_COMMIT, turn=turn)
        kept = (await self._ok(_KEPT, session=session))["session"]["history"]["edges"]
        event = next(e["node"] for e in kept if e["node"]["preview"] == preview)
        return {
            "turn": turn,
            "execution": execution,
            "invocation": invocation,
            "transcript": transcript[0]["id"],
            "event": event["id"],
            "part": event["parts"][0]["id"],
            "use": await self._use_of(search["execution"]["id"]),
            **added,
        }

    async def _use_of(self, execution: str) -> str:
        """The first output use of an execution, read from its table (one an open turn
        staged is shown to no reader)."""
        async with self.api.database.session() as db:
            found = await db.scalar(
                text("SELECT id FROM output_uses WHERE execution_id = :e ORDER BY rank LIMIT 1"),
                {"e": execution},
            )
        return str(found)

    async def _life(self, namespace: str, name: str) -> Life:
        life = Life()
        life.agent = (await self._ok(_AGENT, ns=namespace, name=name))["createAgent"]["agent"]["id"]
        data = await self._ok(_PUBLISH, agent=life.agent, config=CONFIG)
        life.version = data["publishAgentVersion"]["agentVersion"]["id"]
        life.s1 = (await self._ok(_SESSION, agent=life.agent))["createSession"]["session"]["id"]
        done = await self._committed(life.s1, f"{name} likes tea")
        life.t1 = done["turn"]
        life.turn, life.execution = await self._turn(life.s1)
        await self._ok(_EVENTS, turn=life.turn, text=f"{name} asks again")
        life.helper = (await self._ok(_HELPER, turn=life.turn))["startExecution"]["execution"]["id"]
        life.invocation = await self._invoke(life.execution)
        staged = await self._add(life.turn, f"{name} staged in T", "AGENT")
        life.tool_execution = staged["execution"]
        history = (await self._ok(_HISTORY_SEARCH, turn=life.turn, q="tea"))["searchHistory"]
        review = (await self._ok(_REVIEW, turn=life.turn))["beginMemoryReview"]["review"]
        life.review = review["id"]
        life.review_invocation = await self._invoke(review["execution"]["id"], "MEMORY")
        life.objects = {
            Kind.AGENT: life.agent,
            Kind.AGENT_VERSION: life.version,
            Kind.SESSION: life.s1,
            Kind.TURN: life.turn,
            Kind.EXECUTION: life.execution,
            Kind.INVOCATION: life.invocation,
            Kind.TRANSCRIPT_EVENT: done["transcript"],
            Kind.MEMORY_RECORD: done["record"],
            Kind.MEMORY_VERSION: done["version"],
            Kind.MEMORY_REVIEW: life.review,
            Kind.HISTORY_EVENT: done["event"],
            Kind.HISTORY_PART: done["part"],
            Kind.OUTPUT_USE: done["use"],
        }
        self.extra[f"{name}.staged_record"] = staged["record"]
        self.extra[f"{name}.history_use"] = await self._use_of(history["execution"]["id"])
        return life

    async def build(self) -> World:
        a = self.lives["A"] = await self._life(self.ns1, "A")
        self.lives["A2"] = await self._life(self.ns1, "A2")
        self.lives["B"] = await self._life(self.ns2, "B")
        for kind in Kind:
            self.at[kind][OWN] = a.objects[kind]
            self.at[kind][OTHER_AGENT] = self.lives["A2"].objects[kind]
            self.at[kind][OTHER_NAMESPACE] = self.lives["B"].objects[kind]
        # A in another session: a committed turn with its records, history and uses, and
        # an agent-scope record there (in reach of T: AGENT scope)
        s2 = (await self._ok(_SESSION, agent=a.agent))["createSession"]["session"]["id"]
        elsewhere = await self._committed(s2, "A elsewhere")
        t2, _ = await self._turn(s2)
        agent_scope = await self._add(t2, "A agent-wide", "AGENT")
        await self._ok(_COMMIT, turn=t2)
        self.extra["A.agent_scope_elsewhere"] = agent_scope["record"]
        for kind, key in (
            (Kind.SESSION, None),
            (Kind.TURN, "turn"),
            (Kind.EXECUTION, "execution"),
            (Kind.INVOCATION, "invocation"),
            (Kind.MEMORY_RECORD, "record"),
            (Kind.HISTORY_EVENT, "event"),
        ):
            self.at[kind][OTHER_SESSION] = s2 if key is None else elsewhere[key]
        # A's preview turn in S1: its record and kept event
        preview = await self._committed(a.s1, "A previews", preview=True)
        self.at[Kind.MEMORY_RECORD][PREVIEW] = preview["record"]
        self.at[Kind.HISTORY_EVENT][PREVIEW] = preview["event"]
        # another open turn of S1: its executions, and what it staged (a record, its
        # version, and a use naming it)
        other, other_execution = await self._turn(a.s1)
        self.at[Kind.EXECUTION][OTHER_TURN] = other_execution
        self.at[Kind.INVOCATION][OTHER_TURN] = await self._invoke(other_execution)
        staged = await self._add(other, "A staged elsewhere in S1 about lemons")
        search = (await self._ok(_SEARCH, turn=other, q="lemons"))["searchMemory"]
        self.at[Kind.MEMORY_RECORD][STAGED] = staged["record"]
        self.at[Kind.MEMORY_VERSION][STAGED] = staged["version"]
        self.at[Kind.OUTPUT_USE][STAGED] = await self._use_of(search["execution"]["id"])
        # a failed turn of S1, for retryOf
        failed, _ = await self._turn(a.s1)
        await self._ok(_FAIL, turn=failed)
        self.extra["A.failed_turn"] = failed
        assert {kind: set(found) for kind, found in self.at.items()} == {
            kind: distances(kind) for kind in Kind
        }
        return self


# Every table's rows, as one digest each (in one statement): a refused call changes none.
_TABLES = sorted(models.metadata.tables)


async def snapshot(api: Api) -> dict[str, str]:
    parts = [
        f"SELECT '{t}' AS name, count(*) AS n, "
        f"coalesce(md5(string_agg(md5(x::text), '' ORDER BY md5(x::text))), '') AS d "
        f"FROM {t} x"
        for t in _TABLES
    ]
    async with api.database.session() as db:
        rows = (await db.execute(text(" UNION ALL ".join(parts)))).all()
    return {row.name: f"{row.n}:{row.d}" for row in rows}
