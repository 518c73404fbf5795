"""The turn an MCP call runs in (R12: every write belongs to a turn's transaction).

- *Bound*: the host names its open turn (the ``Agent-Memory-Turn`` header, or
  ``agent-memory/turn`` in the request's ``_meta``), and may name the calling execution
  and the model call (``agent-memory/execution``, ``agent-memory/invocation``). Every
  call runs in that turn, as the GraphQL mutation given that ``turnId`` would; the
  host commits or rolls back.
- *Unbound*: each call runs in a turn of its own, which commits when the call
  succeeds and rolls back when it is refused, so nothing of a refused call remains
  but its failed execution. The turns belong to one session: the one the
  ``Agent-Memory-Session`` header names; else the agent's session the
  ``Agent-Memory-Session-External-Id`` header names by the caller's own id (a chat
  thread's, a ticket's), created with that ``externalId`` on its first call; else one
  created for the MCP session on its first call and kept for its later ones (an agent
  without sessions has none: its turns name the agent).

Which agent, unbound: the session's, else the ``Agent-Memory-Agent`` header's, else
the one the runtime token is bound to. Every id named here goes into a GraphQL input
(``beginTurn``'s ``sessionId`` or ``agentId``, a tool's ``turnId``), where the
ownership table checks it as it checks any other (resolvers/ownership.py).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memory_mcp.operations import (
    AGENT_CONFIG,
    BEGIN_TURN,
    COMMIT_TURN,
    CREATE_SESSION,
    ROLLBACK_TURN,
    SESSION_BY_EXTERNAL_ID,
    SESSION_CONFIG,
    TURN_CONFIG,
    Answer,
    Operations,
)
from server.domain.config import HarnessConfig, parse_config
from server.errors import BadInputError, ConflictError
from server.services.chain import Caller

KEPT_SESSIONS = 10_000  # the SDK's default bound on open MCP sessions
# the input fields a binding fills: a bound call's (in its tool's input), and those of
# beginTurn for an unbound call's own turn
BOUND_FIELDS = {"turn": "turnId", "execution": "executionId", "invocation": "invocationId"}
UNBOUND_FIELDS = {"session": "sessionId", "agent": "agentId"}


@dataclass(frozen=True, slots=True)
class Binding:
    """What the host named for a call: a turn (bound), or where its own turns go."""

    turn: str | None = None
    execution: str | None = None
    invocation: str | None = None
    session: str | None = None
    external: str | None = None  # the session's externalId (the caller's own id for it)
    agent: str | None = None
    connection: str | None = None  # the MCP session's id

    @property
    def bound(self) -> bool:
        return self.turn is not None


class Unnamed(BadInputError):
    """No agent can be told for an unbound call."""


# (caller, MCP session, agent, the session's externalId): a named externalId's place is
# the same for every MCP session of the caller
_Key = tuple[str, str | None, str, str | None]
# a tool's call, given the fields of its turn: turnId (and the calling execution and
# model call, when the host named them)
Call = Callable[[dict[str, Any]], Awaitable[Answer]]


class Turns:
    def __init__(self, operations: Operations) -> None:
        self.operations = operations
        # _Key -> beginTurn's place: {"sessionId"} or {"agentId"}
        self._places: OrderedDict[_Key, dict[str, str]] = OrderedDict()
        self._making: dict[_Key, asyncio.Lock] = {}  # one first call makes a place

    async def config(self, caller: Caller, binding: Binding) -> HarnessConfig | Answer:
        """The configuration the call's turn runs (for the tools it is offered): the bound
        turn's version, else the agent's latest; a refusal as an :class:`Answer`."""
        run = self.operations.run
        if binding.turn is not None:
            answer = await run(caller, TURN_CONFIG, {"id": binding.turn})
            turn = answer.data.get("turn")
            if turn is None:
                return answer
            if turn["status"] != "OPEN":
                error = ConflictError(f"turn {binding.turn} is {turn['status'].lower()}, not open")
                return Answer.of_error(error)
            return parse_config(turn["agentVersion"]["config"], **_sessionless(turn["agent"]))
        if binding.session is not None:
            answer = await run(caller, SESSION_CONFIG, {"id": binding.session})
            agent = (answer.data.get("session") or {}).get("agent")
        else:
            try:
                agent_id = _agent(caller, binding)
            except Unnamed as exc:
                return Answer.of_error(exc)
            answer = await run(caller, AGENT_CONFIG, {"id": agent_id})
            agent = answer.data.get("agent")
        if agent is None:
            return answer
        version = agent["latestVersion"]
        return parse_config(version and version["config"], **_sessionless(agent))

    async def run(self, caller: Caller, binding: Binding, call: Call) -> Answer:
        """``call`` in the turn the binding says (the module docstring)."""
        if binding.turn is not None:
            named = {field: getattr(binding, key) for key, field in BOUND_FIELDS.items()}
            return await call({k: v for k, v in named.items() if v is not None})
        try:
            place = await self._place(caller, binding)
        except Unnamed as exc:
            return Answer.of_error(exc)
        if isinstance(place, Answer):
            return place
        run = self.operations.run
        begun = await run(caller, BEGIN_TURN, {"input": place})
        if begun.refused:
            return begun
        turn = {"turnId": begun.data["beginTurn"]["turn"]["id"]}
        answer = await call(turn)
        if not answer.refused:
            committed = await run(caller, COMMIT_TURN, {"input": turn})
            if not committed.refused:
                return answer
            answer = committed  # not kept: said as the commit's refusal
        await run(caller, ROLLBACK_TURN, {"input": turn})
        return answer

    async def _place(self, caller: Caller, binding: Binding) -> dict[str, str] | Answer:
        """Where an unbound call's turn begins: the named session, the session of the
        named externalId (created on its first call), the MCP session's kept one
        (created on its first call), or, for an agent without sessions, the agent."""
        if binding.session is not None:
            return {UNBOUND_FIELDS["session"]: binding.session}
        agent_id = _agent(caller, binding)
        if binding.external is not None:
            key: _Key = (caller.key, None, agent_id, binding.external)
        else:
            key = (caller.key, binding.connection, agent_id, None)
        place = self._places.get(key)
        if place is None:
            async with self._making.setdefault(key, asyncio.Lock()):
                place = self._places.get(key)
                if place is None:
                    try:
                        found = await self._new_place(caller, agent_id, binding.external)
                    finally:
                        self._making.pop(key, None)
                    if isinstance(found, Answer):
                        return found
                    place = self._places[key] = found
                    while len(self._places) > KEPT_SESSIONS:
                        self._places.popitem(last=False)
        self._places.move_to_end(key)
        return place

    async def _new_place(
        self, caller: Caller, agent_id: str, external: str | None
    ) -> dict[str, str] | Answer:
        if external is not None:
            return await self._named_session(caller, agent_id, external)
        run = self.operations.run
        answer = await run(caller, AGENT_CONFIG, {"id": agent_id})
        agent = answer.data.get("agent")
        if agent is None:
            return answer
        if agent["sessionless"]:
            return {UNBOUND_FIELDS["agent"]: agent_id}
        created = await run(caller, CREATE_SESSION, {"input": {"agentId": agent_id}})
        if created.refused:
            return created
        return {"sessionId": created.data["createSession"]["session"]["id"]}

    async def _named_session(
        self, caller: Caller, agent_id: str, external: str
    ) -> dict[str, str] | Answer:
        """The agent's session of this externalId, created when there is none: looked up
        (``Agent.session(externalId:)``), else created, and looked up again when the
        creation is a CONFLICT (another server created it in between): externalIds are
        unique per agent, so every caller naming one meets the same session."""
        run = self.operations.run
        names = {"id": agent_id, "externalId": external}
        found = await run(caller, SESSION_BY_EXTERNAL_ID, names)
        if found.refused:
            return found
        if found.data["agent"]["session"] is None:
            create = {"input": {"agentId": agent_id, "externalId": external}}
            created = await run(caller, CREATE_SESSION, create)
            if not created.refused:
                return {UNBOUND_FIELDS["session"]: created.data["createSession"]["session"]["id"]}
            if created.extensions.get("code") != "CONFLICT":
                return created
            found = await run(caller, SESSION_BY_EXTERNAL_ID, names)  # created in between
            if found.refused:
                return found
        return {UNBOUND_FIELDS["session"]: found.data["agent"]["session"]["id"]}


def _sessionless(agent: dict[str, Any]) -> dict[str, bool]:
    return {"sessionless": bool(agent["sessionless"])}


def _agent(caller: Caller, binding: Binding) -> str:
    if binding.agent is not None:
        return binding.agent
    runtime = caller.runtime
    if runtime is not None and runtime.agent_id is not None:
        return str(runtime.agent_id)
    raise Unnamed(
        "this runtime token acts for more than one agent: name the agent (the "
        "Agent-Memory-Agent header), a session (Agent-Memory-Session) or an open turn "
        "(Agent-Memory-Turn)",
        field="agent",
    )
