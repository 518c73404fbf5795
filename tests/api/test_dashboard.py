"""Dashboard reads through the schema: agents, versions, sessions, turns, executions,
memory records and their full history, who wrote what (R12, R25, R71 readers)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest

from server.services import memory, turns
from tests.api.scenario import DELETE, INVOKE, Scenario, memory_config
from tests.conftest import Api

LABELS = {"customer_id": {"number": 5, "description": "The customer the memory is about."}}

AGENT_VERSIONS = """
query($id: ID!) {
  agent(id: $id) { versions { number config } latestVersion { number } }
}"""
SESSIONS = """
query($id: ID!, $first: Int!, $after: String) {
  agent(id: $id) {
    sessions(first: $first, after: $after) {
      edges { cursor node { id agent { id } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
RECORD_PAGE = """
query($id: ID!, $first: Int!, $after: String, $filter: MemoryRecordFilter) {
  agent(id: $id) {
    memoryRecords(first: $first, after: $after, filter: $filter) {
      edges { cursor node { id status scope preview current { summary kind labels } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
PROVENANCE = (
    "execution { id name kind } invocation { id purpose } agentVersion { number } "
    "session { id } turn { id number }"
)
RECORD = f"""
query($id: ID!) {{
  agentMemory(id: $id) {{
    id status scope preview session {{ id }}
    current {{ number status summary content }}
    replaces {{ id status }} replacedBy {{ id status }}
    writtenBy {{ {PROVENANCE} }}
    versions {{ number status summary writtenBy {{ {PROVENANCE} }} }}
  }}
}}"""
TURN = """
query($id: ID!) {
  turn(id: $id) {
    number status
    executions { id kind name status parent { id } invocations { purpose model } }
    transcript { sequence type toolName execution { id } }
    memories { id status current { summary } }
  }
}"""
STATEMENT_PAGE = """
query($id: ID!, $first: Int!) {
  agent(id: $id) {
    memoryRecords(first: $first) {
      edges { node {
        current { summary writtenBy { execution { id name } agentVersion { number }
                                      session { id } turn { number } } }
        versions { number status }
        replaces { id }
        replacedBy { id }
      } }
    }
  }
}"""


def _cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


async def _page(
    api: Api, agent: str, first: int, after: str | None = None, **filter: Any
) -> dict[str, Any]:
    data = await api.ok(RECORD_PAGE, id=agent, first=first, after=after, filter=filter or None)
    return dict(data["agent"]["memoryRecords"])


def _ids(page: dict[str, Any]) -> list[str]:
    return [edge["node"]["id"] for edge in page["edges"]]


async def _all_record_ids(api: Api, agent: str, **filter: Any) -> list[str]:
    return _ids(await _page(api, agent, 100, **filter))


async def test_agent_versions_oldest_first(api: Api) -> None:
    """As the schema says: the configuration diff reads v1 before v2."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    await s.publish(memory_config(kinds=["fact"]))
    data = (await api.ok(AGENT_VERSIONS, id=agent))["agent"]
    assert [v["number"] for v in data["versions"]] == [1, 2]
    assert data["versions"][1]["config"]["harness"]["memory"]["kinds"] == ["fact"]
    assert data["latestVersion"] == {"number": 2}


async def test_sessions_page_newest_first_with_cursors(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    created = [await s.session() for _ in range(3)]
    first = (await api.ok(SESSIONS, id=agent, first=2))["agent"]["sessions"]
    assert [e["node"]["id"] for e in first["edges"]] == created[::-1][:2]
    assert {e["node"]["agent"]["id"] for e in first["edges"]} == {agent}
    assert first["pageInfo"] == {"hasNextPage": True, "endCursor": first["edges"][-1]["cursor"]}
    rest = (await api.ok(SESSIONS, id=agent, first=2, after=first["pageInfo"]["endCursor"]))[
        "agent"
    ]["sessions"]
    assert [e["node"]["id"] for e in rest["edges"]] == [created[0]]
    assert rest["pageInfo"]["hasNextPage"] is False
    whole = (await api.ok(SESSIONS, id=agent, first=100))["agent"]["sessions"]
    assert [e["node"]["id"] for e in whole["edges"]] == created[::-1]
    assert whole["pageInfo"]["hasNextPage"] is False


@pytest.mark.parametrize("first", [0, -1, 101, 10_000])
async def test_page_size_out_of_range_is_bad_input(api: Api, first: int) -> None:
    """first is required and at most 100 (the configured maximum)."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    for query in (SESSIONS, RECORD_PAGE):
        message, ext = await api.error(query, id=agent, first=first)
        assert ext == {"code": "BAD_INPUT", "field": "first"}, message


async def test_page_size_is_required(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    _, ext = await api.error(
        "query($id: ID!) { agent(id: $id) { sessions { edges { cursor } } } }", id=agent
    )
    assert ext["code"] == "GRAPHQL_VALIDATION_FAILED"
    page = (await api.ok(SESSIONS, id=agent, first=100))["agent"]["sessions"]
    assert page["edges"] == []


GARBAGE_CURSORS = [
    "garbage!",
    "",
    "%%%",
    _cursor("record|12"),  # a record cursor given to the session list
    _cursor("session|not-a-date|also-not-a-uuid"),
    _cursor("session|2024-01-01T00:00:00+00:00"),
    _cursor("record|abc"),
    _cursor("record|²"),
    _cursor("record|" + "9" * 40),
    _cursor("record|-5"),
    _cursor("record|1|2"),
]


@pytest.mark.parametrize("after", GARBAGE_CURSORS)
async def test_garbage_cursor_is_bad_input(api: Api, after: str) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    await s.committed("A fact to page over", session)
    for query in (SESSIONS, RECORD_PAGE):
        if after == _cursor("record|12") and query is RECORD_PAGE:
            continue  # a well-formed record cursor
        message, ext = await api.error(query, id=agent, first=5, after=after)
        assert ext == {"code": "BAD_INPUT", "field": "after"}, (query, message)


async def test_memory_records_newest_first_with_cursors(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    created = [await s.add_id(turn, f"Fact number {i}") for i in range(5)]
    await s.commit(turn)
    assert await _all_record_ids(api, agent) == created[::-1]
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = await _page(api, agent, 2, after)
        seen += _ids(page)
        pages += 1
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    assert seen == created[::-1]
    assert pages == 3


async def test_memory_record_filters(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(
        memory_config(read=["session", "agent"], write=["session", "agent"], labels=LABELS)
    )
    one, two = await s.session(), await s.session()
    turn = await s.turn(one)
    fact = await s.add_id(
        turn, "Customer c1 prefers email", kind="fact", labels={"customer_id": "c1"}
    )
    event = await s.add_id(
        turn,
        "Customer c2 called about fees",
        kind="event",
        scope="AGENT",
        labels={"customer_id": "c2"},
    )
    await s.commit(turn)
    turn = await s.turn(one)
    correction = await s.add_id(
        turn, "Customer c1 prefers phone", kind="fact", labels={"customer_id": "c1"}, replaces=fact
    )
    await api.ok(DELETE, turn=turn, id=event)
    await s.commit(turn)
    guidance = await s.committed("Greet customers by name", two, kind="guidance")
    preview_turn = await s.turn(two, preview=True)
    preview = await s.add_id(preview_turn, "Preview: customers like brevity")
    await s.commit(preview_turn)

    everything = [preview, guidance, correction, event, fact]
    assert await _all_record_ids(api, agent) == everything
    assert await _all_record_ids(api, agent, status="ACTIVE") == [preview, guidance, correction]
    assert await _all_record_ids(api, agent, status="SUPERSEDED") == [fact]
    assert await _all_record_ids(api, agent, status="DELETED") == [event]
    assert await _all_record_ids(api, agent, kind="fact") == [correction, fact]
    assert await _all_record_ids(api, agent, kind="event") == [event]
    assert await _all_record_ids(api, agent, scope="AGENT") == [event]
    assert await _all_record_ids(api, agent, scope="SESSION") == [
        preview,
        guidance,
        correction,
        fact,
    ]
    assert await _all_record_ids(api, agent, sessionId=one) == [correction, event, fact]
    assert await _all_record_ids(api, agent, sessionId=two) == [preview, guidance]
    assert await _all_record_ids(api, agent, preview=True) == [preview]
    assert await _all_record_ids(api, agent, preview=False) == [guidance, correction, event, fact]
    c1 = [{"name": "customer_id", "value": "c1"}]
    assert await _all_record_ids(api, agent, labels=c1) == [correction, fact]
    assert await _all_record_ids(api, agent, labels=c1, status="ACTIVE") == [correction]
    nobody = [{"name": "customer_id", "value": "c9"}]
    assert await _all_record_ids(api, agent, labels=nobody) == []
    # filters combine with pagination
    first = await _page(api, agent, 1, sessionId=one)
    assert _ids(first) == [correction] and first["pageInfo"]["hasNextPage"]
    rest = await _page(api, agent, 5, first["pageInfo"]["endCursor"], sessionId=one)
    assert _ids(rest) == [event, fact] and not rest["pageInfo"]["hasNextPage"]


async def test_r25_record_versions_and_links(api: Api) -> None:
    """A record's versions are its history: creation, then each status change, each
    with the provenance of the call that made it; replaces/replacedBy link both ways."""
    s = Scenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    first_session, second_session = await s.session(), await s.session()
    first_turn = await s.turn(first_session)
    original = await s.add_id(first_turn, "Fees are billed monthly", scope="AGENT")
    await s.commit(first_turn)
    await s.publish(memory_config(read=["session", "agent"], write=["session", "agent"]))
    second = await s.begin(second_session)
    second_turn = second["turn"]["id"]
    replacing = await s.add(
        second_turn, "Fees are billed quarterly", scope="AGENT", replaces=original
    )
    correction = replacing["memories"][0]["recordId"]
    replace_execution = replacing["execution"]["id"]
    deleted = await api.ok(DELETE, turn=second_turn, id=correction)
    delete_execution = deleted["deleteMemory"]["execution"]["id"]
    await s.commit(second_turn)

    old = (await api.ok(RECORD, id=original))["agentMemory"]
    assert old["status"] == "SUPERSEDED"
    assert old["replacedBy"] == {"id": correction, "status": "DELETED"}
    assert old["replaces"] is None
    assert old["session"] == {"id": first_session}
    assert [(v["number"], v["status"]) for v in old["versions"]] == [
        (1, "ACTIVE"),
        (2, "SUPERSEDED"),
    ]
    created, superseded = old["versions"]
    assert created["writtenBy"]["turn"]["id"] == first_turn
    assert created["writtenBy"]["agentVersion"] == {"number": 1}
    assert created["writtenBy"]["session"] == {"id": first_session}
    assert superseded["writtenBy"]["execution"] == {
        "id": replace_execution,
        "name": "add_memory",
        "kind": "TOOL",
    }
    assert superseded["writtenBy"]["turn"]["id"] == second_turn
    assert superseded["writtenBy"]["agentVersion"] == {"number": 2}
    assert superseded["writtenBy"]["session"] == {"id": second_session}
    assert old["writtenBy"] == created["writtenBy"]
    assert old["current"]["number"] == 2 and old["current"]["status"] == "SUPERSEDED"

    new = (await api.ok(RECORD, id=correction))["agentMemory"]
    assert new["status"] == "DELETED"
    assert new["replaces"] == {"id": original, "status": "SUPERSEDED"}
    assert new["replacedBy"] is None
    assert [(v["number"], v["status"]) for v in new["versions"]] == [(1, "ACTIVE"), (2, "DELETED")]
    assert new["versions"][1]["writtenBy"]["execution"]["id"] == delete_execution
    assert new["versions"][1]["writtenBy"]["execution"]["name"] == "delete_memory"
    assert new["current"]["summary"] == "Fees are billed quarterly"


async def test_r25_written_by_names_every_link(api: Api) -> None:
    """Execution, invocation, agent version, session and turn of the writing call."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    begun = await s.begin(session)
    turn, turn_execution = begun["turn"]["id"], begun["execution"]["id"]
    invocation = (await api.ok(INVOKE, execution=turn_execution, purpose="TURN"))[
        "recordInvocation"
    ]["invocation"]["id"]
    added = (
        await api.ok(
            """mutation($turn: ID!, $invocation: ID!) {
          addMemory(input: {turnId: $turn, summary: "The customer is on the gold plan",
                            invocationId: $invocation}) {
            execution { id } memories { recordId }
          }
        }""",
            turn=turn,
            invocation=invocation,
        )
    )["addMemory"]
    record = added["memories"][0]["recordId"]
    await s.commit(turn)
    written = (await api.ok(RECORD, id=record))["agentMemory"]["writtenBy"]
    assert written == {
        "execution": {"id": added["execution"]["id"], "name": "add_memory", "kind": "TOOL"},
        "invocation": {"id": invocation, "purpose": "TURN"},
        "agentVersion": {"number": 1},
        "session": {"id": session},
        "turn": {"id": turn, "number": 1},
    }


async def test_turn_executions_transcript_and_memories(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    begun = await s.begin(session)
    turn, turn_execution = begun["turn"]["id"], begun["execution"]["id"]
    await api.ok(INVOKE, execution=turn_execution, purpose="TURN", model="model-a")
    kept = await s.add_id(turn, "The customer's name is Ada")
    dropped = await s.add_id(turn, "The customer is in a hurry")
    await api.ok(DELETE, turn=turn, id=dropped)
    await s.commit(turn)

    data = (await api.ok(TURN, id=turn))["turn"]
    assert data["number"] == 1 and data["status"] == "COMMITTED"
    executions = data["executions"]
    assert [(e["kind"], e["name"]) for e in executions] == [
        ("TURN", "turn"),
        ("TOOL", "add_memory"),
        ("TOOL", "add_memory"),
        ("TOOL", "delete_memory"),
    ]
    assert executions[0]["id"] == turn_execution and executions[0]["parent"] is None
    assert executions[0]["invocations"] == [{"purpose": "TURN", "model": "model-a"}]
    assert all(e["parent"] == {"id": turn_execution} for e in executions[1:])
    assert {e["status"] for e in executions} == {"SUCCEEDED"}
    transcript = data["transcript"]
    assert [t["sequence"] for t in transcript] == list(range(1, len(transcript) + 1))
    assert transcript[0]["type"] == "MEMORY_PINNED"
    results = [(t["type"], t["toolName"], t["execution"]["id"]) for t in transcript[1:]]
    assert results == [("TOOL_RESULT", e["name"], e["id"]) for e in executions[1:]]
    memories = {m["id"]: (m["status"], m["current"]["summary"]) for m in data["memories"]}
    assert memories == {
        kept: ("ACTIVE", "The customer's name is Ada"),
        dropped: ("DELETED", "The customer is in a hurry"),
    }


async def test_agent_memory_reads_any_status_or_not_found(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    record = await s.committed("A record to delete", session)
    turn = await s.turn(session)
    await api.ok(DELETE, turn=turn, id=record)
    await s.commit(turn)
    data = (await api.ok(RECORD, id=record))["agentMemory"]
    assert data["status"] == "DELETED" and data["current"]["summary"] == "A record to delete"
    _, ext = await api.error(RECORD, id=str(uuid.uuid4()))
    assert ext["code"] == "NOT_FOUND"


async def test_an_agent_lookup_without_its_keys_is_bad_input(api: Api) -> None:
    """``agent`` needs an id, or a namespace and a name: asked with neither (or with half
    of the pair) it is BAD_INPUT naming what is missing, not NOT_FOUND."""
    for arguments, missing in (
        ("", "id"),
        ('(namespace: "ns")', "name"),
        ('(name: "a")', "namespace"),
    ):
        result = await api.execute(f"{{ agent{arguments} {{ id }} }}")
        assert result.data == {"agent": None}
        [error] = result.errors
        assert error.extensions == {"code": "BAD_INPUT", "field": missing}, error


async def test_r12_staged_changes_are_not_visible_to_a_dashboard(api: Api) -> None:
    """An open turn's new records, replacements and deletions are not shown until it
    commits; after a rollback they are gone."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    kept = await s.committed("The customer is based in Lyon", session)
    doomed = await s.committed("The customer has two accounts", session)
    before = {r: (await api.ok(RECORD, id=r))["agentMemory"] for r in (kept, doomed)}

    turn = await s.turn(session)
    staged = await s.add_id(turn, "The customer moved to Paris", replaces=kept)
    await api.ok(DELETE, turn=turn, id=doomed)

    assert await _all_record_ids(api, agent) == [doomed, kept]
    assert await _all_record_ids(api, agent, status="ACTIVE") == [doomed, kept]
    assert await _all_record_ids(api, agent, status="DELETED") == []
    assert await _all_record_ids(api, agent, status="SUPERSEDED") == []
    for record in (kept, doomed):
        assert (await api.ok(RECORD, id=record))["agentMemory"] == before[record]
    _, ext = await api.error(RECORD, id=staged)
    assert ext["code"] == "NOT_FOUND"
    assert (await api.ok(TURN, id=turn))["turn"]["memories"] == []

    await s.commit(turn)
    assert await _all_record_ids(api, agent) == [staged, doomed, kept]
    assert await _all_record_ids(api, agent, status="ACTIVE") == [staged]
    after = (await api.ok(RECORD, id=kept))["agentMemory"]
    assert after["status"] == "SUPERSEDED" and after["replacedBy"]["id"] == staged
    assert [v["status"] for v in after["versions"]] == ["ACTIVE", "SUPERSEDED"]
    memories = {m["id"]: m["status"] for m in (await api.ok(TURN, id=turn))["turn"]["memories"]}
    assert memories == {staged: "ACTIVE", kept: "SUPERSEDED", doomed: "DELETED"}

    rolled = await s.turn(session)
    gone = await s.add_id(rolled, "A thought that will be rolled back")
    await s.rollback(rolled)
    _, ext = await api.error(RECORD, id=gone)
    assert ext["code"] == "NOT_FOUND"
    assert (await api.ok(TURN, id=rolled))["turn"]["memories"] == []


async def _many_records(api: Api, count: int) -> str:
    """An agent with ``count`` committed records over two sessions and three turns,
    some replacing others, written through the service layer, one transaction a turn.
    The summaries are embedded up front in one batch, so each write finds its vector
    in the embedder's cache."""
    s = Scenario(api)
    agent = await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    sessions = [uuid.UUID(await s.session()), uuid.UUID(await s.session())]
    plan = [
        (sessions[0], count // 2, False),
        (sessions[1], count // 4, False),
        (sessions[0], count - count // 2 - count // 4, True),
    ]
    summaries = [
        [f"Observation {i} of part {part} for agent {agent}" for i in range(n)]
        for part, (_, n, _) in enumerate(plan)
    ]
    await api.embedder.embed([text for part in summaries for text in part])
    earlier: list[uuid.UUID] = []
    for (session, _, replacing), texts in zip(plan, summaries, strict=True):
        async with api.database.session() as db:
            begun = await turns.begin_turn(db, session_id=session)
            ref = memory.CallRef(turn_id=begun.turn.id)
            for i, summary in enumerate(texts):
                result = await memory.add_memory(
                    db,
                    api.embedder,
                    ref=ref,
                    summary=summary,
                    scope="AGENT" if i % 3 == 0 else None,
                    replaces=earlier[i] if replacing else None,
                )
                earlier.append(result.items[0].record.id)
            await turns.commit_turn(db, turn_id=begun.turn.id)
            await db.commit()
    return agent


async def test_record_page_costs_a_bounded_number_of_statements(api: Api) -> None:
    """A page of records with their versions, provenance and links costs the same
    number of SQL statements for 10 records as for 100 (dataloaders, no N+1)."""
    agent = await _many_records(api, 100)
    counts = {}
    for first in (10, 100):
        with api.count_statements():
            data = await api.ok(STATEMENT_PAGE, id=agent, first=first)
        counts[first] = api.statements
        edges = data["agent"]["memoryRecords"]["edges"]
        assert len(edges) == first
    nodes = [e["node"] for e in data["agent"]["memoryRecords"]["edges"]]
    assert sum(1 for n in nodes if n["replaces"]) == 25
    assert sum(1 for n in nodes if n["replacedBy"]) == 25
    assert {len(n["versions"]) for n in nodes} == {1, 2}
    assert len({n["current"]["writtenBy"]["session"]["id"] for n in nodes}) == 2
    assert counts[10] == counts[100], counts
    assert counts[100] <= 10, counts


async def test_nul_in_text_arguments_is_bad_input(api: Api) -> None:
    """PostgreSQL text cannot hold NUL: such a lookup or filter is BAD_INPUT, not a
    database error."""
    s = Scenario(api)
    agent = await s.agent(memory_config(labels=LABELS))
    await s.committed("A fact", await s.session())
    _, ext = await api.error(
        'query($ns: String!) { agent(namespace: $ns, name: "agent") { id } }', ns="ns\x00"
    )
    assert ext == {"code": "BAD_INPUT", "field": "namespace"}
    _, ext = await api.error(
        "query($ns: String!) { agents(namespace: $ns, first: 5) { edges { cursor } } }", ns="ns\x00"
    )
    assert ext == {"code": "BAD_INPUT", "field": "namespace"}
    for filter, field in (
        ({"kind": "fa\x00ct"}, "filter.kind"),
        ({"labels": [{"name": "customer_id", "value": "c\x001"}]}, "filter.labels[0].value"),
    ):
        _, ext = await api.error(RECORD_PAGE, id=agent, first=5, filter=filter)
        assert ext == {"code": "BAD_INPUT", "field": field}
    assert len(await _all_record_ids(api, agent)) == 1


async def test_labels_round_trip_from_an_output_to_an_input(api: Api) -> None:
    """What a version gives as labelList is what an input's labels take: passed back as it
    is, it writes the same labels (labels gives the same values as an object)."""
    labels = {
        "customer_id": {"number": 5, "description": "The customer."},
        "branch": {"number": 6, "description": "The branch."},
    }
    s = Scenario(api)
    await s.agent(memory_config(labels=labels))
    session = await s.session()
    turn = await s.turn(session)
    first = await s.add_id(turn, "Banks at Baixa", labels={"customer_id": "C-42", "branch": "B"})
    await s.commit(turn)
    query = (
        "query($id: ID!) { agentMemory(id: $id) { current { labels labelList { name value } } } }"
    )
    current = (await api.ok(query, id=first))["agentMemory"]["current"]
    assert current["labels"] == {"customer_id": "C-42", "branch": "B"}
    assert current["labelList"] == [
        {"name": "branch", "value": "B"},
        {"name": "customer_id", "value": "C-42"},
    ]
    again = await s.turn(session)
    copy = await s.add_id(again, "Banks at Baixa, again", labels=current["labelList"])
    await s.commit(again)
    assert (await api.ok(query, id=copy))["agentMemory"]["current"] == current


async def test_a_sessions_turns_read_newest_or_oldest_first_a_page_at_a_time(api: Api) -> None:
    """A trace reads a session's turns as its conversation went (OLDEST_FIRST); each
    order pages with its own cursors."""
    query = """query($id: ID!, $order: ListOrder!, $after: String) {
      session(id: $id) { turns(first: 2, order: $order, after: $after) {
        totalCount pageInfo { hasNextPage endCursor } edges { node { number } } } } }"""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    for _ in range(3):
        await s.commit(await s.turn(session))

    async def numbers(order: str) -> list[int]:
        seen: list[int] = []
        after = None
        while True:
            page = (await api.ok(query, id=session, order=order, after=after))["session"]["turns"]
            assert page["totalCount"] == 3
            seen += [e["node"]["number"] for e in page["edges"]]
            if not page["pageInfo"]["hasNextPage"]:
                return seen
            after = page["pageInfo"]["endCursor"]

    assert await numbers("OLDEST_FIRST") == [1, 2, 3]
    assert await numbers("NEWEST_FIRST") == [3, 2, 1]
    newest = await api.ok(query, id=session, order="NEWEST_FIRST")
    cursor = newest["session"]["turns"]["pageInfo"]["endCursor"]
    _, extensions = await api.error(query, id=session, order="OLDEST_FIRST", after=cursor)
    assert extensions == {"code": "BAD_INPUT", "field": "after"}
