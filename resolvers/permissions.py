"""Who may call what (R23, R70, R71): the strawberry permission classes of the fields
that declare them, deciding with :mod:`resolvers.grants`. Every other field goes
through the response gate (:mod:`resolvers.gate`).

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
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlmodel import col
from strawberry.permission import BasePermission

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, namespace_of, require
from resolvers.runtime import agent_of_input, field_of
from server import models
from server.domain.grants import agent_requirements, session_requirements
from server.errors import ForbiddenError


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
        namespace = field_of(value, "namespace", "namespace")
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
        record_id = field_of(kwargs.get("input"), "id", "id")
        row = (
            await context.db.execute(
                select(col(models.MemoryRecord.agent_id)).where(
                    col(models.MemoryRecord.id) == record_id,
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
        namespace = await namespace_of(context, agent_id)
        if namespace is not None:
            await require(context, Resource.MEMORY, agent_id, namespace)


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
