"""An agent's memory as it stood at a turn or a time (``memoryRecords(asOf:)``): the
records that existed then, each as its version in force then, seen by the turn's reader
(R10-R13) or the listing's, under the listing's grants (R70, R71) and, for a turn, the
session's."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from server.domain.as_of import VersionFacts, version_at
from tests.api.scenario import DELETE, Scenario, memory_config
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

AS_OF = """
query($id: ID!, $asOf: MemoryAsOf, $filter: MemoryRecordFilter, $first: Int! = 50,
      $after: String) {
  agent(id: $id) {
    memoryRecords(first: $first, after: $after, asOf: $asOf, filter: $filter) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node {
        id status preview
        current { number summary status }
        versions { number status }
        versionsConnection(first: 10) { totalCount edges { node { number } } }
        replacedBy { id }
      } }
    }
  }
}"""
NOW = """
query($id: ID!) {
  agent(id: $id) { memoryRecords(first: 50) { edges { node { id status current { number } } } } }
}"""


@dataclass
class History:
    """One agent's memory over time (session a, unless said):

    1. turn 1 adds ``email`` (session scope) and ``rule`` (agent scope); committed, then
       ``t1`` is read;
    2. turn 2 replaces ``email`` by ``phone``;
    3. turn 1 of session b adds ``other`` (session b's);
    4. turn 3 deletes ``rule``;
    5. a preview turn deletes ``phone`` (a preview record, ``shadow``);
    6. ``live`` and ``preview`` turns begin after it; ``live`` stages ``staged``."""

    s: Scenario
    ns: str
    t1: str
    turns: dict[str, str]
    ids: dict[str, str]


@pytest.fixture
async def history(api: Api) -> History:
    s = Scenario(api)
    ns = f"ns{uuid.uuid4().hex[:10]}"
    scopes = ["session", "agent"]
    await s.agent(memory_config(read=scopes, write=scopes), namespace=ns)
    a, b = await s.session(), await s.session()
    turns: dict[str, str] = {}
    ids: dict[str, str] = {}
    turns["one"] = await s.turn(a)
    ids["email"] = await s.add_id(turns["one"], "Prefers email")
    ids["rule"] = await s.add_id(turns["one"], "Confirm identity first", scope="AGENT")
    await s.commit(turns["one"])
    t1 = datetime.now(UTC).isoformat()
    turns["two"] = await s.turn(a)
    ids["phone"] = await s.add_id(turns["two"], "Prefers phone", replaces=ids["email"])
    await s.commit(turns["two"])
    turns["b"] = await s.turn(b)
    ids["other"] = await s.add_id(turns["b"], "Lives in Porto")
    await s.commit(turns["b"])
    turns["three"] = await s.turn(a)
    await api.ok(DELETE, turn=turns["three"], id=ids["rule"])
    await s.commit(turns["three"])
    turns["shadowing"] = await s.turn(a, preview=True)
    deleted = await api.ok(DELETE, turn=turns["shadowing"], id=ids["phone"])
    ids["shadow"] = deleted["deleteMemory"]["memories"][0]["recordId"]
    await s.commit(turns["shadowing"])
    turns["live"] = await s.turn(a)
    ids["staged"] = await s.add_id(turns["live"], "Staged, never committed here")
    turns["preview"] = await s.turn(a, preview=True)
    return History(s, ns, t1, turns, ids)


async def _as_of(api: Api, agent: str, **as_of: Any) -> dict[str, Any]:
    data = await api.ok(AS_OF, id=agent, asOf=as_of)
    return dict(data["agent"]["memoryRecords"])


def _standing(page: dict[str, Any], ids: dict[str, str]) -> dict[str, str]:
    """name: status of each record listed."""
    names = {v: k for k, v in ids.items()}
    return {names[e["node"]["id"]]: e["node"]["status"] for e in page["edges"]}


async def test_at_a_time_the_records_that_existed_each_as_its_version_then(
    api: Api, history: History
) -> None:
    """R12, R25: before turn 2 committed, ``email`` was ACTIVE at its first version, not
    yet replaced; ``phone`` did not exist."""
    page = await _as_of(api, history.s.agent_id, time=history.t1)
    assert _standing(page, history.ids) == {"email": "ACTIVE", "rule": "ACTIVE"}
    assert page["totalCount"] == 2
    email = next(e["node"] for e in page["edges"] if e["node"]["id"] == history.ids["email"])
    assert email["current"] == {"number": 1, "summary": "Prefers email", "status": "ACTIVE"}
    assert email["versions"] == [{"number": 1, "status": "ACTIVE"}]
    assert email["versionsConnection"]["totalCount"] == 1
    assert email["replacedBy"] is None


async def test_now_it_is_the_listing(api: Api, history: History) -> None:
    """At the present the records and statuses are the listing's: committed records only
    (``staged`` is not), preview ones too."""
    now = datetime.now(UTC).isoformat()
    page = await _as_of(api, history.s.agent_id, time=now)
    listing = (await api.ok(NOW, id=history.s.agent_id))["agent"]["memoryRecords"]
    assert [(e["node"]["id"], e["node"]["status"]) for e in page["edges"]] == [
        (e["node"]["id"], e["node"]["status"]) for e in listing["edges"]
    ]
    assert _standing(page, history.ids) == {
        "shadow": "DELETED",
        "other": "ACTIVE",
        "phone": "ACTIVE",
        "email": "SUPERSEDED",
        "rule": "DELETED",
    }


async def test_at_a_turn_what_that_turn_could_see_when_it_began(api: Api, history: History) -> None:
    """The turn's reader at its beginning: its session's records and agent ones (R11),
    no preview record for a live turn, a preview turn not seeing what a preview record
    replaces (R13); nothing staged (R12)."""
    agent, ids, turns = history.s.agent_id, history.ids, history.turns
    assert _standing(await _as_of(api, agent, turnId=turns["two"]), ids) == {
        "email": "ACTIVE",
        "rule": "ACTIVE",
    }
    three = await _as_of(api, agent, turnId=turns["three"])
    assert _standing(three, ids) == {"phone": "ACTIVE", "email": "SUPERSEDED", "rule": "ACTIVE"}
    email = next(e["node"] for e in three["edges"] if e["node"]["id"] == ids["email"])
    assert email["replacedBy"] == {"id": ids["phone"]}
    assert [v["number"] for v in email["versions"]] == [1, 2]
    assert _standing(await _as_of(api, agent, turnId=turns["live"]), ids) == {
        "phone": "ACTIVE",
        "email": "SUPERSEDED",
        "rule": "DELETED",
    }
    assert _standing(await _as_of(api, agent, turnId=turns["preview"]), ids) == {
        "shadow": "DELETED",
        "email": "SUPERSEDED",
        "rule": "DELETED",
    }
    # session b's first turn sees the agent's records, none of session a's
    assert _standing(await _as_of(api, agent, turnId=turns["b"]), ids) == {"rule": "ACTIVE"}


async def test_filters_and_pages_apply_to_the_versions_then(api: Api, history: History) -> None:
    agent, ids = history.s.agent_id, history.ids
    superseded = await api.ok(
        AS_OF, id=agent, asOf={"turnId": history.turns["live"]}, filter={"status": "SUPERSEDED"}
    )
    assert _standing(superseded["agent"]["memoryRecords"], ids) == {"email": "SUPERSEDED"}
    first = await api.ok(AS_OF, id=agent, asOf={"turnId": history.turns["live"]}, first=2)
    page = first["agent"]["memoryRecords"]
    assert page["totalCount"] == 3 and page["pageInfo"]["hasNextPage"]
    rest = await api.ok(
        AS_OF,
        id=agent,
        asOf={"turnId": history.turns["live"]},
        first=2,
        after=page["pageInfo"]["endCursor"],
    )
    names = _standing(page, ids) | _standing(rest["agent"]["memoryRecords"], ids)
    assert set(names) == {"phone", "email", "rule"}


@pytest.mark.parametrize(
    ("as_of", "field"),
    [
        ({}, "asOf"),
        ({"turnId": "T", "time": "2026-01-01T00:00:00+00:00"}, "asOf"),
        ({"time": "2026-01-01T00:00:00"}, "asOf.time"),
    ],
)
async def test_asking_for_no_moment_or_two_is_bad_input(
    api: Api, history: History, as_of: dict[str, str], field: str
) -> None:
    given = {k: history.turns["two"] if v == "T" else v for k, v in as_of.items()}
    message, extensions = await api.error(AS_OF, id=history.s.agent_id, asOf=given)
    assert extensions == {"code": "BAD_INPUT", "field": field}, message


async def test_a_turn_of_another_agent_or_none_is_not_found(api: Api, history: History) -> None:
    """An asOf turn must be the listed agent's: another agent's turn reads as no turn."""
    other = Scenario(api)
    await other.agent(memory_config())
    foreign = await other.turn(await other.session())
    for turn in (foreign, str(uuid.uuid4())):
        _, extensions = await api.error(AS_OF, id=history.s.agent_id, asOf={"turnId": turn})
        assert extensions == {"code": "NOT_FOUND", "field": "asOf.turnId"}


async def test_grants_memory_for_the_listing_and_the_session_for_a_turn(
    api: Api, history: History
) -> None:
    """R71: without the memory read grants, FORBIDDEN as the listing is; naming a turn
    needs SELECT on the sessions too, else the turn is as one of no agent (NOT_FOUND; R70:
    the agent itself needs none)."""
    ns, agent = history.ns, history.s.agent_id
    agents = ("SELECT", f"{ns}.Agent")
    memory = (
        agents,
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    at_turn = {"turnId": history.turns["two"]}
    at_time = {"time": history.t1}
    reader = await bearer(api, kind="client", grants=memory)
    allowed = await run_as(api, reader, AS_OF, id=agent, asOf=at_time)
    assert allowed.errors is None and allowed.data["agent"]["memoryRecords"]["totalCount"] == 2
    refused = await run_as(api, reader, AS_OF, id=agent, asOf=at_turn)
    assert codes(refused) == ["NOT_FOUND"]
    assert refused.errors[0].message == f"no turn {at_turn['turnId']} of this agent"
    both = await bearer(api, kind="client", grants=(*memory, ("SELECT", f"{ns}.Session")))
    assert (await run_as(api, both, AS_OF, id=agent, asOf=at_turn)).errors is None
    sessions = await bearer(api, kind="client", grants=(agents, ("SELECT", f"{ns}.Session")))
    assert codes(await run_as(api, sessions, AS_OF, id=agent, asOf=at_time)) == ["FORBIDDEN"]
    itself = await bearer(api, kind="runtime", agent_id=agent)
    assert (await run_as(api, itself, AS_OF, id=agent, asOf=at_turn)).errors is None


def test_the_reference_takes_the_newest_version_in_force() -> None:
    t = [datetime(2026, 1, d, tzinfo=UTC) for d in range(1, 5)]
    versions = [VersionFacts(1, t[0]), VersionFacts(2, t[2]), VersionFacts(3, None)]
    assert version_at(versions, t[0] - (t[1] - t[0])) is None
    assert version_at(versions, t[0]) == versions[0]
    assert version_at(versions, t[1]) == versions[0]
    assert version_at(versions, t[3]) == versions[1]  # the open turn's is not in force
