"""Grant decisions (R70, R71): which resource of which agent a row is, and whether
the caller may read (or delete) it, decided once per operation with
:mod:`server.domain.grants`. Decisions are per agent and resource, so a list holds
either every record a per-record check allows or none: no partial pages, and a
``totalCount`` only of the lists of one agent's rows (one decision covers them all)."""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Any

from sqlalchemy import select
from sqlmodel import col

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
from server.errors import ForbiddenError, UnauthenticatedError
from server.services.chain import Caller


class Resource(Enum):
    AGENT = "agent"
    SESSION = "session"
    MEMORY = "memory"
    MEMORY_DELETE = "memory-delete"


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


async def read_columns(context: Context, stmt: Any) -> Any:
    """One small read of columns on the operation's session (which takes the gate's
    calls and the resolvers' in turn, server/session.py); no row enters its identity
    map, so the services' own locked reads still see fresh rows."""
    return (await context.db.execute(stmt)).first()


async def namespace_of(context: Context, agent_id: uuid.UUID) -> str | None:
    key = ("namespace", agent_id)
    if key not in context.decisions:
        row = await read_columns(
            context, select(col(models.Agent.namespace)).where(col(models.Agent.id) == agent_id)
        )
        context.decisions[key] = row[0] if row is not None else None
    namespace: str | None = context.decisions[key]
    return namespace


def cached_decision(context: Context, resource: Resource, agent_id: uuid.UUID) -> Decision | None:
    found: Decision | None = context.decisions.get((resource, agent_id))
    return found


async def decide(
    context: Context, resource: Resource, agent_id: uuid.UUID, namespace: str | None = None
) -> Decision:
    """Whether the caller may read (or, for MEMORY_DELETE, delete) this agent's resource."""
    cached = cached_decision(context, resource, agent_id)
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
    elif (ns := namespace or await namespace_of(context, agent_id)) is None:
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


def require_manage(context: Context, namespace: str) -> None:
    """Creating agents and publishing versions: an admin, or INSERT on ``<ns>.Agent``."""
    caller = caller_of(context)
    if caller.admin:
        return
    decision = caller.chain.explain_all(agent_requirements(namespace, "INSERT"))
    if not decision.allowed:
        raise ForbiddenError(f"not allowed: an admin token or {decision.reason}")


def decide_in(context: Context, resource: Resource, namespace: str) -> Decision:
    """Whether the caller may read ``resource`` of an agent of ``namespace`` it is not
    the runtime of (one not created yet: createAgent's answer)."""
    caller = caller_of(context)
    if resource is Resource.AGENT and caller.admin:
        return Decision(True, None, "admins read agents")
    return caller.chain.explain_all(_requirements(resource, namespace))


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
        own = await namespace_of(context, runtime.agent_id)
    readable = []
    for ns in names:
        if (runtime is not None and (runtime.every_agent or ns in (runtime.namespace, own))) or any(
            caller.chain.explain_all(requirements(ns)).allowed
            for requirements in (agent_requirements, session_requirements, memory_read_requirements)
        ):
            readable.append(ns)
    return readable
