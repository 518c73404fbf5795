"""Runtime identity (R23, R70): the agent a mutation's input names, and the check that
a runtime operation is called by that agent itself."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import col

from resolvers.context import Context
from resolvers.grants import caller_of
from server import models
from server.errors import ForbiddenError
from server.storage.owners import kept, remember

_REFERENCES: tuple[tuple[str, str, Any], ...] = (
    ("turn_id", "turnId", models.Turn),
    ("session_id", "sessionId", models.Session),
    ("execution_id", "executionId", models.Execution),
    ("agent_id", "agentId", models.Agent),
)


def field_of(value: Any, python: str, graphql: str) -> Any:
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
    session's identity map, so the service's own locked reads see fresh rows. A row whose
    agent is known (server/storage/owners.py) reads the agent alone: on Citus the agents
    are on every node, and the row by its id alone would be asked of every shard."""
    known = None if model is models.Agent else kept(context.db, ref)
    if known is not None:
        model, ref = models.Agent, known
    row = (await context.db.execute(_AGENT_OF[model], {"ref": ref})).first()
    if row is None:
        return None
    if model is not models.Agent:  # the service's statements name the agent it found
        remember(context.db, ref, row[0])
    return (row[0], row[1])


async def agent_of_input(context: Context, value: Any) -> tuple[bool, tuple[uuid.UUID, str] | None]:
    """(names something, its agent's id and namespace): the first of turn, session,
    execution or agent the input names. An id that names nothing gives (True, None)."""
    if value is None:
        return False, None
    for python, graphql, model in _REFERENCES:
        ref = field_of(value, python, graphql)
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
