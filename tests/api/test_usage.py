"""What model calls used, took and cost, as a dashboard reads it: each call's latency and
tokens, totals of a turn, a session and an agent, costs from the server's price table, and
an agent's work day by day (server/domain/usage.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from server.domain.usage import Price
from tests.api.scenario import ADD, Scenario, memory_config
from tests.auth_helpers import bearer, codes, run_as
from tests.conftest import Api

PRICES = {"gpt-4o*": Price(input=2.5, output=10)}
INVOKE = """mutation($e: ID!, $model: String!, $i: Int!, $o: Int!, $ms: Int) {
  recordInvocation(input: {executionId: $e, purpose: TURN, model: $model, inputTokens: $i,
                           outputTokens: $o, latencyMs: $ms}) {
    invocation { id latencyMs cost createdAt } } }"""
USAGE = (
    "calls inputTokens outputTokens latencyMs cost unpricedCalls "
    "byModel { model calls inputTokens outputTokens latencyMs cost }"
)
TURN_USAGE = "query($id: ID!) { turn(id: $id) { usage { " + USAGE + " } } }"
SESSION_USAGE = "query($id: ID!) { session(id: $id) { usage { " + USAGE + " } } }"
AGENT_USAGE = (
    "query($id: ID!) { agent(id: $id) { usage { " + USAGE + " } "
    "activity(days: 3) { day turns calls inputTokens outputTokens } "
    "memoryActivity(days: 3) { day records } } }"
)
TURNS_USAGE = """query($id: ID!) { session(id: $id) {
  turns(first: 25) { edges { node { number usage { calls cost } } } } } }"""


@pytest.fixture
def priced(api: Api) -> Api:
    """The api with a server price table."""
    settings = api.settings.model_copy(update={"model_prices": PRICES})
    return dataclasses.replace(api, settings=settings)


async def _turn(s: Scenario, session: str) -> tuple[str, str]:
    begun = await s.begin(session)
    return begun["turn"]["id"], begun["execution"]["id"]


async def test_a_calls_latency_tokens_and_cost(priced: Api) -> None:
    s = Scenario(priced)
    await s.agent(memory_config())
    _, execution = await _turn(s, await s.session())
    call = (await priced.ok(INVOKE, e=execution, model="gpt-4o-2024-08-06", i=1000, o=200, ms=850))[
        "recordInvocation"
    ]["invocation"]
    assert call["latencyMs"] == 850
    assert call["cost"] == pytest.approx((1000 * 2.5 + 200 * 10) / 1e6)
    unknown = (await priced.ok(INVOKE, e=execution, model="llama-3", i=5, o=5))["recordInvocation"][
        "invocation"
    ]
    assert unknown["latencyMs"] is None and unknown["cost"] is None
    for bad in (-1, 86_400_001):
        message, extensions = await priced.error(INVOKE, e=execution, model="m", i=1, o=1, ms=bad)
        assert extensions == {"code": "BAD_INPUT", "field": "latencyMs"}, message


async def test_totals_of_a_turn_a_session_and_an_agent(priced: Api, api: Api) -> None:
    s = Scenario(priced)
    agent = await s.agent(memory_config())
    session = await s.session()
    first, execution = await _turn(s, session)
    await priced.ok(INVOKE, e=execution, model="gpt-4o", i=1000, o=100, ms=400)
    await priced.ok(INVOKE, e=execution, model="llama-3", i=300, o=30, ms=None)
    await priced.ok(ADD, turn=first, summary="Prefers tea")  # the server's embed: not counted
    await s.commit(first)
    second, execution = await _turn(s, session)
    await priced.ok(INVOKE, e=execution, model="gpt-4o", i=2000, o=200, ms=600)
    await s.rollback(second)  # a rolled-back turn's calls were made all the same

    turn = (await priced.ok(TURN_USAGE, id=first))["turn"]["usage"]
    assert (turn["calls"], turn["inputTokens"], turn["outputTokens"]) == (2, 1300, 130)
    assert turn["latencyMs"] == 400 and turn["unpricedCalls"] == 1
    assert turn["cost"] == pytest.approx((1000 * 2.5 + 100 * 10) / 1e6)
    assert [m["model"] for m in turn["byModel"]] == ["gpt-4o", "llama-3"]
    assert turn["byModel"][1]["latencyMs"] is None and turn["byModel"][1]["cost"] is None

    whole = (await priced.ok(SESSION_USAGE, id=session))["session"]["usage"]
    assert (whole["calls"], whole["inputTokens"], whole["outputTokens"]) == (3, 3300, 330)
    assert whole["latencyMs"] == 1000
    assert whole["cost"] == pytest.approx((3000 * 2.5 + 300 * 10) / 1e6)
    assert whole["byModel"][0] == {
        "model": "gpt-4o",
        "calls": 2,
        "inputTokens": 3000,
        "outputTokens": 300,
        "latencyMs": 1000,
        "cost": pytest.approx((3000 * 2.5 + 300 * 10) / 1e6),
    }

    data = (await priced.ok(AGENT_USAGE, id=agent))["agent"]
    assert data["usage"] == whole  # the agent's one session
    today = datetime.now(UTC).date().isoformat()
    assert [d["day"] for d in data["activity"]][-1] == today and len(data["activity"]) == 3
    assert data["activity"][-1] == {
        "day": today,
        "turns": 2,
        "calls": 3,
        "inputTokens": 3300,
        "outputTokens": 330,
    }
    assert data["activity"][0]["turns"] == 0
    assert data["memoryActivity"][-1] == {"day": today, "records": 1}
    # without a price table, no cost
    plain = (await api.ok(SESSION_USAGE, id=session))["session"]["usage"]
    assert plain["cost"] is None and plain["unpricedCalls"] == 3


async def test_every_turns_usage_costs_the_same_statements(priced: Api) -> None:
    s = Scenario(priced)
    await s.agent(memory_config())
    session = await s.session()

    async def statements() -> int:
        with priced.count_statements():
            page = (await priced.ok(TURNS_USAGE, id=session))["session"]["turns"]["edges"]
        assert all(e["node"]["usage"]["calls"] == 1 for e in page)
        return priced.statements

    for _ in range(2):
        turn, execution = await _turn(s, session)
        await priced.ok(INVOKE, e=execution, model="gpt-4o", i=10, o=1)
        await s.commit(turn)
    few = await statements()
    for _ in range(4):
        turn, execution = await _turn(s, session)
        await priced.ok(INVOKE, e=execution, model="gpt-4o", i=10, o=1)
        await s.commit(turn)
    assert await statements() == few


async def test_usage_needs_the_session_grant_and_days_are_bounded(api: Api) -> None:
    s = Scenario(api)
    namespace = f"ns{datetime.now(UTC).strftime('%H%M%S%f')}"
    agent = await s.agent(memory_config(), namespace=namespace)
    agents_only = await bearer(api, kind="client", grants=(("SELECT", f"{namespace}.Agent"),))
    refused = await run_as(
        api, agents_only, "query($id: ID!) { agent(id: $id) { usage { calls } } }", id=agent
    )
    assert codes(refused) == ["FORBIDDEN"]
    message, extensions = await api.error(
        "query($id: ID!) { agent(id: $id) { activity(days: 0) { day } } }", id=agent
    )
    assert extensions == {"code": "BAD_INPUT", "field": "days"}, message
