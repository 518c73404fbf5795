"""Who is calling, and the policy chain the call carries (R23, R70, R71).

A request is made by a principal (its bearer token). When the call comes from
a tool running inside an agent's execution, it also names that execution and
the tool (``X-Agent-Memory-Execution``, ``X-Agent-Memory-Tool``). The chain is
then: the client link (policies bound to the principal), the execution link
(policies bound to the execution's agent) and the tool link (policies of the
agent's namespace bound to the tool). :mod:`server.domain.grants` evaluates it.

A runtime principal calling without an execution or tool is "the agent
itself" for the agents it is bound to: its use of their memory needs no grant
(R70). Adding links only narrows: a chain never grants more than its client.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.grants import (
    AGENT_SELF,
    Chain,
    Decision,
    GrantSyntaxError,
    Link,
    Pattern,
    Policy,
    Privilege,
)
from server.domain.grants import Grant as GrantRule
from server.errors import BadInputError
from server.models import Agent, Execution, Grant, PolicyBinding, Principal
from server.models import Policy as PolicyRow
from server.storage.owners import by_agent

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RuntimeBinding:
    """The agents a runtime acts for: one agent, every agent of a namespace, or (for an
    embedding application's own runtime, never a stored token) every agent."""

    agent_id: uuid.UUID | None = None
    namespace: str | None = None
    every_agent: bool = False

    def covers(self, *, agent_id: uuid.UUID, namespace: str) -> bool:
        if self.every_agent:
            return True
        if self.agent_id is not None:
            return self.agent_id == agent_id
        return self.namespace is not None and self.namespace == namespace


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one request."""

    name: str
    chain: Chain
    kind: str = "client"
    principal_id: uuid.UUID | None = None
    admin: bool = False
    runtime: RuntimeBinding | None = None
    execution_id: uuid.UUID | None = None
    tool: str | None = None

    @property
    def key(self) -> str:
        """A stable name for idempotency keys and logs."""
        return f"principal:{self.principal_id}" if self.principal_id else f"caller:{self.name}"

    @property
    def via_tool(self) -> bool:
        """The call comes from inside an execution (a tool), not from the runtime itself."""
        return self.execution_id is not None or self.tool is not None

    def is_agent(self, *, agent_id: uuid.UUID, namespace: str) -> bool:
        """R70: a runtime token, called directly, is the agent itself for its agents."""
        return (
            self.runtime is not None
            and not self.via_tool
            and self.runtime.covers(agent_id=agent_id, namespace=namespace)
        )

    def decide(
        self,
        *,
        agent_id: uuid.UUID,
        namespace: str,
        requirements: Iterable[tuple[Privilege, Pattern | str]],
    ) -> Decision:
        """The agent itself needs no grant; anyone else needs every link to grant."""
        if self.is_agent(agent_id=agent_id, namespace=namespace):
            return AGENT_SELF
        return self.chain.explain_all(requirements)


async def _policies(
    db: AsyncSession, *, subject_type: str, subject: str, namespace: str | None = None
) -> tuple[Policy, ...]:
    """The policies bound to one subject, each with its grants (one statement)."""
    stmt = (
        select(
            col(PolicyRow.id),
            col(PolicyRow.namespace),
            col(PolicyRow.name),
            col(Grant.privilege),
            col(Grant.pattern),
        )
        .select_from(PolicyBinding)
        .join(PolicyRow, col(PolicyRow.id) == col(PolicyBinding.policy_id))
        .outerjoin(Grant, col(Grant.policy_id) == col(PolicyRow.id))
        .where(
            col(PolicyBinding.subject_type) == subject_type,
            col(PolicyBinding.subject) == subject,
        )
    )
    if namespace is not None:
        stmt = stmt.where(col(PolicyRow.namespace) == namespace)
    names: dict[uuid.UUID, str] = {}
    grants: dict[uuid.UUID, set[GrantRule]] = defaultdict(set)
    for policy_id, ns, name, privilege, pattern in (await db.execute(stmt)).all():
        names[policy_id] = f"{ns}/{name}"
        if privilege is None:
            continue
        try:
            grants[policy_id].add(GrantRule.parse(privilege, pattern))
        except GrantSyntaxError:
            _log.warning("policy %s has a malformed grant %s %s; ignored", name, privilege, pattern)
    return tuple(
        Policy(names[pid], frozenset(grants[pid])) for pid in sorted(names, key=names.__getitem__)
    )


def _runtime_binding(principal: Principal) -> RuntimeBinding | None:
    if principal.kind != "runtime":
        return None
    if principal.agent_id is not None:
        return RuntimeBinding(agent_id=principal.agent_id)
    return RuntimeBinding(namespace=principal.namespace)


async def load_caller(
    db: AsyncSession,
    *,
    principal: Principal,
    execution_id: uuid.UUID | None = None,
    tool: str | None = None,
) -> Caller:
    """Build the caller and its chain: client, then [execution, then tool]."""
    if tool is not None and execution_id is None:
        raise BadInputError(
            "a tool runs inside an execution: name the execution with the tool", field="tool"
        )
    links = [
        Link(
            "client",
            principal.name,
            await _policies(db, subject_type="principal", subject=str(principal.id)),
        )
    ]
    if execution_id is not None:
        execution = await db.get(
            Execution, execution_id, options=await by_agent(db, Execution, execution_id)
        )
        agent = await db.get(Agent, execution.agent_id) if execution is not None else None
        if execution is None or agent is None:
            raise BadInputError(f"no execution {execution_id}", field="execution")
        links.append(
            Link(
                "execution",
                f"{agent.namespace}.{agent.name}",
                await _policies(db, subject_type="agent", subject=str(agent.id)),
            )
        )
        if tool is not None:
            links.append(
                Link(
                    "tool",
                    tool,
                    await _policies(
                        db, subject_type="tool", subject=tool, namespace=agent.namespace
                    ),
                )
            )
    return Caller(
        name=principal.name,
        chain=Chain(tuple(links)),
        kind=principal.kind,
        principal_id=principal.id,
        admin=principal.kind == "admin",
        runtime=_runtime_binding(principal),
        execution_id=execution_id,
        tool=tool,
    )
