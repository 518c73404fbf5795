"""Who may call what (R23, R70, R71): the strawberry permission classes of the fields
that declare them, deciding with :mod:`resolvers.grants`. Every id an argument names is
decided by :mod:`resolvers.ownership`; every other field goes through the response gate
(:mod:`resolvers.gate`).

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
no grant for its agents (R70). Every mutation that neither declares its own
permission classes nor names an id an administrator or client acts on
(:data:`resolvers.ownership.API_NEEDS`) is a runtime operation: only the agent itself
may call it, which also keeps tools and helpers from writing memory (R23).
"""

from __future__ import annotations

from typing import Any

from strawberry.permission import BasePermission

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, require, require_manage
from server.domain.grants import agent_requirements
from server.errors import ForbiddenError


class _Permission(BasePermission):
    message = "not allowed"

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        raise NotImplementedError

    async def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        await self.check(info.context, source, kwargs)
        return True


class CanManageAgents(_Permission):
    """createAgent: an admin, or INSERT on ``<ns>.Agent`` of the input's namespace. (A
    mutation whose id names the agent decides by that id: :mod:`resolvers.ownership`.)"""

    async def check(self, context: Context, source: Any, kwargs: dict[str, Any]) -> None:
        require_manage(context, str(kwargs["input"].namespace))


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
