"""Connections through the schema: full page info, a total count where one COUNT under
the page's condition gives it, and the connections beside the lists that can grow (a
turn's transcript and executions, a record's versions)."""

from __future__ import annotations

from typing import Any

from tests.api.scenario import DELETE, Scenario, memory_config
from tests.conftest import Api

PAGE = "edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
TURNS = (
    "query($s: ID!, $after: String) { session(id: $s) { turns(first: 2, after: $after) { "
    + PAGE
    + " totalCount } } }"
)
TURN = """query($t: ID!) { turn(id: $t) {
  transcript { id } executions { id }
  transcriptConnection(first: 100) { edges { node { id } } totalCount }
  executionsConnection(first: 100) { edges { node { id } } totalCount } } }"""


def _turn_page(connection: str) -> str:
    return (
        "query($t: ID!, $after: String, $first: Int!) { turn(id: $t) { "
        + connection
        + "(first: $first, after: $after) { "
        + PAGE
        + " totalCount } } }"
    )


VERSIONS = (
    """query($r: ID!, $after: String) { agentMemory(id: $r) { versions { id number }
  versionsConnection(first: 1, after: $after) { """
    + PAGE
    + """ totalCount } } }"""
)
RECORDS = (
    """query($a: ID!, $filter: MemoryRecordFilter) { agent(id: $a) {
  memoryRecords(first: 1, filter: $filter) { """
    + PAGE
    + " totalCount } } }"
)
AGENTS = "query($ns: String!) { agents(namespace: $ns, first: 5) { " + PAGE + " totalCount } }"


def _ids(connection: dict[str, Any]) -> list[str]:
    return [e["node"]["id"] for e in connection["edges"]]


async def _all(api: Api, query: str, path: tuple[str, ...], **variables: Any) -> list[str]:
    """Every page of a connection, following endCursor; checks each page's info."""
    ids: list[str] = []
    after = None
    while True:
        page: Any = await api.ok(query, after=after, **variables)
        for key in path:
            page = page[key]
        info = page["pageInfo"]
        assert info["hasPreviousPage"] is (after is not None)
        if page["edges"]:
            assert info["startCursor"] == page["edges"][0]["cursor"]
            assert info["endCursor"] == page["edges"][-1]["cursor"]
        ids += _ids(page)
        if not info["hasNextPage"]:
            return ids
        after = info["endCursor"]


async def test_page_info_and_total_count_of_a_session_s_turns(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    turns = [await s.turn(session) for _ in range(3)]
    for turn in turns:
        await s.commit(turn)
    first = (await api.ok(TURNS, s=session))["session"]["turns"]
    assert first["totalCount"] == 3 and first["pageInfo"]["hasNextPage"] is True
    assert first["pageInfo"]["hasPreviousPage"] is False
    assert await _all(api, TURNS, ("session", "turns"), s=session) == [*reversed(turns)]
    second = (await api.ok(TURNS, s=session, after=first["pageInfo"]["endCursor"]))["session"]
    assert second["turns"]["totalCount"] == 3
    assert second["turns"]["pageInfo"]["hasPreviousPage"] is True


async def test_a_turn_s_transcript_and_executions_page_as_their_lists(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config(pinned=500))
    session = await s.session()
    seeded = await s.turn(session)
    await s.add(seeded, "Pinned fact", pinned=True)
    await s.commit(seeded)
    turn = await s.turn(session)
    for n in range(3):
        await s.add(turn, f"Fact {n}")
    whole = (await api.ok(TURN, t=turn))["turn"]
    assert whole["transcriptConnection"]["totalCount"] == len(whole["transcript"]) > 3
    assert whole["executionsConnection"]["totalCount"] == len(whole["executions"]) == 4
    for list_field, connection in (
        ("transcript", "transcriptConnection"),
        ("executions", "executionsConnection"),
    ):
        listed = [e["id"] for e in whole[list_field]]
        assert _ids(whole[connection]) == listed
        query = _turn_page(connection)
        assert await _all(api, query, ("turn", connection), t=turn, first=2) == listed


async def test_a_record_s_versions_page_as_its_list_without_staged_ones(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed("The customer prefers email", session)
    turn = await s.turn(session)
    await api.ok(DELETE, turn=turn, id=record)
    await s.commit(turn)
    data = (await api.ok(VERSIONS, r=record))["agentMemory"]
    assert [v["number"] for v in data["versions"]] == [1, 2]
    assert data["versionsConnection"]["totalCount"] == 2
    listed = [v["id"] for v in data["versions"]]
    assert await _all(api, VERSIONS, ("agentMemory", "versionsConnection"), r=record) == listed
    # a change an open turn stages is in neither until it commits
    again = await s.committed("The customer prefers phone calls", session)
    open_turn = await s.turn(session)
    await api.ok(DELETE, turn=open_turn, id=again)
    staged = (await api.ok(VERSIONS, r=again))["agentMemory"]
    assert len(staged["versions"]) == 1 and staged["versionsConnection"]["totalCount"] == 1
    assert _ids(staged["versionsConnection"]) == [staged["versions"][0]["id"]]


async def test_memory_records_are_counted_under_the_filter(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config(kinds=["fact", "event"]))
    session = await s.session()
    for n in range(3):
        await s.committed(f"Fact {n}", session, kind="fact")
    await s.committed("An event", session, kind="event")
    records = (await api.ok(RECORDS, a=agent))["agent"]["memoryRecords"]
    assert records["totalCount"] == 4 and len(records["edges"]) == 1
    facts = (await api.ok(RECORDS, a=agent, filter={"kind": "fact"}))["agent"]["memoryRecords"]
    assert facts["totalCount"] == 3


async def test_agents_of_a_namespace_are_not_counted(api: Api) -> None:
    """Each agent of a namespace is decided on its own: a count could tell of those a
    reader may not see, so there is none."""
    s = Scenario(api)
    await s.agent()
    ns = (await api.ok("query($a: ID!) { agent(id: $a) { namespace } }", a=s.agent_id))["agent"][
        "namespace"
    ]
    agents = (await api.ok(AGENTS, ns=ns))["agents"]
    assert _ids(agents) == [s.agent_id] and agents["totalCount"] is None


async def test_a_cursor_of_another_list_is_refused(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    await s.add(turn, "Fact")
    executions = _turn_page("executionsConnection")
    page = (await api.ok(executions, t=turn, first=1))["turn"]["executionsConnection"]
    foreign = page["pageInfo"]["endCursor"]
    _, ext = await api.error(_turn_page("transcriptConnection"), t=turn, first=1, after=foreign)
    assert ext["code"] == "BAD_INPUT"
