"""Property-based: random principals and policy chains over a fixed multi-tenant world
(namespaces, agents, sessions, live and preview records in every status). Every query's
result equals a reference evaluation, no response carries a sentinel the reference
hides, and adding execution and tool links never widens access (R10, R70, R71)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from server.domain.grants import (
    Chain,
    Link,
    Policy,
    agent_requirements,
    memory_read_requirements,
)
from server.services import policies
from tests.api.scenario import BEGIN, COMMIT, CREATE_AGENT, DELETE, Scenario, memory_config
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

EXAMPLES = 60
RECORDS = """
query($a: ID!) { agent(id: $a) { memoryRecords(first: 100) {
  edges { node { id preview status current { summary } } } pageInfo { hasNextPage } } } }"""
RECORD = "query($id: ID!) { agentMemory(id: $id) { id current { summary } } }"
AGENTS = "query($ns: String!) { agents(namespace: $ns, first: 10) { edges { node { id } } } }"


@dataclass
class AgentFacts:
    id: str
    ns: str
    execution: str
    records: set[str] = field(default_factory=set)
    sentinel: str = ""


async def _populate(api: Api, ns: str, index: int) -> AgentFacts:
    """Two sessions; live and preview records in both scopes; one superseded, one deleted."""
    s = Scenario(api)
    created = await api.ok(CREATE_AGENT, ns=ns, name=f"agent{index}", sessionless=False)
    agent = s.agent_id = created["createAgent"]["agent"]["id"]
    await s.publish(memory_config(read=["session", "agent"], write=["session", "agent"]))
    sentinel = f"SENTINEL{ns}x{index}"
    facts = AgentFacts(agent, ns, "", sentinel=sentinel)
    for n, session in enumerate([await s.session(), await s.session()]):
        begun = (await api.ok(BEGIN, session=session))["beginTurn"]
        turn = begun["turn"]["id"]
        facts.execution = begun["execution"]["id"]
        first = await s.add_id(turn, f"{sentinel} live session {n}")
        agent_scope = await s.add_id(turn, f"{sentinel} live agent {n}", scope="AGENT")
        fixed = await s.add(turn, f"{sentinel} correction {n}", replaces=first)
        gone = await s.add_id(turn, f"{sentinel} to delete {n}")
        await api.ok(DELETE, turn=turn, id=gone)
        await api.ok(COMMIT, turn=turn)
        facts.records |= {first, agent_scope, gone, fixed["memories"][0]["recordId"]}
        preview = await s.turn(session, preview=True)
        facts.records.add(await s.add_id(preview, f"{sentinel} preview {n}"))
        await s.commit(preview)
    return facts


@pytest.fixture(scope="module")
async def tenants(api: Api) -> list[AgentFacts]:
    tag = uuid.uuid4().hex[:6]
    agents = []
    for ns in (f"pa{tag}", f"pb{tag}", f"pc{tag}"):
        for index in range(2):
            agents.append(await _populate(api, ns, index))
    return agents


_TAILS = ["*", "AgentMemory.*", "AgentMemory.indexes.*", "AgentMemory.document", "Agent", "Session"]


def _grants(namespaces: list[str]) -> st.SearchStrategy[frozenset[tuple[str, str]]]:
    """Single grants on any pattern (``*`` among them, rarely), plus whole read bundles
    for a namespace, so that partial, single-tenant and full access all come up."""
    patterns = ["*"] + [f"{ns}.{tail}" for ns in namespaces for tail in _TAILS]
    single = st.tuples(st.sampled_from(["SELECT", "UPDATE"]), st.sampled_from(patterns))
    bundle = st.sampled_from(namespaces).map(
        lambda ns: frozenset(
            {
                ("SELECT", f"{ns}.Agent"),
                ("SELECT", f"{ns}.AgentMemory.indexes.*"),
                ("SELECT", f"{ns}.AgentMemory.document"),
            }
        )
    )
    return st.builds(
        lambda singles, bundles: frozenset(singles).union(*bundles),
        st.lists(single, max_size=3),
        st.lists(bundle, max_size=2),
    )


@dataclass
class Plan:
    kind: str
    bound: int  # which agent a runtime is bound to (by agent or by its namespace)
    by_namespace: bool
    client: frozenset[tuple[str, str]]
    via: int | None  # the agent whose execution the call comes from
    execution: frozenset[tuple[str, str]]
    tool: frozenset[tuple[str, str]] | None


def _plans(namespaces: list[str], agents: int) -> st.SearchStrategy[Plan]:
    grants = _grants(namespaces)
    return st.builds(
        Plan,
        kind=st.sampled_from(["admin", "client", "runtime"]),
        bound=st.integers(0, agents - 1),
        by_namespace=st.booleans(),
        client=grants,
        via=st.one_of(st.none(), st.integers(0, agents - 1)),
        execution=grants,
        tool=st.one_of(st.none(), grants),
    )


def _chain(plan: Plan) -> Chain:
    links = [Link("client", "c", (Policy.parse("c", plan.client),))]
    if plan.via is not None:
        links.append(Link("execution", "e", (Policy.parse("e", plan.execution),)))
        if plan.tool is not None:
            links.append(Link("tool", "t", (Policy.parse("t", plan.tool),)))
    return Chain(tuple(links))


def _reference(plan: Plan, tenants: list[AgentFacts], target: AgentFacts) -> tuple[bool, bool]:
    """(may read the agent, may read its memory), by the pure rules alone."""
    bound = tenants[plan.bound]
    itself = (
        plan.kind == "runtime"
        and plan.via is None
        and (target.ns == bound.ns if plan.by_namespace else target.id == bound.id)
    )
    chain = _chain(plan)
    read_agent = itself or plan.kind == "admin" or chain.allows_all(agent_requirements(target.ns))
    return read_agent, itself or chain.allows_all(memory_read_requirements(target.ns))


def _reference_listing(plan: Plan, tenants: list[AgentFacts], ns: str) -> bool:
    """agents(namespace): admins, a runtime bound to the namespace, or SELECT <ns>.Agent."""
    if plan.kind == "admin":
        return True
    if (
        plan.kind == "runtime"
        and plan.via is None
        and plan.by_namespace
        and tenants[plan.bound].ns == ns
    ):
        return True
    return _chain(plan).allows_all(agent_requirements(ns))


async def _bind(
    api: Api,
    ns: str,
    name: str,
    grants: frozenset[tuple[str, str]],
    subject_type: str,
    subject: str,
) -> None:
    async with api.database.session() as db:
        await policies.create_policy(db, namespace=ns, name=name)
        for privilege, pattern in sorted(grants):
            await policies.add_grant(
                db, namespace=ns, name=name, privilege=privilege, pattern=pattern
            )
        await policies.bind(db, namespace=ns, name=name, subject_type=subject_type, subject=subject)
        await db.commit()


async def _unbind(api: Api, ns: str, names: list[str]) -> None:
    async with api.database.session() as db:
        for name in names:
            await policies.delete_policy(db, namespace=ns, name=name)
        await db.commit()


def _visible(result: Any) -> set[str] | None:
    if result.errors:
        return None
    return {e["node"]["id"] for e in result.data["agent"]["memoryRecords"]["edges"]}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_property_every_query_equals_the_reference_and_leaks_no_sentinel(
    api: Api, tenants: list[AgentFacts], data: st.DataObject
) -> None:
    namespaces = sorted({t.ns for t in tenants})
    plan = data.draw(_plans(namespaces, len(tenants)))
    bound = tenants[plan.bound]
    if plan.kind == "runtime":
        token = await bearer(
            api,
            kind="runtime",
            grants=tuple(sorted(plan.client)),
            **({"namespace": bound.ns} if plan.by_namespace else {"agent_id": bound.id}),
        )
    else:
        token = await bearer(api, kind=plan.kind, grants=tuple(sorted(plan.client)))
    headers: dict[str, str] = {}
    cleanup: list[str] = []
    via = tenants[plan.via] if plan.via is not None else None
    if via is not None:
        suffix = uuid.uuid4().hex[:8]
        headers["execution"] = via.execution
        cleanup.append(f"exe{suffix}")
        await _bind(api, via.ns, cleanup[-1], plan.execution, "agent", via.id)
        if plan.tool is not None:
            headers["tool"] = f"tool{suffix}"
            cleanup.append(f"tool{suffix}")
            await _bind(api, via.ns, cleanup[-1], plan.tool, "tool", headers["tool"])
    readable = sum(_reference(plan, tenants, t)[1] for t in tenants)
    event(f"{plan.kind}, {'chain' if via else 'direct'}: memory of {readable}/6 agents readable")
    try:
        for target in tenants:
            read_agent, read_memory = _reference(plan, tenants, target)
            listing = await run_as(api, token, RECORDS, a=target.id, **headers)
            expected = target.records if read_agent and read_memory else None
            assert _visible(listing) == expected, (plan, target.ns, codes(listing))
            if expected is None:
                # an agent the caller may not read is as one that does not exist; the
                # memory of one it reads is refused, naming the link that denies
                assert codes(listing) == ["FORBIDDEN" if read_agent else "NOT_FOUND"]
            one = sorted(target.records)[0]
            single = await run_as(api, token, RECORD, id=one, **headers)
            assert (single.errors is None) == read_memory, (plan, codes(single))
            for result in (listing, single):
                text = str(result.data) + str([e.message for e in result.errors or []])
                for other in tenants:
                    if not _reference(plan, tenants, other)[1]:
                        assert other.sentinel not in text
            if via is not None:
                alone = await run_as(api, token, RECORDS, a=target.id)
                narrowed, wide = _visible(listing), _visible(alone)
                assert narrowed is None or (wide is not None and narrowed <= wide)
        for ns in namespaces:
            agents = await run_as(api, token, AGENTS, ns=ns, **headers)
            assert (agents.errors is None) == _reference_listing(plan, tenants, ns), (
                plan,
                ns,
                codes(agents),
            )
    finally:
        if via is not None:
            await _unbind(api, via.ns, cleanup)
