"""Refusals look like absence (docs/security.md, "Refusals look like absence"; R10, R12,
R70, R71): an id the caller may not read is answered exactly as an id that names nothing
(the same code, the same message), and no error names an id the caller did not send.
tests/api/test_ownership.py checks every id place of the schema so; these are the cases
as they were reported, with real tokens."""

from __future__ import annotations

import uuid
from typing import Any

from tests.api.history_scenario import user
from tests.api.ownership_cases import answer, unsent_ids
from tests.api.review_scenario import BEGIN_REVIEW, ReviewScenario
from tests.api.scenario import memory_config
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api

_BEGIN = """mutation($session: ID!) {
  beginTurn(input: {sessionId: $session}) { turn { id } } }"""
_READ = """mutation($turn: ID!, $id: ID!) {
  readMemory(input: {turnId: $turn, id: $id}) { sources { id } } }"""
_EXECUTIONS = "query($turn: ID!) { turn(id: $turn) { executions { id name status } } }"
_REVIEW = """query($id: ID!) { node(id: $id) { ... on MemoryReview { id status %s } } }"""


async def _agent(api: Api) -> tuple[ReviewScenario, str, str]:
    """An agent of a namespace of its own with a committed record, and an open turn."""
    s = ReviewScenario(api)
    ns = f"abs{uuid.uuid4().hex[:8]}"
    await s.agent(memory_config(), namespace=ns)
    session = await s.session()
    await s.committed("The customer prefers email", session)
    return s, ns, session


async def _both(api: Api, token: str, query: str, place: str, foreign: str, **given: Any) -> None:
    """``query`` with ``foreign`` and with an unknown id at ``place``: the same answer,
    naming only the ids sent."""
    unknown = str(uuid.uuid4())
    refused = await run_as(api, token, query, **{**given, place: foreign})
    none = await run_as(api, token, query, **{**given, place: unknown})
    assert refused.errors and (refused.errors[0].extensions or {}).get("code") == "NOT_FOUND"
    assert answer(refused, foreign) == answer(none, unknown)
    assert not unsent_ids(refused, {**given, place: foreign}), refused.errors


async def test_another_agents_session_is_not_told_whose_it_is(api: Api) -> None:
    """beginTurn with a session of another agent: answered as an unknown session, never
    "this runtime token does not act for agent <its owner>"."""
    _, _, theirs = await _agent(api)
    mine, _, _ = await _agent(api)
    token = await bearer(api, kind="runtime", agent_id=mine.agent_id)
    await _both(api, token, _BEGIN, "session", theirs)


async def test_a_grantless_reader_cannot_tell_an_object_from_none(api: Api) -> None:
    """A client without a grant reading another namespace's agent, session and record by
    id: each answered as an unknown id (not FORBIDDEN naming the namespace)."""
    s, _, session = await _agent(api)
    record = await s.committed("The customer lives in Porto", session)
    token = await bearer(api, kind="client")
    for query, id_ in (
        ("query($id: ID!) { agent(id: $id) { id } }", s.agent_id),
        ("query($id: ID!) { session(id: $id) { id } }", session),
        ("query($id: ID!) { agentMemory(id: $id) { id } }", record),
        ("query($id: ID!) { node(id: $id) { id } }", record),
        (
            'query($id: ID!) { searchAgentMemory(agentId: $id, query: "x") { __typename } }',
            s.agent_id,
        ),
    ):
        await _both(api, token, query, "id", id_)


async def test_an_id_of_the_wrong_kind_is_refused_as_another_owners_is(api: Api) -> None:
    """readMemory naming a turn (an id of the wrong kind), another agent's record, or
    nothing: the same answer, and none of them records an execution in the turn."""
    s, _, session = await _agent(api)
    other, _, other_session = await _agent(api)
    theirs = await other.committed("Their customer", other_session)
    turn = await s.turn(session)
    token = await bearer(api, kind="runtime", agent_id=s.agent_id)
    before = await api.ok(_EXECUTIONS, turn=turn)
    for foreign in (turn, theirs):
        await _both(api, token, _READ, "id", foreign, turn=turn)
    assert await api.ok(_EXECUTIONS, turn=turn) == before


async def test_a_review_is_read_with_the_grants_of_its_session_and_memory(api: Api) -> None:
    """A memory review reads its session's conversation and its execution is the
    session's: a reader with the memory grants but not the session's reads no review,
    answered as an unknown id whatever it selects (never a review whose execution it may
    not read); a reader with both reads it whole."""
    s, ns, session = await _agent(api)
    turn = await s.turn(session)
    await s.record(turn, user("I moved to the premium plan"))
    review = (await api.ok(BEGIN_REVIEW, turn=turn))["beginMemoryReview"]["review"]
    memory_only = await bearer(
        api,
        kind="client",
        grants=(
            ("SELECT", f"{ns}.Agent"),
            ("SELECT", f"{ns}.AgentMemory.indexes.*"),
            ("SELECT", f"{ns}.AgentMemory.document"),
        ),
    )
    for shown in ("", "execution { id }"):
        await _both(api, memory_only, _REVIEW % shown, "id", review["id"])
    both = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.*"),))
    read = await run_as(api, both, _REVIEW % "execution { id }", id=review["id"])
    assert read.errors is None, read.errors
    assert read.data["node"]["execution"]["id"] == review["execution"]["id"]
