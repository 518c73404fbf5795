"""Who may do what (R23, R70, R71): strawberry permission classes, and one gate that
checks every object a response carries. Both decide with :mod:`server.domain.grants`.

Resources of a namespace ``<ns>`` (docs/security.md):

- ``<ns>.Agent``: agents and their versions. SELECT reads them (admins always
  may); INSERT creates agents and publishes versions (admins always may).
- ``<ns>.Session``: what the agents did: sessions, turns, executions, model
  calls, transcripts and kept history. SELECT reads; INSERT opens sessions.
- ``<ns>.AgentMemory.indexes.*`` and ``<ns>.AgentMemory.document``: memory
  records and their versions. Reading needs SELECT on both; deleting through
  the API needs SELECT and UPDATE on both (R71). The memory tools' own inputs
  and outputs (their executions, their transcript events, the pinned list,
  retrievals, kept results) are memory too: without the read grant they are
  redacted, the rest of the transcript stays readable. In a rolled-back or failed
  turn they are discarded memory (R12): the agent itself alone reads them. An
  execution's RETRIEVED output uses are memory when they name record versions,
  the session's when they name history parts.

The agent itself (a runtime token called directly, not through a tool) needs
no grant for its agents (R70). Every mutation that does not declare its own
permission classes is a runtime operation: only the agent itself may call it,
which also keeps tools and helpers from writing memory (R23).

Decisions are per agent and resource, so a list holds either every record a
per-record check allows or none: no partial pages, no counts.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from enum import Enum
from inspect import isawaitable
from typing import Any

from graphql import GraphQLResolveInfo
from sqlalchemy import bindparam, select
from sqlmodel import col
from strawberry.extensions import SchemaExtension
from strawberry.permission import BasePermission

from resolvers.context import Context
from server import models
from server.domain.grants import (
    AGENT_SELF,
    Decision,
    agent_requirements,
    memory_delete_requirements,
    memory_read_requirements,
    session_requirements,
)
from server.domain.history import AGENT_MESSAGE
from server.domain.redaction import (
    MEMORY_TOOLS,
    argument_spans,
    calls_of_payload,
    carries_memory_calls,
    is_memory_call,
    mask,
    mask_window,
    redact_payload,
)
from server.errors import ForbiddenError, UnauthenticatedError
from server.services.chain import Caller

_MEMORY_EVENTS = frozenset({"memory.pinned", "retrieval"})
# rows of a turn's own record, which its end may discard (R12); kept history is of
# committed turns only
_TURN_ROWS = (models.Execution, models.TranscriptEvent)
REDACTED = "redacted: needs SELECT on {ns}.AgentMemory.indexes.* and {ns}.AgentMemory.document"
DISCARDED = {
    "rolled_back": "discarded: the turn rolled back",
    "failed": "discarded: the turn failed",
}


class Resource(Enum):
    AGENT = "agent"
    SESSION = "session"
    MEMORY = "memory"
    MEMORY_DELETE = "memory-delete"


_ADMIN_ROWS = (
    models.Principal,
    models.Policy,
    models.Grant,
    models.PolicyBinding,
    models.IdempotencyKey,
    models.MemoryDeletion,
)
_MEMORY_ROWS = (models.MemoryRecord, models.MemoryVersion, models.MemoryReview)


def caller_of(context: Any) -> Caller:
    identity = getattr(context, "identity", None)
    if identity is None:
        raise UnauthenticatedError("send a token: Authorization: Bearer <token>")
    assert isinstance(identity, Caller)
    return identity


def _requirements(resource: Resource, namespace: str) -> Any:
    return {
        Resource.AGENT: agent_requirements,
        Resource.SESSION: session_requirements,
        Resource.MEMORY: memory_read_requirements,
        Resource.MEMORY_DELETE: memory_delete_requirements,
    }[resource](namespace)


async def _lookup(context: Context, stmt: Any) -> Any:
    """One small read of columns on the operation's session (which takes the gate's
    calls and the resolvers' in turn, server/session.py); no row enters its identity
    map, so the services' own locked reads still see fresh rows."""
    return (await context.db.execute(stmt)).first()


async def _namespace(context: Context, agent_id: uuid.UUID) -> str | None:
    key = ("namespace", agent_id)
    if key not in context.decisions:
        row = await _lookup(
            context, select(col(models.Agent.namespace)).where(col(models.Agent.id) == agent_id)
        )
        context.decisions[key] = row[0] if row is not None else None
    namespace: str | None = context.decisions[key]
    return namespace


def _cached(context: Context, resource: Resource, agent_id: uuid.UUID) -> Decision | None:
    found: Decision | None = context.decisions.get((resource, agent_id))
    return found


async def decide(
    context: Context, resource: Resource, agent_id: uuid.UUID, namespace: str | None = None
) -> Decision:
    """Whether the caller may read (or, for MEMORY_DELETE, delete) this agent's resource."""
    cached = _cached(context, resource, agent_id)
    if cached is not None:
        return cached
    caller = caller_of(context)
    runtime = caller.runtime
    if (
        runtime is not None
        and not caller.via_tool
        and (runtime.every_agent or runtime.agent_id == agent_id)
    ):
        decision = AGENT_SELF  # decided without the namespace: no lookup
    elif resource is Resource.AGENT and caller.admin:
        decision = Decision(True, None, "admins read agents")
    elif (ns := namespace or await _namespace(context, agent_id)) is None:
        decision = Decision(False, None, f"no agent {agent_id}")
    else:
        decision = caller.decide(
            agent_id=agent_id, namespace=ns, requirements=_requirements(resource, ns)
        )
    context.decisions[(resource, agent_id)] = decision
    return decision


async def require(
    context: Context, resource: Resource, agent_id: uuid.UUID, namespace: str | None = None
) -> None:
    decision = await decide(context, resource, agent_id, namespace)
    if not decision.allowed:
        raise ForbiddenError(f"not allowed: {decision.reason}")


def resource_of(row: Any) -> tuple[Resource, uuid.UUID] | None:
    """Which resource of which agent a row belongs to; ``None`` for admin-only rows."""
    if isinstance(row, models.Agent):
        return Resource.AGENT, row.id
    if isinstance(row, models.AgentVersion):
        return Resource.AGENT, row.agent_id
    if isinstance(row, _MEMORY_ROWS):
        return Resource.MEMORY, row.agent_id
    if isinstance(row, models.OutputUse):  # memory retrieved is memory; history, the session's
        memory = row.memory_version_id is not None
        return (Resource.MEMORY if memory else Resource.SESSION), row.agent_id
    agent_id = getattr(row, "agent_id", None)
    if isinstance(agent_id, uuid.UUID) and not isinstance(row, _ADMIN_ROWS):
        return Resource.SESSION, agent_id
    return None


# -- agents named by a mutation's input ---------------------------------------------------

_REFERENCES: tuple[tuple[str, str, Any], ...] = (
    ("turn_id", "turnId", models.Turn),
    ("session_id", "sessionId", models.Session),
    ("execution_id", "executionId", models.Execution),
    ("agent_id", "agentId", models.Agent),
)


def _field(value: Any, python: str, graphql: str) -> Any:
    if isinstance(value, dict):
        return value.get(graphql, value.get(python))
    return getattr(value, python, None)


def _agent_of_statement(model: Any) -> Any:
    columns = select(col(models.Agent.id), col(models.Agent.namespace))
    if model is models.Agent:
        return columns.where(col(models.Agent.id) == bindparam("ref"))
    return columns.join(model, model.agent_id == models.Agent.id).where(
        model.id == bindparam("ref")
    )


# built once: each runtime call asks one of these first
_AGENT_OF = {model: _agent_of_statement(model) for _, _, model in _REFERENCES}


async def _agent_of(context: Context, model: Any, ref: uuid.UUID) -> tuple[uuid.UUID, str] | None:
    """The agent (id, namespace) a row belongs to, by a column query: nothing enters the
    session's identity map, so the service's own locked reads see fresh rows."""
    row = (await context.db.execute(_AGENT_OF[model], {"ref": ref})).first()
    return (row[0], row[1]) if row is not None else None


async def agent_of_input(context: Context, value: Any) -> tuple[bool, tuple[uuid.UUID, str] | None]:
    """(names something, its agent's id and namespace): the first of turn, session,
    execution or agent the input names. An id that names nothing gives (True, None)."""
    if value is None:
        return False, None
    for python, graphql, model in _REFERENCES:
        ref = _field(value, python, graphql)
        if ref is None:
            continue
        try:
            ref = ref if isinstance(ref, uuid.UUID) else uuid.UUID(str(ref))
        except ValueError:
            return True, None
        return True, await _agent_of(context, model, ref)
    return False, None


async def require_agent_itself(context: Context, field: str, value: Any) -> None:
    """R23, R70: runtime operations are for the agent itself: its runtime token, called
    directly (not through a tool's chain), bound to the agent or its namespace. An input
    that names no agent, or names one that does not exist, is left to the resolver to
    refuse (BAD_INPUT, NOT_FOUND): nothing of any agent is reached."""
    caller = caller_of(context)
    if caller.runtime is None or caller.via_tool:
        raise ForbiddenError(f"{field} is for the agent itself: use its runtime token")
    _, agent = await agent_of_input(context, value)
    if agent is not None and not caller.is_agent(agent_id=agent[0], namespace=agent[1]):
        raise ForbiddenError(f"this runtime token does not act for agent {agent[0]}")


# -- permission classes -------------------------------------------------------------------


class _Permission(BasePermission):
    message = "not allowed"

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        raise NotImplementedError

    async def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        await self.check(info.context, source, kwargs)
        return True


class CanManageAgents(_Permission):
    """createAgent, publishAgentVersion: an admin, or INSERT on ``<ns>.Agent``."""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        caller = caller_of(context)
        if caller.admin:
            return
        value = kwargs.get("input")
        namespace = _field(value, "namespace", "namespace")
        if namespace is None:
            _, agent = await agent_of_input(context, value)
            if agent is None:
                raise ForbiddenError("not allowed: agents are managed by admins")
            namespace = agent[1]
        decision = caller.chain.explain_all(agent_requirements(str(namespace), "INSERT"))
        if not decision.allowed:
            raise ForbiddenError(f"not allowed: an admin token or {decision.reason}")


class CanOpenSessions(_Permission):
    """createSession: the agent itself, an admin, or INSERT on ``<ns>.Session``."""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        caller = caller_of(context)
        _, agent = await agent_of_input(context, kwargs.get("input"))
        if caller.admin or agent is None:
            return  # an agent that does not exist is the resolver's NOT_FOUND
        decision = caller.decide(
            agent_id=agent[0],
            namespace=agent[1],
            requirements=session_requirements(agent[1], "INSERT"),
        )
        if not decision.allowed:
            raise ForbiddenError(f"not allowed: {decision.reason}")


class CanDeleteMemory(_Permission):
    """deleteAgentMemory: SELECT and UPDATE on the agent's memory (R71)."""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        caller_of(context)
        row = (
            await context.db.execute(
                select(col(models.MemoryRecord.agent_id)).where(
                    col(models.MemoryRecord.id) == kwargs["id"],
                    col(models.MemoryRecord.committed).is_(True),
                )
            )
        ).first()
        if row is not None:
            await require(context, Resource.MEMORY_DELETE, row[0])


class CanListAgents(_Permission):
    """agents(namespace): an admin, or SELECT on ``<ns>.Agent`` (checked before the page
    is read, so a refused list reveals nothing, not even whether it is empty)."""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        caller = caller_of(context)
        namespace = str(kwargs["namespace"])
        if caller.admin:
            return
        runtime = caller.runtime
        if runtime is not None and not caller.via_tool and runtime.namespace == namespace:
            return
        decision = caller.chain.explain_all(agent_requirements(namespace))
        if not decision.allowed:
            raise ForbiddenError(f"not allowed: {decision.reason}")


class CanSearchMemory(_Permission):
    """searchAgentMemory(agentId): R71's read grant on the agent's memory, checked before
    anything is searched. An id that names no agent is left to the resolver (NOT_FOUND)."""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        caller_of(context)
        agent_id = kwargs["agent_id"]
        namespace = await _namespace(context, agent_id)
        if namespace is not None:
            await require(context, Resource.MEMORY, agent_id, namespace)


async def readable_namespaces(context: Context, names: list[str]) -> list[str]:
    """Of ``names``, the namespaces the caller can read something in: all for an admin;
    for a runtime token, the namespaces of the agents it acts for; for anyone, those where
    its grants allow reading agents, sessions or memory."""
    caller = caller_of(context)
    if caller.admin:
        return names
    runtime = caller.runtime if not caller.via_tool else None
    own: str | None = None
    if runtime is not None and runtime.agent_id is not None:
        own = await _namespace(context, runtime.agent_id)
    readable = []
    for ns in names:
        if (runtime is not None and (runtime.every_agent or ns in (runtime.namespace, own))) or any(
            caller.chain.explain_all(requirements(ns)).allowed
            for requirements in (agent_requirements, session_requirements, memory_read_requirements)
        ):
            readable.append(ns)
    return readable


class _OfSourceAgent(_Permission):
    resource: Resource

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        row = source.row
        await require(context, self.resource, row.id, row.namespace)


class CanReadSessions(_OfSourceAgent):
    """Agent.sessions: SELECT on ``<ns>.Session``, before the page is read."""

    resource = Resource.SESSION


class CanReadMemory(_OfSourceAgent):
    """Agent.memoryRecords: R71's read grant, before the page is read."""

    resource = Resource.MEMORY


# -- the gate -----------------------------------------------------------------------------


def _declares_permissions(info: GraphQLResolveInfo[Any]) -> bool:
    definition = info.parent_type.fields[info.field_name].extensions.get("strawberry-definition")
    return bool(getattr(definition, "permission_classes", None))


def _targets(value: Any) -> list[tuple[Resource, uuid.UUID] | None]:
    items = value if isinstance(value, list) else [value]
    found: list[tuple[Resource, uuid.UUID] | None] = []
    for item in items:
        row = getattr(item, "row", None)
        if row is not None and hasattr(row, "__table__"):
            found.append(resource_of(row))
    return found


async def _checked(context: Context, value: Any, targets: list[Any]) -> Any:
    caller = caller_of(context)
    for target in targets:
        if target is None:
            if not caller.admin:
                raise ForbiddenError("not allowed: admins only")
            continue
        await require(context, *target)
    return value


def _carries_memory(row: Any, field: str) -> bool | None:
    """Whether this field's value is memory (the memory tools' own input and output):
    ``True`` for all of it, ``None`` when it may hold some (an agent reply naming memory
    calls, or a history part, which depends on its event), ``False`` for none."""
    if isinstance(row, models.Execution) and field in ("input", "output"):
        return row.kind == "tool" and row.name in MEMORY_TOOLS
    if isinstance(row, models.TranscriptEvent) and field == "payload":
        if row.type in _MEMORY_EVENTS or row.tool_name in MEMORY_TOOLS:
            return True
        if row.type == AGENT_MESSAGE and carries_memory_calls(calls_of_payload(row.payload)):
            return None
        return False
    if isinstance(row, models.HistoryEvent) and field == "text":
        if row.tool_name in MEMORY_TOOLS:
            return True
        return None if row.role == "agent" else False
    if isinstance(row, models.HistoryPart) and field == "text":
        return None
    return False


async def _memory_note(
    context: Context, agent_id: uuid.UUID, turn_id: uuid.UUID | None = None
) -> str | None:
    """``None`` when the caller may read this memory of the agent; else what to show
    instead. What the memory tools of a rolled-back or failed turn (``turn_id``) were
    given and gave is discarded memory (R12): only the agent itself still reads it."""
    decision = await decide(context, Resource.MEMORY, agent_id)
    if not decision.allowed:
        return REDACTED.format(ns=await _namespace(context, agent_id) or "?")
    if decision is AGENT_SELF or turn_id is None:
        return None
    return DISCARDED.get(await context.loaders.turn_status.load(turn_id) or "")


async def _reply_of(context: Context, event_id: uuid.UUID) -> tuple[str | None, str, Any] | None:
    """A kept event's tool name, text and the payload of the agent reply it keeps."""
    found = await _lookup(
        context,
        select(
            col(models.HistoryEvent.tool_name),
            col(models.HistoryEvent.text),
            col(models.TranscriptEvent.payload),
        )
        .join(
            models.TranscriptEvent,
            col(models.TranscriptEvent.id) == col(models.HistoryEvent.transcript_event_id),
        )
        .where(col(models.HistoryEvent.id) == event_id),
    )
    return None if found is None else (found[0], found[1], found[2])


async def _redacted(context: Context, row: Any, field: str, value: Any) -> Any:
    carries = _carries_memory(row, field)
    if carries is False:
        return value
    turn_id = row.turn_id if isinstance(row, _TURN_ROWS) else None
    note = await _memory_note(context, row.agent_id, turn_id)
    if note is None:
        return value
    if carries is None:
        return await _masked(context, row, value, note)
    if field == "payload":
        return {"redacted": note}
    if field in ("input", "output"):
        return {"redacted": note} if note in DISCARDED.values() else None
    return f"[{note}]"


async def _masked(context: Context, row: Any, value: Any, note: str) -> Any:
    """An agent reply's payload or kept text (or a part of it) without the arguments of
    its memory calls (server/domain/redaction.py)."""
    if isinstance(row, models.TranscriptEvent):
        return redact_payload(value, note)
    event_id = row.id if isinstance(row, models.HistoryEvent) else row.event_id
    reply = await _reply_of(context, event_id)
    if reply is None:
        return f"[{note}]"
    tool_name, whole, payload = reply
    if tool_name in MEMORY_TOOLS:
        return f"[{note}]"
    spans = argument_spans(whole, calls_of_payload(payload))
    if isinstance(row, models.HistoryEvent):
        return mask(value, spans)
    return mask_window(whole, value, spans)


async def _redacted_arguments(context: Context, agent_id: uuid.UUID, value: Any) -> Any:
    note = await _memory_note(context, agent_id)
    return value if note is None else {"redacted": note}


_PAYLOAD_FIELDS = frozenset({"input", "output", "payload", "text"})


class AccessGate(SchemaExtension):
    """Checks every field: runtime-only mutations before they run, and every object a
    field returns (queries and nested fields) before it is sent."""

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        context = info.context
        if info.parent_type.name == "Mutation":
            if _declares_permissions(info):
                return _next(root, info, *args, **kwargs)
            return self._runtime_then(_next, root, info, args, kwargs)
        result = _next(root, info, *args, **kwargs)
        if info.field_name == "arguments" and is_memory_call(getattr(root, "name", None)):
            agent_id = getattr(root, "agent_id", None)
            if agent_id is None:  # a call whose agent is unknown is nobody's to read
                return {"redacted": REDACTED.format(ns="?")}
            return self._after(result, lambda value: _redacted_arguments(context, agent_id, value))
        row = getattr(root, "row", None)
        if info.field_name in _PAYLOAD_FIELDS and row is not None:
            if _carries_memory(row, info.field_name) is False:
                return result
            field = info.field_name
            return self._after(result, lambda value: _redacted(context, row, field, value))
        targets = _targets(result) if not isawaitable(result) else None
        if targets == []:
            return result
        if targets is not None and all(
            t is not None and (d := _cached(context, *t)) is not None and d.allowed for t in targets
        ):
            return result
        return self._after(result, lambda value: _checked(context, value, _targets(value)))

    @staticmethod
    async def _after(result: Any, then: Callable[[Any], Awaitable[Any]]) -> Any:
        value = await result if isawaitable(result) else result
        return await then(value)

    @staticmethod
    async def _runtime_then(
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        args: Any,
        kwargs: dict[str, Any],
    ) -> Any:
        await require_agent_itself(info.context, info.field_name, kwargs.get("input"))
        result = _next(root, info, *args, **kwargs)
        return await result if isawaitable(result) else result
