"""Policies, their grants, and the bindings that attach them to a link of a chain (R70).

A policy belongs to a namespace and has a name unique in it. A grant is one
privilege on one resource pattern (syntax: :mod:`server.domain.grants`). A
binding attaches a policy to a principal (the client link), to an agent (the
execution link: every execution of the agent) or to a tool (the tool link,
for tools running in that namespace's agents). An agent binding must stay in
the policy's namespace.

Every change counts up ``grants_version`` in its own transaction (:func:`_changed`):
the callers a server keeps are good only while that number stands
(:mod:`server.services.callers`). A policy, grant or binding changed by hand in the
database must count it up too.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.grants import Grant as GrantRule
from server.domain.text import check_name
from server.errors import BadInputError, NotFoundError
from server.models import Agent, Grant, GrantsVersion, Policy, PolicyBinding
from server.services.auth import find_principal
from server.storage.rows import insert_unique, rows_changed

SUBJECT_TYPES = ("principal", "agent", "tool")
_TOOL = re.compile(r"[A-Za-z0-9_.:-]{1,100}")


@dataclass(frozen=True, slots=True)
class PolicyView:
    """A policy with its grants and bindings, for listings."""

    policy: Policy
    grants: list[Grant] = field(default_factory=list)
    bindings: list[PolicyBinding] = field(default_factory=list)


async def _insert(db: AsyncSession, row: object, conflict: str) -> None:
    """Insert one row in a savepoint; a unique violation is a CONFLICT and changes nothing."""
    async with db.begin_nested():
        await insert_unique(db, row, conflict)
    await _changed(db)


async def _changed(db: AsyncSession) -> None:
    """Count a change of policies, grants or bindings, in the transaction that makes it:
    every kept caller is built again (:mod:`server.services.callers`)."""
    await db.execute(
        update(GrantsVersion)
        .where(col(GrantsVersion.id) == 1)
        .values(version=GrantsVersion.version + 1)
    )


async def create_policy(db: AsyncSession, *, namespace: str, name: str) -> Policy:
    policy = Policy(namespace=check_name(namespace, "namespace"), name=check_name(name, "name"))
    await _insert(db, policy, f"policy {namespace}/{name} already exists")
    return policy


async def find_policy(db: AsyncSession, *, namespace: str, name: str) -> Policy:
    policy: Policy | None = await db.scalar(
        select(Policy).where(col(Policy.namespace) == namespace, col(Policy.name) == name)
    )
    if policy is None:
        raise NotFoundError(f"no policy {namespace}/{name}", field="policy")
    return policy


async def delete_policy(db: AsyncSession, *, namespace: str, name: str) -> None:
    """Delete a policy with its grants and bindings."""
    policy = await find_policy(db, namespace=namespace, name=name)
    await db.delete(policy)
    await db.flush()
    await _changed(db)


async def add_grant(
    db: AsyncSession, *, namespace: str, name: str, privilege: str, pattern: str
) -> Grant:
    """Grant a privilege on a pattern; the syntax is checked by the pure grant module."""
    rule = GrantRule.parse(privilege, pattern)
    policy = await find_policy(db, namespace=namespace, name=name)
    grant = Grant(policy_id=policy.id, privilege=rule.privilege, pattern=str(rule.pattern))
    await _insert(db, grant, f"policy {namespace}/{name} already grants {rule}")
    return grant


async def remove_grant(
    db: AsyncSession, *, namespace: str, name: str, privilege: str, pattern: str
) -> None:
    rule = GrantRule.parse(privilege, pattern)
    policy = await find_policy(db, namespace=namespace, name=name)
    removed = await rows_changed(
        db,
        delete(Grant).where(
            col(Grant.policy_id) == policy.id,
            col(Grant.privilege) == rule.privilege,
            col(Grant.pattern) == str(rule.pattern),
        ),
    )
    if removed == 0:
        raise NotFoundError(f"policy {namespace}/{name} does not grant {rule}", field="grant")
    await _changed(db)


async def find_agent(db: AsyncSession, *, ref: str, namespace: str | None = None) -> Agent:
    """An agent by id, or by name in ``namespace`` (without one: the only agent of
    that name)."""
    try:
        agent = await db.get(Agent, uuid.UUID(ref))
    except ValueError:
        query = select(Agent).where(col(Agent.name) == ref)
        if namespace:
            query = query.where(col(Agent.namespace) == namespace)
        found = (await db.scalars(query.limit(2))).all()
        if len(found) > 1:
            raise BadInputError(
                f"agents named {ref} exist in several namespaces: name the namespace",
                field="agent",
            ) from None
        agent = found[0] if found else None
    if agent is None:
        where = f" in namespace {namespace}" if namespace else ""
        raise NotFoundError(f"no agent {ref}{where}", field="agent")
    return agent


async def _subject(db: AsyncSession, policy: Policy, subject_type: str, subject: str) -> str:
    """The stored subject: a principal's id, an agent's id, or a tool's name."""
    if subject_type == "principal":
        return str((await find_principal(db, ref=subject)).id)
    if subject_type == "agent":
        agent = await find_agent(db, ref=subject, namespace=policy.namespace)
        if agent.namespace != policy.namespace:
            raise BadInputError(
                f"agent {agent.namespace}.{agent.name} is not in the policy's namespace "
                f"{policy.namespace}",
                field="agent",
            )
        return str(agent.id)
    if subject_type == "tool":
        if not _TOOL.fullmatch(subject):
            raise BadInputError(f"invalid tool name {subject!r}", field="tool")
        return subject
    raise BadInputError(
        f"subject type must be one of {', '.join(SUBJECT_TYPES)}", field="subjectType"
    )


async def bind(
    db: AsyncSession, *, namespace: str, name: str, subject_type: str, subject: str
) -> PolicyBinding:
    policy = await find_policy(db, namespace=namespace, name=name)
    stored = await _subject(db, policy, subject_type, subject)
    binding = PolicyBinding(policy_id=policy.id, subject_type=subject_type, subject=stored)
    await _insert(
        db, binding, f"policy {namespace}/{name} is already bound to {subject_type} {subject}"
    )
    return binding


async def unbind(
    db: AsyncSession, *, namespace: str, name: str, subject_type: str, subject: str
) -> None:
    policy = await find_policy(db, namespace=namespace, name=name)
    stored = await _subject(db, policy, subject_type, subject)
    removed = await rows_changed(
        db,
        delete(PolicyBinding).where(
            col(PolicyBinding.policy_id) == policy.id,
            col(PolicyBinding.subject_type) == subject_type,
            col(PolicyBinding.subject) == stored,
        ),
    )
    if removed == 0:
        raise NotFoundError(
            f"policy {namespace}/{name} is not bound to {subject_type} {subject}", field="subject"
        )
    await _changed(db)


async def list_policies(db: AsyncSession, *, namespace: str | None = None) -> list[PolicyView]:
    stmt = select(Policy).order_by(col(Policy.namespace), col(Policy.name))
    if namespace is not None:
        stmt = stmt.where(col(Policy.namespace) == namespace)
    policies = list((await db.scalars(stmt)).all())
    ids = [p.id for p in policies]
    views = {p.id: PolicyView(policy=p) for p in policies}
    if ids:
        for grant in await db.scalars(
            select(Grant)
            .where(col(Grant.policy_id).in_(ids))
            .order_by(col(Grant.privilege), col(Grant.pattern))
        ):
            views[grant.policy_id].grants.append(grant)
        for binding in await db.scalars(
            select(PolicyBinding)
            .where(col(PolicyBinding.policy_id).in_(ids))
            .order_by(col(PolicyBinding.subject_type), col(PolicyBinding.subject))
        ):
            views[binding.policy_id].bindings.append(binding)
    return list(views.values())


# Dev mode's first admin reads what the walkthrough and the dashboard show: every
# namespace's sessions and memory (an admin reads those only as its policies grant).
DEV_READER = ("dev", "read-everything")


async def grant_dev_reads(db: AsyncSession, *, principal_id: uuid.UUID) -> Policy:
    """Bind the dev policy that grants SELECT on everything (``*``) to a principal, making
    the policy first if there is none: dev mode only (docs/security.md)."""
    namespace, name = DEV_READER
    policy: Policy | None = await db.scalar(
        select(Policy).where(col(Policy.namespace) == namespace, col(Policy.name) == name)
    )
    if policy is None:
        policy = await create_policy(db, namespace=namespace, name=name)
        await add_grant(db, namespace=namespace, name=name, privilege="SELECT", pattern="*")
    await bind(
        db, namespace=namespace, name=name, subject_type="principal", subject=str(principal_id)
    )
    return policy
