"""Grants through the schema, with real tokens and policies from the database
(R23, R70, R71; docs/security.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from tests.api.scenario import ADD, BEGIN, COMMIT, Scenario, memory_config
from tests.auth_helpers import bearer, codes, run_as, statements
from tests.conftest import Api

RECORDS = """
query($a: ID!) { agent(id: $a) { id memoryRecords(first: 50) {
  edges { node { id status current { summary } } } pageInfo { hasNextPage } } } }"""
RECORD = """
query($id: ID!) { agentMemory(id: $id) { id status current { summary }
  versions { number status summary } } }"""
DELETE_API = "mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) { record { id status } } }"
SEARCH = """
mutation($t: ID!) { searchMemory(input: {turnId: $t, limit: 50}) {
  results { record { id } version { summary } } } }"""
TURN_VIEW = """
query($t: ID!) { turn(id: $t) { number executions { name kind input output }
  transcript { type toolName payload } } }"""
SESSIONS = "query($a: ID!) { agent(id: $a) { sessions(first: 5) { edges { node { id } } } } }"


@dataclass
class World:
    ns: str
    agent: str
    session: str
    turn: str
    records: list[str]
    other_ns: str
    other_agent: str
    other_record: str


async def _agent_with_memory(api: Api, ns: str, text: str) -> tuple[str, str, str, list[str]]:
    s = Scenario(api)
    agent = await s.agent(
        memory_config(read=["session", "agent"], write=["session", "agent"]), namespace=ns
    )
    session = await s.session()
    turn = await s.turn(session)
    records = [await s.add_id(turn, f"{text} fact {i}") for i in range(3)]
    await s.commit(turn)
    return agent, session, turn, records


@pytest.fixture(scope="module")
async def world(api: Api) -> World:
    ns, other_ns = f"gra{uuid.uuid4().hex[:8]}", f"grb{uuid.uuid4().hex[:8]}"
    agent, session, turn, records = await _agent_with_memory(api, ns, "SENTINEL-A")
    other_agent, _, _, other = await _agent_with_memory(api, other_ns, "SENTINEL-B")
    return World(ns, agent, session, turn, records, other_ns, other_agent, other[0])


def _read(ns: str) -> tuple[tuple[str, str], ...]:
    return (("SELECT", f"{ns}.AgentMemory.indexes.*"), ("SELECT", f"{ns}.AgentMemory.document"))


async def test_r71_listing_needs_select_on_indexes_and_on_document(api: Api, world: World) -> None:
    """Without both grants the listing is refused before it is read: no page, no
    hasNextPage, no count; with both it is every record a per-record check allows."""
    agent_only = (("SELECT", f"{world.ns}.Agent"),)
    for grants in ((), (_read(world.ns)[1],), (_read(world.ns)[0],)):
        token = await bearer(api, kind="client", grants=agent_only + grants)
        with statements(api.database) as sent:
            result = await run_as(api, token, RECORDS, a=world.agent)
        assert codes(result) == ["FORBIDDEN"]
        assert not [s for s in sent if "memory_records" in s]
        assert result.data == {"agent": None} or result.data is None
        assert "SENTINEL" not in str(result.data)
    token = await bearer(api, kind="client", grants=agent_only + _read(world.ns))
    result = await run_as(api, token, RECORDS, a=world.agent)
    assert result.errors is None
    listed = {e["node"]["id"] for e in result.data["agent"]["memoryRecords"]["edges"]}
    full = await api.ok(RECORDS, a=world.agent)
    assert listed == {e["node"]["id"] for e in full["agent"]["memoryRecords"]["edges"]}
    assert listed == set(world.records)


async def test_r71_a_namespace_grant_does_not_reach_another_namespace(
    api: Api, world: World
) -> None:
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.*"),))
    mine = await run_as(api, token, RECORD, id=world.records[0])
    assert mine.errors is None and mine.data["agentMemory"]["id"] == world.records[0]
    # another namespace's record and agent: answered as ids that name nothing
    theirs = await run_as(api, token, RECORD, id=world.other_record)
    assert codes(theirs) == ["NOT_FOUND"] and "SENTINEL-B" not in str(theirs.data)
    listing = await run_as(api, token, RECORDS, a=world.other_agent)
    assert codes(listing) == ["NOT_FOUND"] and "SENTINEL-B" not in str(listing.data)


async def test_r71_deleting_needs_select_and_update_and_keeps_the_history(
    api: Api, world: World
) -> None:
    """SELECT alone cannot delete (and nothing changes); SELECT and UPDATE delete: the
    record leaves search, and it and its versions stay readable (R25)."""
    target = world.records[2]
    reader = await bearer(api, kind="client", grants=_read(world.ns))
    refused = await run_as(api, reader, DELETE_API, id=target)
    assert codes(refused) == ["FORBIDDEN"]
    assert (await api.ok(RECORD, id=target))["agentMemory"]["status"] == "ACTIVE"
    update_only = await bearer(
        api,
        kind="client",
        grants=(
            ("UPDATE", f"{world.ns}.AgentMemory.indexes.*"),
            ("UPDATE", f"{world.ns}.AgentMemory.document"),
        ),
    )
    # without SELECT the record is not the caller's to know of: as an unknown id
    assert codes(await run_as(api, update_only, DELETE_API, id=target)) == ["NOT_FOUND"]
    deleter = await bearer(
        api, kind="client", grants=(*_read(world.ns), ("UPDATE", f"{world.ns}.AgentMemory.*"))
    )
    deleted = await run_as(api, deleter, DELETE_API, id=target)
    assert deleted.errors is None
    assert deleted.data["deleteAgentMemory"]["record"] == {"id": target, "status": "DELETED"}
    again = await run_as(api, deleter, DELETE_API, id=target)
    assert codes(again) == ["CONFLICT"]
    kept = (await run_as(api, reader, RECORD, id=target)).data["agentMemory"]
    assert kept["status"] == "DELETED"
    assert [(v["number"], v["status"], v["summary"]) for v in kept["versions"]] == [
        (1, "ACTIVE", "SENTINEL-A fact 2"),
        (2, "DELETED", "SENTINEL-A fact 2"),
    ]
    turn = (await api.ok(BEGIN, session=world.session))["beginTurn"]["turn"]["id"]
    found = (await api.ok(SEARCH, t=turn))["searchMemory"]["results"]
    ids = {r["record"]["id"] for r in found}
    assert target not in ids and set(world.records[:2]) <= ids
    await api.ok(COMMIT, turn=turn)


async def test_r70_the_runtime_token_is_the_agent_itself(api: Api, world: World) -> None:
    """Its own agent's memory needs no grant; another agent's is refused, for reads and
    for runtime operations alike, as objects that do not exist."""
    token = await bearer(api, kind="runtime", agent_id=world.agent)
    mine = await run_as(api, token, RECORDS, a=world.agent)
    assert mine.errors is None
    assert len(mine.data["agent"]["memoryRecords"]["edges"]) == len(world.records)
    theirs = await run_as(api, token, RECORD, id=world.other_record)
    assert codes(theirs) == ["NOT_FOUND"]  # as an unknown id: another agent's is no one's
    begun = await run_as(api, token, BEGIN, session=world.session)
    assert begun.errors is None
    turn = begun.data["beginTurn"]["turn"]["id"]
    added = await run_as(api, token, ADD, turn=turn, summary="runtime wrote this")
    assert added.errors is None
    assert codes(await run_as(api, token, COMMIT, turn=turn)) == []
    other = await bearer(api, kind="runtime", agent_id=world.other_agent)
    refused = await run_as(api, other, BEGIN, session=world.session)
    assert codes(refused) == ["NOT_FOUND"]  # another agent's session: as an unknown one
    by_namespace = await bearer(api, kind="runtime", namespace=world.ns)
    assert (await run_as(api, by_namespace, RECORDS, a=world.agent)).errors is None
    assert codes(await run_as(api, by_namespace, RECORDS, a=world.other_agent)) == ["NOT_FOUND"]


@pytest.mark.parametrize("kind", ["admin", "client"])
async def test_r23_runtime_operations_are_refused_to_everyone_but_the_agent(
    api: Api, world: World, kind: str
) -> None:
    """Even with every privilege on every resource, an admin or a client does not
    begin turns or write memory: only the agent itself does."""
    everything = tuple((p, "*") for p in ("SELECT", "INSERT", "UPDATE", "DELETE"))
    token = await bearer(api, kind=kind, grants=everything)
    assert codes(await run_as(api, token, BEGIN, session=world.session)) == ["FORBIDDEN"]
    assert codes(await run_as(api, token, ADD, turn=world.turn, summary="x")) == ["FORBIDDEN"]


async def test_r23_r70_a_tool_calling_with_the_runtime_token_is_not_the_agent(
    api: Api, world: World
) -> None:
    """With the chain headers the call comes from a tool inside an execution: no memory
    write, and reads only as client, execution and tool policies all allow."""
    runtime = await bearer(api, kind="runtime", agent_id=world.agent)
    begun = await run_as(api, runtime, BEGIN, session=world.session)
    turn = begun.data["beginTurn"]["turn"]["id"]
    execution = begun.data["beginTurn"]["execution"]["id"]
    as_tool = await run_as(
        api,
        runtime,
        ADD,
        execution=execution,
        tool="export",
        turn=turn,
        summary="a tool must not write",
    )
    assert codes(as_tool) == ["FORBIDDEN"]
    read = await run_as(
        api, runtime, RECORD, execution=execution, tool="export", id=world.records[0]
    )
    assert codes(read) == ["NOT_FOUND"] and "SENTINEL" not in str(read.data)
    await run_as(api, runtime, COMMIT, turn=turn)


async def test_r70_the_chain_is_the_intersection_of_client_execution_and_tool(
    api: Api, world: World
) -> None:
    from server.services import policies

    client = await bearer(api, kind="client", grants=(("SELECT", "*"), ("UPDATE", "*")))
    begun = await api.ok(BEGIN, session=world.session)
    execution = begun["beginTurn"]["execution"]["id"]
    await api.ok(COMMIT, turn=begun["beginTurn"]["turn"]["id"])
    tool = f"export{uuid.uuid4().hex[:6]}"
    async with api.database.session() as db:
        await policies.create_policy(db, namespace=world.ns, name=f"agent-{tool}")
        for pattern in (f"{world.ns}.AgentMemory.*", f"{world.ns}.Session"):
            await policies.add_grant(
                db, namespace=world.ns, name=f"agent-{tool}", privilege="SELECT", pattern=pattern
            )
        await policies.bind(
            db, namespace=world.ns, name=f"agent-{tool}", subject_type="agent", subject=world.agent
        )
        await policies.create_policy(db, namespace=world.ns, name=f"tool-{tool}")
        await policies.add_grant(
            db,
            namespace=world.ns,
            name=f"tool-{tool}",
            privilege="SELECT",
            pattern=f"{world.ns}.AgentMemory.document",
        )
        await policies.bind(
            db, namespace=world.ns, name=f"tool-{tool}", subject_type="tool", subject=tool
        )
        await db.commit()
    alone = await run_as(api, client, RECORD, id=world.records[0])
    assert alone.errors is None
    in_execution = await run_as(api, client, RECORD, execution=execution, id=world.records[0])
    assert in_execution.errors is None
    with_tool = await run_as(
        api, client, RECORD, execution=execution, tool=tool, id=world.records[0]
    )
    # the tool link does not grant reading the record: answered as an unknown id
    assert codes(with_tool) == ["NOT_FOUND"]
    assert with_tool.errors[0].message == f"no memory record with id {world.records[0]}"
    listing = await run_as(api, client, RECORDS, execution=execution, tool=tool, a=world.agent)
    assert codes(listing) == ["NOT_FOUND"]  # nor the agent: the chain grants no SELECT on it
    deleting = await run_as(api, client, DELETE_API, execution=execution, id=world.records[1])
    # the record is readable in the execution, so the refusal names the link that denies
    assert codes(deleting) == ["FORBIDDEN"]
    assert f"does not grant UPDATE {world.ns}.AgentMemory" in deleting.errors[0].message


async def test_admins_manage_agents_but_read_memory_only_with_grants(
    api: Api, world: World
) -> None:
    admin = await bearer(api, kind="admin")
    ns = f"adm{uuid.uuid4().hex[:8]}"
    created = await run_as(
        api,
        admin,
        "mutation($ns: String!) { createAgent(input: "
        '{namespace: $ns, name: "x"}) { agent { id namespace } } }',
        ns=ns,
    )
    assert created.errors is None and created.data["createAgent"]["agent"]["namespace"] == ns
    listed = await run_as(api, admin, RECORDS, a=world.agent)
    assert codes(listed) == ["FORBIDDEN"] and "SENTINEL" not in str(listed.data)
    agents = await run_as(
        api,
        admin,
        "query($ns: String!) { agents(namespace: $ns, first: 5) { edges { node { id } } } }",
        ns=world.ns,
    )
    assert agents.errors is None


async def test_clients_create_agents_only_with_insert_on_the_namespace(
    api: Api, world: World
) -> None:
    ns = f"ins{uuid.uuid4().hex[:8]}"
    token = await bearer(
        api, kind="client", grants=(("INSERT", f"{ns}.Agent"), ("SELECT", f"{ns}.Agent"))
    )
    create = (
        'mutation($ns: String!) { createAgent(input: {namespace: $ns, name: "x"})'
        " { agent { id } } }"
    )
    assert (await run_as(api, token, create, ns=ns)).errors is None
    assert codes(await run_as(api, token, create, ns=world.ns)) == ["FORBIDDEN"]


async def test_a_payload_shows_what_its_mutation_wrote_as_the_bare_row_did(
    api: Api, world: World
) -> None:
    """createAgent's payload is checked by the mutation's own permission: INSERT on the
    namespace shows the new agent without SELECT, as the bare agent was shown before the
    payload wrapped it; reading it again needs SELECT."""
    ns = f"ins{uuid.uuid4().hex[:8]}"
    token = await bearer(api, kind="client", grants=(("INSERT", f"{ns}.Agent"),))
    created = await run_as(
        api,
        token,
        'mutation($ns: String!) { createAgent(input: {namespace: $ns, name: "x"})'
        " { agent { id namespace } } }",
        ns=ns,
    )
    assert created.errors is None, created.errors
    agent = created.data["createAgent"]["agent"]
    assert agent["namespace"] == ns
    again = await run_as(api, token, "query($a: ID!) { agent(id: $a) { id } }", a=agent["id"])
    assert again.data == {"agent": None} and codes(again) == ["NOT_FOUND"]


async def test_session_reads_without_memory_grant_redact_the_memory_tools(
    api: Api, world: World
) -> None:
    """A client that may read sessions but not memory sees the turn's work, with the
    memory tools' inputs and outputs and their transcript events redacted."""
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.Session"),))
    view = await run_as(api, token, TURN_VIEW, t=world.turn)
    assert view.errors is None, view.errors
    assert "SENTINEL" not in str(view.data)
    tools = [e for e in view.data["turn"]["executions"] if e["name"] == "add_memory"]
    assert tools and all(e["input"] is None and e["output"] is None for e in tools)
    results = [e for e in view.data["turn"]["transcript"] if e["toolName"] == "add_memory"]
    assert results and all("redacted" in e["payload"] for e in results)
    granted = await bearer(
        api, kind="client", grants=(("SELECT", f"{world.ns}.Session"), *_read(world.ns))
    )
    full = await run_as(api, granted, TURN_VIEW, t=world.turn)
    assert "SENTINEL-A fact 0" in str(full.data)
    sessions = await run_as(api, token, SESSIONS, a=world.agent)
    assert codes(sessions) == ["NOT_FOUND"]  # reading the agent needs <ns>.Agent


async def test_unauthenticated_operations_run_nothing(api: Api, world: World) -> None:
    for token in (None, "amk_unknown", "garbage"):
        with api.count_statements():
            result = await run_as(api, token, RECORD, id=world.records[0])
        assert codes(result) == ["UNAUTHENTICATED"]
        assert result.data is None
        assert api.statements <= 1  # at most the token lookup


async def test_an_agent_name_the_caller_may_not_read_is_not_found(api: Api, world: World) -> None:
    """Looking an agent up by name answers a hidden agent exactly as a missing one, so
    names in other namespaces cannot be probed (R70)."""
    by_name = "query($ns: String!, $n: String!) { agent(namespace: $ns, name: $n) { id } }"
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.Agent"),))
    mine = await run_as(api, token, by_name, ns=world.ns, n="agent")
    assert mine.errors is None and mine.data["agent"]["id"] == world.agent
    hidden = await run_as(api, token, by_name, ns=world.other_ns, n="agent")
    missing = await run_as(api, token, by_name, ns=world.other_ns, n="nobody")
    assert codes(hidden) == codes(missing) == ["NOT_FOUND"]
    assert hidden.errors[0].message == f"no agent {world.other_ns}.agent"
    assert missing.errors[0].message == f"no agent {world.other_ns}.nobody"
