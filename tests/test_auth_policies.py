"""Policies, grants and bindings in the database, and the chain a request carries
(R70: client → execution → tool, intersected; R71 requirements)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server.database import Database
from server.domain.grants import (
    AGENT_SELF,
    PRIVILEGES,
    Chain,
    Link,
    Policy,
    memory_delete_requirements,
    memory_read_requirements,
)
from server.errors import BadInputError, ConflictError, NotFoundError
from server.models import Agent, AgentVersion, Execution, Grant, Turn
from server.services import auth, policies
from server.services.chain import load_caller


@pytest.fixture
async def db(database: Database) -> AsyncIterator[AsyncSession]:
    async with database.session() as session:
        yield session
        await session.rollback()


def _ns() -> str:
    return f"ns{uuid.uuid4().hex[:10]}"


async def _execution(db: AsyncSession, namespace: str, name: str = "agent") -> Execution:
    """An agent with one turn and its execution, written directly (no API needed here)."""
    agent = Agent(namespace=namespace, name=name, sessionless=True)
    db.add(agent)
    await db.flush()
    version = AgentVersion(agent_id=agent.id, number=1, config={})
    db.add(version)
    await db.flush()
    turn = Turn(agent_id=agent.id, agent_version_id=version.id, number=1)
    db.add(turn)
    await db.flush()
    execution = Execution(agent_id=agent.id, turn_id=turn.id, kind="turn", name="turn")
    db.add(execution)
    await db.flush()
    return execution


async def _policy(db: AsyncSession, ns: str, name: str, *grants: tuple[str, str]) -> None:
    await policies.create_policy(db, namespace=ns, name=name)
    for privilege, pattern in grants:
        await policies.add_grant(db, namespace=ns, name=name, privilege=privilege, pattern=pattern)


async def test_policy_names_are_unique_per_namespace(db: AsyncSession) -> None:
    ns = _ns()
    await policies.create_policy(db, namespace=ns, name="analysts")
    await policies.create_policy(db, namespace=_ns(), name="analysts")
    with pytest.raises(ConflictError):
        await policies.create_policy(db, namespace=ns, name="analysts")
    with pytest.raises(BadInputError):
        await policies.create_policy(db, namespace=ns, name="two words")


@pytest.mark.parametrize(
    ("privilege", "pattern"),
    [
        ("SELECT", "financial.Agent*"),
        ("select", "financial.*"),
        ("GRANT", "financial.*"),
        ("SELECT", "*.AgentMemory"),
        ("SELECT", ""),
    ],
)
async def test_malformed_grant_is_bad_input_and_stores_nothing(
    db: AsyncSession, privilege: str, pattern: str
) -> None:
    ns = _ns()
    await policies.create_policy(db, namespace=ns, name="p")
    with pytest.raises(BadInputError):
        await policies.add_grant(db, namespace=ns, name="p", privilege=privilege, pattern=pattern)
    policy = await policies.find_policy(db, namespace=ns, name="p")
    assert (await db.scalars(select(Grant).where(Grant.policy_id == policy.id))).all() == []  # type: ignore[arg-type]


async def test_grants_are_listed_and_removed(db: AsyncSession) -> None:
    ns = _ns()
    await _policy(
        db,
        ns,
        "readers",
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    with pytest.raises(ConflictError):
        await policies.add_grant(
            db,
            namespace=ns,
            name="readers",
            privilege="SELECT",
            pattern=f"{ns}.AgentMemory.document",
        )
    [view] = await policies.list_policies(db, namespace=ns)
    assert [(g.privilege, g.pattern) for g in view.grants] == [
        ("SELECT", f"{ns}.AgentMemory.document"),
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
    ]
    await policies.remove_grant(
        db, namespace=ns, name="readers", privilege="SELECT", pattern=f"{ns}.AgentMemory.document"
    )
    with pytest.raises(NotFoundError):
        await policies.remove_grant(
            db,
            namespace=ns,
            name="readers",
            privilege="SELECT",
            pattern=f"{ns}.AgentMemory.document",
        )
    [view] = await policies.list_policies(db, namespace=ns)
    assert [g.pattern for g in view.grants] == [f"{ns}.AgentMemory.indexes.*"]


async def test_agent_binding_stays_in_the_policy_namespace(db: AsyncSession) -> None:
    ns = _ns()
    mine = await _execution(db, ns)
    theirs = await _execution(db, _ns())
    await policies.create_policy(db, namespace=ns, name="p")
    binding = await policies.bind(db, namespace=ns, name="p", subject_type="agent", subject="agent")
    assert binding.subject == str(mine.agent_id)
    with pytest.raises(BadInputError):
        await policies.bind(
            db, namespace=ns, name="p", subject_type="agent", subject=str(theirs.agent_id)
        )
    with pytest.raises(ConflictError):
        await policies.bind(
            db, namespace=ns, name="p", subject_type="agent", subject=str(mine.agent_id)
        )
    with pytest.raises(BadInputError):
        await policies.bind(db, namespace=ns, name="p", subject_type="tool", subject="a tool")
    with pytest.raises(BadInputError):
        await policies.bind(db, namespace=ns, name="p", subject_type="group", subject="x")


async def test_client_link_is_the_union_of_the_principal_policies(db: AsyncSession) -> None:
    """Two policies bound to one principal: each supplies half of R71's read."""
    ns = _ns()
    issued = await auth.create_principal(db, kind="client", name="dashboard")
    await _policy(db, ns, "indexes", ("SELECT", f"{ns}.AgentMemory.indexes.*"))
    await _policy(db, ns, "document", ("SELECT", f"{ns}.AgentMemory.document"))
    caller = await load_caller(db, principal=issued.principal)
    assert not caller.chain.allows_all(memory_read_requirements(ns))
    for name in ("indexes", "document"):
        await policies.bind(
            db,
            namespace=ns,
            name=name,
            subject_type="principal",
            subject=issued.principal.token_prefix,
        )
    caller = await load_caller(db, principal=issued.principal)
    assert [link.kind for link in caller.chain.links] == ["client"]
    assert caller.chain.allows_all(memory_read_requirements(ns))
    assert not caller.chain.allows_all(memory_delete_requirements(ns))
    assert not caller.chain.allows_all(memory_read_requirements(_ns()))


async def test_execution_and_tool_links_narrow_the_client(db: AsyncSession) -> None:
    """R70: the effective grant is the intersection of client, execution and tool."""
    ns = _ns()
    execution = await _execution(db, ns)
    issued = await auth.create_principal(db, kind="client", name="export-job")
    await _policy(db, ns, "everything", *[(p, "*") for p in PRIVILEGES])
    await policies.bind(
        db,
        namespace=ns,
        name="everything",
        subject_type="principal",
        subject=str(issued.principal.id),
    )
    await _policy(db, ns, "agent-reads", ("SELECT", f"{ns}.*"), ("UPDATE", f"{ns}.*"))
    await policies.bind(
        db, namespace=ns, name="agent-reads", subject_type="agent", subject=str(execution.agent_id)
    )
    await _policy(db, ns, "export-reads", ("SELECT", f"{ns}.AgentMemory.*"))
    await policies.bind(
        db, namespace=ns, name="export-reads", subject_type="tool", subject="export"
    )
    # the same tool name bound in another namespace's policy does not count here
    other = _ns()
    await _policy(db, other, "export-writes", ("UPDATE", "*"))
    await policies.bind(
        db, namespace=other, name="export-writes", subject_type="tool", subject="export"
    )

    client = await load_caller(db, principal=issued.principal)
    with_exec = await load_caller(db, principal=issued.principal, execution_id=execution.id)
    with_tool = await load_caller(
        db, principal=issued.principal, execution_id=execution.id, tool="export"
    )
    assert [link.kind for link in with_tool.chain.links] == ["client", "execution", "tool"]
    assert client.chain.allows_all(memory_delete_requirements(ns))
    assert client.chain.allows("SELECT", f"{other}.AgentMemory.document")
    assert with_exec.chain.allows_all(memory_delete_requirements(ns))
    assert not with_exec.chain.allows("SELECT", f"{other}.AgentMemory.document")
    assert with_tool.chain.allows_all(memory_read_requirements(ns))
    decision = with_tool.chain.explain_all(memory_delete_requirements(ns))
    assert not decision.allowed and decision.denied_by == "tool:export"


async def test_a_tool_needs_its_execution_and_the_execution_must_exist(db: AsyncSession) -> None:
    issued = await auth.create_principal(db, kind="client", name="c")
    with pytest.raises(BadInputError):
        await load_caller(db, principal=issued.principal, tool="export")
    with pytest.raises(BadInputError):
        await load_caller(db, principal=issued.principal, execution_id=uuid.uuid4())


async def test_runtime_called_directly_is_the_agent_itself(db: AsyncSession) -> None:
    """R70: the runtime token needs no grant for its agents' memory; once the call
    comes through an execution and a tool, it is a tool and needs the chain's grants."""
    ns = _ns()
    execution = await _execution(db, ns)
    other = await _execution(db, ns, "other")
    issued = await auth.create_principal(db, kind="runtime", name="rt", agent_id=execution.agent_id)
    direct = await load_caller(db, principal=issued.principal)
    assert (
        direct.decide(
            agent_id=execution.agent_id, namespace=ns, requirements=memory_delete_requirements(ns)
        )
        == AGENT_SELF
    )
    denied = direct.decide(
        agent_id=other.agent_id, namespace=ns, requirements=memory_read_requirements(ns)
    )
    assert not denied.allowed and denied.denied_by == "client:rt"
    as_tool = await load_caller(
        db, principal=issued.principal, execution_id=execution.id, tool="export"
    )
    assert not as_tool.decide(
        agent_id=execution.agent_id, namespace=ns, requirements=memory_read_requirements(ns)
    ).allowed
    by_ns = await auth.create_principal(db, kind="runtime", name="rt-ns", namespace=ns)
    caller = await load_caller(db, principal=by_ns.principal)
    assert caller.is_agent(agent_id=other.agent_id, namespace=ns)
    assert not caller.is_agent(agent_id=other.agent_id, namespace=_ns())


# -- property: the chain loaded from the database is the chain of its links' grants -------

_PATTERN_TAILS = [
    "*",
    "AgentMemory.*",
    "AgentMemory.indexes.*",
    "AgentMemory.document",
    "AgentMemory.indexes.by_customer",
    "Agent",
    "Session",
]
_grant = st.tuples(st.sampled_from(PRIVILEGES), st.sampled_from(_PATTERN_TAILS), st.booleans())
_link_grants = st.lists(st.lists(_grant, max_size=3), max_size=2)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    client=_link_grants,
    execution=_link_grants,
    tool=_link_grants,
    privilege=st.sampled_from(PRIVILEGES),
    tail=st.sampled_from(_PATTERN_TAILS),
)
async def test_property_loaded_chain_equals_reference_and_never_widens(
    database: Database,
    client: list[list[tuple[str, str, bool]]],
    execution: list[list[tuple[str, str, bool]]],
    tool: list[list[tuple[str, str, bool]]],
    privilege: str,
    tail: str,
) -> None:
    """Random policies on each link, stored and bound: the chain built from the database
    decides as the reference chain built from the same grants; its access ⊆ each link's."""
    ns, elsewhere = _ns(), _ns()

    def pattern(tail: str, here: bool) -> str:
        return tail if tail == "*" else f"{ns if here else elsewhere}.{tail}"

    async with database.session() as db:
        exe = await _execution(db, ns)
        issued = await auth.create_principal(db, kind="client", name="prop")
        subjects = {
            "principal": str(issued.principal.id),
            "agent": str(exe.agent_id),
            "tool": "prop-tool",
        }
        links = []
        for kind, subject_type, grants in (
            ("client", "principal", client),
            ("execution", "agent", execution),
            ("tool", "tool", tool),
        ):
            link_policies = []
            for i, policy_grants in enumerate(grants):
                name = f"{kind}{i}"
                texts = {(p, pattern(t, here)) for p, t, here in policy_grants}
                await _policy(db, ns, name, *sorted(texts))
                await policies.bind(
                    db,
                    namespace=ns,
                    name=name,
                    subject_type=subject_type,
                    subject=subjects[subject_type],
                )
                link_policies.append(Policy.parse(name, texts))
            links.append(Link(kind, kind, tuple(link_policies)))  # type: ignore[arg-type]
        loaded = await load_caller(
            db, principal=issued.principal, execution_id=exe.id, tool="prop-tool"
        )
        await db.rollback()
    required = pattern(tail, True)
    reference = Chain(tuple(links))
    allowed = loaded.chain.allows(privilege, required)  # type: ignore[arg-type]
    assert allowed == reference.allows(privilege, required)  # type: ignore[arg-type]
    if allowed:
        for link in loaded.chain.links:
            assert Chain((link,)).allows(privilege, required)  # type: ignore[arg-type]
