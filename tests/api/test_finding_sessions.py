"""Finding a session as an operator does: by the runtime's own id for it, by when it ran and
how it went, and by what was said in it, across a namespace (R62's ranking, R70, R71)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.api.history_scenario import HistoryScenario, agent, history_config, user
from tests.api.scenario import CREATE_AGENT
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

CREATE = """mutation($a: ID!, $x: String) {
  createSession(input: {agentId: $a, externalId: $x}) { session { id externalId } } }"""
BY_EXTERNAL = """query($a: ID!, $x: String!) {
  agent(id: $a) { session(externalId: $x) { id externalId } } }"""
FILTERED = """query($a: ID!, $f: SessionFilter) {
  agent(id: $a) { sessions(first: 20, filter: $f) { totalCount edges { node { id } } } } }"""
ACROSS = """query($ns: String!, $q: String!, $a: ID, $f: SessionFilter, $limit: Int) {
  searchSessionHistory(namespace: $ns, query: $q, agentId: $a, filter: $f, limit: $limit) {
    sessionsSearched moreSessions
    hits { score header text part parts preview
           session { id externalId } turn { id number } event { id turnNumber } }
  } }"""


async def _session(api: Api, agent_id: str, external: str | None = None) -> str:
    data = await api.ok(CREATE, a=agent_id, x=external)
    return str(data["createSession"]["session"]["id"])


async def test_a_session_is_found_by_the_runtimes_own_id(api: Api) -> None:
    s = HistoryScenario(api)
    first = await s.agent(history_config())
    ticket = await _session(api, first, "ticket-4711")
    found = (await api.ok(BY_EXTERNAL, a=first, x="ticket-4711"))["agent"]["session"]
    assert found == {"id": ticket, "externalId": "ticket-4711"}
    assert (await api.ok(BY_EXTERNAL, a=first, x="ticket-0000"))["agent"]["session"] is None
    # unique per agent: a second one is refused, another agent may use the same id
    message, extensions = await api.error(CREATE, a=first, x="ticket-4711")
    assert extensions["code"] == "CONFLICT" and "ticket-4711" in message
    other = await HistoryScenario(api).agent(history_config())
    elsewhere = await _session(api, other, "ticket-4711")
    assert (await api.ok(BY_EXTERNAL, a=other, x="ticket-4711"))["agent"]["session"]["id"] == (
        elsewhere
    )


async def test_finding_by_the_runtimes_id_needs_the_session_grant(api: Api) -> None:
    s = HistoryScenario(api)
    namespace = f"ns{uuid.uuid4().hex[:10]}"
    agent_id = await s.agent(history_config(), namespace=namespace)
    await _session(api, agent_id, "chat-1")
    agents_only = await bearer(api, kind="client", grants=(("SELECT", f"{namespace}.Agent"),))
    refused = await run_as(api, agents_only, BY_EXTERNAL, a=agent_id, x="chat-1")
    assert codes(refused) == ["FORBIDDEN"] and refused.data["agent"]["session"] is None
    assert f"SELECT {namespace}.Session" in refused.errors[0].message


async def test_sessions_are_filtered_by_time_failed_turns_and_preview(api: Api) -> None:
    s = HistoryScenario(api)
    agent_id = await s.agent(history_config())
    calm = await s.session()
    await s.commit(await s.turn(calm))
    failed = await s.session()
    turn = await s.turn(failed)
    await api.ok(
        'mutation($t: ID!) { failTurn(input: {turnId: $t, error: "x"}) { turn { id } } }', t=turn
    )
    rolled = await s.session()
    await s.rollback(await s.turn(rolled))
    preview = await s.session()
    await s.commit(await s.turn(preview, preview=True))

    async def ids(**f: Any) -> list[str]:
        page = (await api.ok(FILTERED, a=agent_id, f=f))["agent"]["sessions"]
        assert page["totalCount"] == len(page["edges"])
        return [e["node"]["id"] for e in page["edges"]]

    assert await ids() == [preview, rolled, failed, calm]
    assert await ids(hasFailedTurns=True) == [rolled, failed]
    assert await ids(hasFailedTurns=False) == [preview, calm]
    assert await ids(preview=True) == [preview]
    assert await ids(preview=False, hasFailedTurns=False) == [calm]
    now = datetime.now(UTC)
    assert await ids(startedAfter=(now + timedelta(minutes=1)).isoformat()) == []
    assert await ids(startedBefore=(now + timedelta(minutes=1)).isoformat()) == [
        preview,
        rolled,
        failed,
        calm,
    ]
    assert await ids(startedBefore=(now - timedelta(days=1)).isoformat()) == []


async def _world(api: Api) -> tuple[HistoryScenario, str, dict[str, str]]:
    """Two agents of one namespace, three sessions that kept history about different
    customers; the namespace."""
    namespace = f"ns{uuid.uuid4().hex[:10]}"
    s = HistoryScenario(api)
    config = history_config(tools=["add_memory"])
    await s.agent(config, namespace=namespace)
    sessions: dict[str, str] = {}
    sessions["refund"] = await _session(api, s.agent_id, "ticket-refund")
    await s.committed_turn(
        sessions["refund"],
        user("Customer Alvarez wants a refund for the broken espresso machine."),
        agent("I have opened the refund for the espresso machine."),
    )
    await s.committed_turn(sessions["refund"], user("Thanks, and when does it arrive?"))
    sessions["address"] = await _session(api, s.agent_id, "ticket-address")
    await s.committed_turn(
        sessions["address"],
        user("Please change my delivery address to Rua Augusta 12, Lisbon."),
        agent(
            "Changed, and noted.",
            ("c1", "add_memory", {"summary": "Lives at Rua Augusta 12"}),
        ),
    )
    other = HistoryScenario(api)
    created = await api.ok(CREATE_AGENT, ns=namespace, name="other", sessionless=False)
    other.agent_id = created["createAgent"]["agent"]["id"]
    await other.publish(config)
    sessions["weather"] = await _session(api, other.agent_id, "chat-weather")
    await other.committed_turn(
        sessions["weather"], user("Will it rain in Porto tomorrow afternoon?")
    )
    return s, namespace, sessions


async def test_a_search_across_a_namespace_finds_the_session_and_its_turn(api: Api) -> None:
    s, namespace, sessions = await _world(api)
    found = (await api.ok(ACROSS, ns=namespace, q="refund for the espresso machine"))[
        "searchSessionHistory"
    ]
    assert found["sessionsSearched"] == 3 and found["moreSessions"] is False
    best = found["hits"][0]
    assert best["session"] == {"id": sessions["refund"], "externalId": "ticket-refund"}
    assert best["turn"]["number"] == 1 and best["header"].startswith("turn 1, ")
    assert "refund for the espresso machine" in best["text"]
    assert best["event"]["turnNumber"] == 1 and not best["preview"]
    scores = [h["score"] for h in found["hits"]]
    assert scores == sorted(scores, reverse=True)

    # one agent's sessions only; a filter of sessions
    weather = (await api.ok(ACROSS, ns=namespace, q="rain in Porto", a=s.agent_id))[
        "searchSessionHistory"
    ]
    assert weather["sessionsSearched"] == 2
    assert sessions["weather"] not in {h["session"]["id"] for h in weather["hits"]}
    later = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    none = (await api.ok(ACROSS, ns=namespace, q="refund", f={"startedAfter": later}))[
        "searchSessionHistory"
    ]
    assert none == {"sessionsSearched": 0, "moreSessions": False, "hits": []}


async def test_within_one_session_it_ranks_as_search_history_does(api: Api) -> None:
    s, namespace, sessions = await _world(api)
    turn = await s.turn(sessions["refund"])
    query = "when does the espresso machine arrive"
    own = [(r["turn"], r["text"]) for r in await s.results(turn, query, limit=10)]
    across = (await api.ok(ACROSS, ns=namespace, q=query, a=s.agent_id, limit=50))[
        "searchSessionHistory"
    ]["hits"]
    mine = [
        (h["turn"]["number"], f"{h['header']}\n{h['text']}")
        for h in across
        if h["session"]["id"] == sessions["refund"]
    ]
    assert mine == own


async def test_a_reader_searches_only_what_its_grants_read(api: Api) -> None:
    _, namespace, _ = await _world(api)
    agents_only = await bearer(api, kind="client", grants=(("SELECT", f"{namespace}.Agent"),))
    refused = await run_as(api, agents_only, ACROSS, ns=namespace, q="address")
    assert codes(refused) == ["FORBIDDEN"]
    assert f"SELECT {namespace}.Session" in refused.errors[0].message
    # the sessions but not the memory: the memory call's arguments are masked (R71)
    sessions_only = await bearer(
        api,
        kind="client",
        grants=(("SELECT", f"{namespace}.Agent"), ("SELECT", f"{namespace}.Session")),
    )
    found = await run_as(api, sessions_only, ACROSS, ns=namespace, q="delivery address Augusta")
    assert found.errors is None
    texts = [h["text"] for h in found.data["searchSessionHistory"]["hits"]]
    reply = next(t for t in texts if "Changed, and noted." in t)
    assert "calls add_memory(" in reply and "Lives at Rua Augusta" not in reply
    assert any("Rua Augusta 12, Lisbon" in t for t in texts)  # the user's own words stay
