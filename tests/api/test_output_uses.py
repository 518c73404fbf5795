"""Execution.uses: the RETRIEVED output uses through the API (R43, R63, R70, R71).

After a recorded recall, a memory search and a history search, each execution's uses
list exactly what its output put before the model, in its order: record versions for
the memory tools, parts of kept events for search_history. Memory uses are memory
(the read grant, R71), history uses the session's; a list of executions reads them in
a bounded number of statements."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.api.history_scenario import HistoryScenario, agent, history_config, user
from tests.api.test_recall import RECALL
from tests.api.test_search import SEARCH
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api

USES = """
query($t: ID!) {
  turn(id: $t) {
    executions {
      id name
      uses {
        kind rank
        memoryVersion { id summary record { id } }
        historyPart { id part text }
        historyEvent { id text }
      }
    }
  }
}"""
NOTES = [
    "Maria is allergic to peanuts",
    "Maria's daughter starts school in September",
    "The team stand-up moved to 9:30 on Mondays",
]


async def _world(api: Api) -> dict[str, Any]:
    ns = f"use{uuid.uuid4().hex[:8]}"
    s = HistoryScenario(api)
    config = history_config(read=["session", "agent"], write=["session", "agent"])
    config["harness"]["memory"]["search"] = {"max_results": 2, "min_score": 0.2}
    agent_id = await s.agent(config, namespace=ns)
    session = await s.session()
    first = await s.turn(session)
    for note in NOTES:
        await s.add(first, note, scope="AGENT")
    await s.record(
        first,
        user("Plan the school lunch for Maria's daughter"),
        agent("Packing a peanut-free lunch for the school trip."),
    )
    await s.commit(first)
    turn = await s.turn(session)
    recall = (await api.ok(RECALL, turn=turn, work="what is Maria allergic to"))["recall"]
    search = (await api.ok(SEARCH, turn=turn, q="when does school start"))["searchMemory"]
    history = await s.search(turn, "school lunch")
    assert recall["recorded"] and search["results"] and history["results"]
    return {
        "ns": ns,
        "agent": agent_id,
        "turn": turn,
        "recall": recall,
        "search": search,
        "history": history,
    }


@pytest.fixture(scope="module")
async def world(api: Api) -> dict[str, Any]:
    return await _world(api)


def _by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in data["turn"]["executions"]}


async def test_uses_list_what_each_execution_put_before_the_model(
    api: Api, world: dict[str, Any]
) -> None:
    ns = world["ns"]
    grants = (
        ("SELECT", f"{ns}.Session"),
        ("SELECT", f"{ns}.AgentMemory.indexes.*"),
        ("SELECT", f"{ns}.AgentMemory.document"),
    )
    client = await bearer(api, kind="client", grants=grants)
    read = await run_as(api, client, USES, t=world["turn"])
    assert read.errors is None, read.errors
    executions = _by_id(read.data)
    assert executions == _by_id(await api.ok(USES, t=world["turn"]))  # as the agent reads them

    for name in ("recall", "search"):
        called = world[name]
        uses = executions[called["execution"]["id"]]["uses"]
        versions = [r["version"] for r in called["results"]]
        assert [u["memoryVersion"]["id"] for u in uses] == [v["id"] for v in versions]
        assert [u["memoryVersion"]["summary"] for u in uses] == [v["summary"] for v in versions]
        assert [u["memoryVersion"]["record"]["id"] for u in uses] == [
            v["recordId"] for v in versions
        ]
        assert [u["rank"] for u in uses] == list(range(1, len(versions) + 1))
        assert all(u["kind"] == "RETRIEVED" and u["historyPart"] is None for u in uses)

    history = world["history"]
    uses = executions[history["execution"]["id"]]["uses"]
    assert [u["historyEvent"]["id"] for u in uses] == [r["eventId"] for r in history["results"]]
    assert [u["historyPart"]["part"] for u in uses] == [r["part"] or 1 for r in history["results"]]
    assert all(u["memoryVersion"] is None for u in uses)
    assert all(u["historyPart"]["text"] in u["historyEvent"]["text"] for u in uses)

    others = [
        e for e in executions.values() if e["name"] not in ("search_memory", "search_history")
    ]
    assert others and all(e["uses"] == [] for e in others)


async def test_without_the_memory_grant_memory_uses_are_forbidden(
    api: Api, world: dict[str, Any]
) -> None:
    """R71: a reader of the session without the memory grant reads the history uses, but
    not the memory ones: null, with FORBIDDEN."""
    token = await bearer(api, kind="client", grants=(("SELECT", f"{world['ns']}.Session"),))
    read = await run_as(api, token, USES, t=world["turn"])
    executions = _by_id(read.data)
    for name in ("recall", "search"):
        assert executions[world[name]["execution"]["id"]]["uses"] is None
    assert not any(note in str(read.data) for note in NOTES)
    forbidden = [e for e in read.errors or [] if e.path[-1] == "uses"]
    assert len(forbidden) == 2
    assert all(e.extensions["code"] == "FORBIDDEN" for e in forbidden)
    history = executions[world["history"]["execution"]["id"]]["uses"]
    assert [u["historyEvent"]["id"] for u in history] == [
        r["eventId"] for r in world["history"]["results"]
    ]


async def test_without_the_session_grant_no_use_is_read(api: Api, world: dict[str, Any]) -> None:
    """R70: the memory grant alone reads no turn (as one that does not exist), so no
    execution, and no history event through it."""
    ns = world["ns"]
    grants = (("SELECT", f"{ns}.AgentMemory.indexes.*"), ("SELECT", f"{ns}.AgentMemory.document"))
    token = await bearer(api, kind="client", grants=grants)
    read = await run_as(api, token, USES, t=world["turn"])
    assert read.data is None or read.data["turn"] is None
    assert read.errors and read.errors[0].extensions["code"] == "NOT_FOUND"


async def test_a_list_of_executions_reads_its_uses_in_bounded_statements(api: Api) -> None:
    """Dataloaders: three more searches in the turn cost no more statements."""
    world = await _world(api)
    counts = []
    for _ in range(2):
        with api.count_statements():
            data = await api.ok(USES, t=world["turn"])
        counts.append(api.statements)
        await api.ok(RECALL, turn=world["turn"], work="the team stand-up time")
        await api.ok(SEARCH, turn=world["turn"], q="peanuts")
        await HistoryScenario(api).search(world["turn"], "peanut-free lunch")
    assert len(data["turn"]["executions"]) >= 4
    assert counts[0] == counts[1], counts
    assert counts[0] <= 12, counts
