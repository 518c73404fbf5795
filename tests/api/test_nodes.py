"""Relay's object identification through the schema: ``node`` and ``nodes`` read every
type that implements ``Node`` under the grants of the typed lookups; the typed lookups
that can fail null only their own field."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from tests.api.history_scenario import agent, history_config, user
from tests.api.review_scenario import ReviewScenario
from tests.api.scenario import INVOKE
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

NODE = "query($id: ID!) { node(id: $id) { __typename id } }"
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"
SEARCH = """
mutation($turn: ID!, $q: String) {
  searchMemory(input: {turnId: $turn, query: $q}) { execution { id uses { id } } }
}"""
HISTORY = """
query($s: ID!) { session(id: $s) { history(first: 10) {
  edges { node { id parts { id } } } } } }"""


@dataclass
class World:
    ns: str
    ids: dict[str, str]  # type name -> an object's id


@pytest.fixture(scope="module")
async def world(api: Api) -> World:
    s = ReviewScenario(api)
    ns = f"node{uuid.uuid4().hex[:8]}"
    config = history_config(read=["session", "agent"], write=["session", "agent"])
    config["harness"]["memory"]["extraction"] = {"every": "turn"}
    agent_id = await s.agent(config, namespace=ns)
    version = (await s.publish(config))["id"]
    session = await s.session()
    begun = await s.begin(session)
    turn, execution = begun["turn"]["id"], begun["execution"]["id"]
    events = await s.record(turn, user("My dog is called Rex"), agent("Noted"))
    invocation = (await api.ok(INVOKE, execution=execution, purpose="TURN"))["recordInvocation"][
        "invocation"
    ]["id"]
    added = await s.add(turn, "The customer's dog is called Rex")
    review = (await s.begin_review(turn))["review"]["id"]
    await s.commit(turn)
    later = await s.turn(session)
    found = (await api.ok(SEARCH, turn=later, q="dog"))["searchMemory"]["execution"]
    kept = (await api.ok(HISTORY, s=session))["session"]["history"]["edges"][0]["node"]
    return World(
        ns=ns,
        ids={
            "Agent": agent_id,
            "AgentVersion": version,
            "Session": session,
            "Turn": turn,
            "Execution": execution,
            "Invocation": invocation,
            "TranscriptEvent": events[0]["id"],
            "MemoryRecord": added["memories"][0]["recordId"],
            "MemoryVersion": added["memories"][0]["id"],
            "HistoryEvent": kept["id"],
            "HistoryPart": kept["parts"][0]["id"],
            "MemoryReview": review,
            "OutputUse": found["uses"][0]["id"],
        },
    )


async def test_node_reads_every_type_by_its_id(api: Api, world: World) -> None:
    for typename, id_ in world.ids.items():
        data = await api.ok(NODE, id=id_)
        assert data["node"] == {"__typename": typename, "id": id_}, typename


async def test_nodes_reads_them_all_in_the_order_asked(api: Api, world: World) -> None:
    ids = list(world.ids.values())
    data = await api.ok(NODES, ids=[*reversed(ids)])
    assert [n["id"] for n in data["nodes"]] == [*reversed(ids)]
    assert [n["__typename"] for n in data["nodes"]] == [*reversed(world.ids)]


async def test_the_global_id_is_the_uuid_every_input_takes(api: Api, world: World) -> None:
    """A node's id goes straight into a typed lookup, and back."""
    turn = world.ids["Turn"]
    data = await api.ok(
        "query($id: ID!, $node: ID!) { turn(id: $id) { id } node(id: $node) { id } }",
        id=turn,
        node=turn,
    )
    assert data == {"turn": {"id": turn}, "node": {"id": turn}}


async def test_an_unknown_or_malformed_id_is_null_with_its_error(api: Api, world: World) -> None:
    unknown = str(uuid.uuid4())
    result = await api.execute(NODE, id=unknown)
    assert result.data == {"node": None} and codes(result) == ["NOT_FOUND"]
    result = await api.execute(NODE, id="not-a-uuid")
    assert result.data == {"node": None} and codes(result) == ["BAD_INPUT"]
    result = await api.execute(NODES, ids=[world.ids["Turn"], unknown])
    assert result.data["nodes"][0]["id"] == world.ids["Turn"]
    assert result.data["nodes"][1:] == [None]
    assert [(e.path, e.extensions["code"]) for e in result.errors] == [(["nodes", 1], "NOT_FOUND")]
    # a malformed id is the caller's input at fault, as in every id argument: the whole
    # list is BAD_INPUT, naming it
    result = await api.execute(NODES, ids=[world.ids["Turn"], unknown, "x"])
    assert result.data is None  # nodes is a non-null list: its error nulls the answer
    assert [e.extensions for e in result.errors] == [{"code": "BAD_INPUT", "field": "ids[2]"}]


async def test_node_reads_under_the_typed_lookups_grants(api: Api, world: World) -> None:
    """A reader of the sessions but not of the memory: the turn's work reads through node
    as through turn; its memory is, through node as through agentMemory, as an id that
    names nothing (NOT_FOUND)."""
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.Session"),))
    memory = ("MemoryRecord", "MemoryVersion", "MemoryReview", "OutputUse")
    agents = ("Agent", "AgentVersion")  # <ns>.Agent, not granted
    for typename, id_ in world.ids.items():
        result = await run_as(api, token, NODE, id=id_)
        if typename in memory or typename in agents:
            assert result.data == {"node": None}, typename
            assert codes(result) == ["NOT_FOUND"], typename
        else:
            assert result.errors is None, (typename, result.errors)
            assert result.data["node"]["id"] == id_
    typed = await run_as(
        api,
        token,
        "query($id: ID!) { agentMemory(id: $id) { id } }",
        id=world.ids["MemoryRecord"],
    )
    assert typed.data == {"agentMemory": None} and codes(typed) == ["NOT_FOUND"]


async def test_nodes_nulls_each_refused_id_alone(api: Api, world: World) -> None:
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.Session"),))
    ids = [world.ids["Turn"], world.ids["MemoryRecord"], world.ids["Session"], str(uuid.uuid4())]
    result = await run_as(api, token, NODES, ids=ids)
    nodes = result.data["nodes"]
    assert [n and n["id"] for n in nodes] == [ids[0], None, ids[2], None]
    assert sorted((e.path, e.extensions["code"]) for e in result.errors) == [
        (["nodes", 1], "NOT_FOUND"),
        (["nodes", 3], "NOT_FOUND"),
    ]
    assert "Rex" not in str(result.data)


async def test_a_reader_of_another_namespace_reads_no_node(api: Api, world: World) -> None:
    other = f"other{uuid.uuid4().hex[:8]}"
    token = await bearer(
        api,
        kind="client",
        grants=(
            ("SELECT", f"{other}.Agent"),
            ("SELECT", f"{other}.Session"),
            ("SELECT", f"{other}.AgentMemory.indexes.*"),
            ("SELECT", f"{other}.AgentMemory.document"),
        ),
    )
    result = await run_as(api, token, NODES, ids=list(world.ids.values()))
    assert result.data == {"nodes": [None] * len(world.ids)}
    assert set(codes(result)) == {"NOT_FOUND"} and len(result.errors) == len(world.ids)


async def test_a_failing_lookup_nulls_its_own_field_only(api: Api, world: World) -> None:
    """One NOT_FOUND nulls that field (an unknown id, or one the caller may not read);
    the rest of the answer stands."""
    query = """query($s: ID!, $t: ID!, $r: ID!) {
      session(id: $s) { id } turn(id: $t) { id } agentMemory(id: $r) { id } }"""
    unknown = str(uuid.uuid4())
    result = await api.execute(
        query, s=world.ids["Session"], t=unknown, r=world.ids["MemoryRecord"]
    )
    assert result.data == {
        "session": {"id": world.ids["Session"]},
        "turn": None,
        "agentMemory": {"id": world.ids["MemoryRecord"]},
    }
    assert [(e.path, e.extensions["code"]) for e in result.errors] == [(["turn"], "NOT_FOUND")]
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world.ns}.Session"),))
    result = await run_as(
        api, token, query, s=world.ids["Session"], t=world.ids["Turn"], r=world.ids["MemoryRecord"]
    )
    assert result.data == {
        "session": {"id": world.ids["Session"]},
        "turn": {"id": world.ids["Turn"]},
        "agentMemory": None,
    }
    assert [(e.path, e.extensions["code"]) for e in result.errors] == [
        (["agentMemory"], "NOT_FOUND")
    ]
