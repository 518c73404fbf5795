"""The holes the authorization review of issue 22 found, each reproduced as it was
reported, through the schema with real tokens (R10, R12, R23, R50, R70, R71;
docs/security.md, "Ownership"). Items 5, 7 and 8 are tested where they live:
tests/http/test_observability.py, tests/test_migrations.py, tests/http/test_http.py,
tests/http/test_web.py and tests/test_cli.py."""

from __future__ import annotations

import uuid
from typing import Any

from tests.api.history_scenario import user
from tests.api.review_scenario import APPLY, BEGIN_REVIEW, ReviewScenario, decide, fact
from tests.api.scenario import CREATE_AGENT, MEMORY, memory_config
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

_CONFIG = memory_config(read=["session", "agent"], write=["session", "agent"])
_CONFIG["harness"]["history"] = {"index": "messages"}
_SEARCH = """mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { execution { id } } }"""
_USES = "query($id: ID!) { execution(id: $id) { uses { id } } }"
_NODE = """query($id: ID!) { node(id: $id) { ... on OutputUse { id
  memoryVersion { summary record { current { summary } } } } } }"""
_NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"
_USE_IDS = "query($id: ID!) { turn(id: $id) { executions { id uses { id } } } }"


async def _agent(api: Api, namespace: str) -> tuple[ReviewScenario, str]:
    s = ReviewScenario(api)
    name = f"agent{uuid.uuid4().hex[:6]}"
    created = await api.ok(CREATE_AGENT, ns=namespace, name=name, sessionless=False)
    s.agent_id = created["createAgent"]["agent"]["id"]
    await s.publish(_CONFIG)
    return s, await s.session()


async def _with_records(api: Api, namespace: str) -> tuple[ReviewScenario, str, list[str]]:
    """An agent with two committed records, and an open turn with its review begun."""
    s, session = await _agent(api, namespace)
    records = [
        await s.committed("The customer prefers email", session),
        await s.committed("The customer is on the basic plan", session),
    ]
    turn = await s.turn(session)
    await s.record(turn, user("I moved to the premium plan"))
    return s, turn, records


async def test_item_1_another_agents_review_cannot_be_applied(api: Api) -> None:
    """Agent A's runtime token names agent B's review: refused (NOT_FOUND) before it
    runs; B's records are untouched, and B's own apply still works (no CONFLICT)."""
    b, b_turn, (email, plan) = await _with_records(api, f"b{uuid.uuid4().hex[:8]}")
    begun = await b.begin_review(b_turn)
    review = begun["review"]["id"]
    a, _ = await _agent(api, f"a{uuid.uuid4().hex[:8]}")
    token = await bearer(api, kind="runtime", agent_id=a.agent_id)
    attacks: list[list[dict[str, Any]]] = [
        [
            decide("REPLACE", "The customer prefers fax", email),
            decide("DELETE", "x", plan),
            decide("ADD", "A was here"),
        ],
        [],  # would close B's review
    ]
    for decisions in attacks:
        refused = await run_as(api, token, APPLY, review=review, decisions=decisions)
        # another agent's review is, to A, one that does not exist (docs/security.md)
        assert codes(refused) == ["NOT_FOUND"] and refused.data is None
        assert refused.errors[0].message == f"no memory review with id {review}"
    await b.invoke(begun)
    applied = await b.apply(review, decide("REPLACE", "The customer is on premium", plan))
    assert applied["review"]["status"] == "APPLIED"
    await b.commit(b_turn)
    summaries = {
        r: (await api.ok(MEMORY, id=r))["agentMemory"]["current"]["summary"] for r in (email, plan)
    }
    assert summaries[email] == "The customer prefers email"  # not A's text


async def test_item_1_a_namespace_token_cannot_mix_its_agents(api: Api) -> None:
    """A runtime token of a whole namespace acts for each of its agents, one at a time:
    its agent A's own review cannot name agent B's record (NOT_FOUND, R10)."""
    ns = f"n{uuid.uuid4().hex[:8]}"
    _, _, (email, _) = await _with_records(api, ns)
    _, a_turn, _ = await _with_records(api, ns)
    token = await bearer(api, kind="runtime", namespace=ns)
    begun = await run_as(api, token, BEGIN_REVIEW, turn=a_turn)
    review = begun.data["beginMemoryReview"]["review"]["id"]
    refused = await run_as(
        api, token, APPLY, review=review, decisions=[decide("DELETE", "x", email)]
    )
    assert codes(refused) == ["NOT_FOUND"]
    assert refused.errors[0].extensions["field"] == "decisions[0].recordId"
    current = (await api.ok(MEMORY, id=email))["agentMemory"]["current"]
    assert current["status"] == "ACTIVE"


async def test_item_2_another_agents_memory_cannot_be_compared(api: Api) -> None:
    """compareMemoryCandidates with B's review by A's token, asking only for the text the
    model reads (which listed B's record ids, kinds and summaries): refused as a review
    that does not exist (NOT_FOUND), no text."""
    b, b_turn, records = await _with_records(api, f"b{uuid.uuid4().hex[:8]}")
    review = (await b.begin_review(b_turn))["review"]["id"]
    a, _ = await _agent(api, f"a{uuid.uuid4().hex[:8]}")
    token = await bearer(api, kind="runtime", agent_id=a.agent_id)
    text_only = """mutation($review: ID!, $candidates: [MemoryCandidateInput!]!) {
      compareMemoryCandidates(input: {reviewId: $review, candidates: $candidates}) { text } }"""
    candidates = [fact("The customer prefers email"), fact("The customer plan")]
    refused = await run_as(api, token, text_only, review=review, candidates=candidates)
    assert codes(refused) == ["NOT_FOUND"] and refused.data is None
    assert not any(r in str(refused) for r in records)
    # B itself compares its own (COMPARE asks for everything)
    own = await b.compare(review, *candidates)
    assert records[0] in own["text"]


async def test_item_3_uses_of_staged_memory_are_not_readable(api: Api) -> None:
    """B's open turn adds a record and searches: its use of the staged version is not
    shown to a reader with SELECT on B's namespace (node, nodes, Execution.uses), as the
    record and the version are not (R12); at commit it is."""
    ns = f"b{uuid.uuid4().hex[:8]}"
    b, session = await _agent(api, ns)
    turn = await b.turn(session)
    await b.add_id(turn, "The vault code is 4711")
    search = await api.ok(_SEARCH, turn=turn, q="vault code")
    execution = search["searchMemory"]["execution"]["id"]
    use = await _use_id(api, execution)
    reader = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.*"),))
    node = await run_as(api, reader, _NODE, id=use)
    assert codes(node) == ["NOT_FOUND"] and node.data["node"] is None
    nodes = await run_as(api, reader, _NODES, ids=[use])
    assert codes(nodes) == ["NOT_FOUND"] and nodes.data["nodes"] == [None]
    uses = await run_as(api, reader, _USES, id=execution)
    assert uses.errors is None and uses.data["execution"]["uses"] == []
    await b.commit(turn)
    shown = await run_as(api, reader, _NODE, id=use)
    assert shown.errors is None
    assert shown.data["node"]["memoryVersion"]["summary"] == "The vault code is 4711"


async def test_item_4_a_use_needs_the_session_grant_through_node_too(api: Api) -> None:
    """node(id) on an OutputUse demands the Session grant execution(id){uses} demands:
    with the memory grant alone, both answer as an id that names nothing (NOT_FOUND)."""
    ns = f"b{uuid.uuid4().hex[:8]}"
    b, session = await _agent(api, ns)
    await b.committed("The vault code is 4711", session)
    turn = await b.turn(session)
    execution = (await api.ok(_SEARCH, turn=turn, q="vault"))["searchMemory"]["execution"]["id"]
    await b.commit(turn)
    use = await _use_id(api, execution)
    memory_only = await bearer(
        api,
        kind="client",
        grants=(
            ("SELECT", f"{ns}.AgentMemory.indexes.*"),
            ("SELECT", f"{ns}.AgentMemory.document"),
        ),
    )
    assert codes(await run_as(api, memory_only, _NODE, id=use)) == ["NOT_FOUND"]
    assert codes(await run_as(api, memory_only, _USES, id=execution)) == ["NOT_FOUND"]


async def test_item_6_a_mutation_never_commits_while_its_answer_is_forbidden(api: Api) -> None:
    """deleteAgentMemory by a client that may delete memory but not read sessions, asking
    for the execution that wrote the record: refused whole before it writes (the record
    stays ACTIVE); without that field it deletes."""
    ns = f"b{uuid.uuid4().hex[:8]}"
    b, session = await _agent(api, ns)
    record = await b.committed("The vault code is 4711", session)
    memory = (
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
        ("UPDATE", f"{ns}.AgentMemory.indexes.*"),
        ("UPDATE", f"{ns}.AgentMemory.document"),
    )
    deleter = await bearer(api, kind="client", grants=memory)
    asks_too_much = """mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) {
      record { status versions { writtenBy { execution { id } } } } } }"""
    refused = await run_as(api, deleter, asks_too_much, id=record)
    assert codes(refused) == ["FORBIDDEN"] and refused.data is None
    assert "nothing was done" in refused.errors[0].message
    assert (await api.ok(MEMORY, id=record))["agentMemory"]["status"] == "ACTIVE"
    deleted = await run_as(
        api,
        deleter,
        "mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) { record { status } } }",
        id=record,
    )
    assert deleted.errors is None
    assert deleted.data["deleteAgentMemory"]["record"]["status"] == "DELETED"


async def _use_id(api: Api, execution: str) -> str:
    """The first output use of an execution, as its table holds it."""
    from sqlalchemy import text

    async with api.database.session() as db:
        found = await db.scalar(
            text("SELECT id FROM output_uses WHERE execution_id = :e ORDER BY rank LIMIT 1"),
            {"e": execution},
        )
    assert found is not None
    return str(found)
