"""Input fields with a default are nullable: an explicit null is the default, applied by
the server, and a replay that spells the default differently is the same request."""

from __future__ import annotations

import uuid

from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api

CREATE = """
mutation($ns: String!) {
  createAgent(input: {namespace: $ns, name: "agent", sessionless: null}) {
    agent { id sessionless }
  }
}"""
BEGIN = """
mutation($session: ID!, $preview: Boolean, $key: String) {
  beginTurn(input: {sessionId: $session, preview: $preview, idempotencyKey: $key}) {
    turn { id preview } execution { id }
  }
}"""
ADD = """
mutation($turn: ID!) {
  addMemory(input: {turnId: $turn, summary: "The customer prefers email", pinned: null}) {
    memories { record { pinned } }
  }
}"""
INVOKE = """
mutation($execution: ID!) {
  recordInvocation(input: {executionId: $execution, purpose: TURN, model: "m",
                           inputTokens: null, outputTokens: null}) {
    invocation { inputTokens outputTokens }
  }
}"""


async def test_null_is_the_default(api: Api) -> None:
    created = (await api.ok(CREATE, ns=f"ns{uuid.uuid4().hex[:10]}"))["createAgent"]["agent"]
    assert created["sessionless"] is False

    s = Scenario(api)
    await s.agent(memory_config(pinned=2000), sessionless=False)
    session = await s.session()
    begun = (await api.ok(BEGIN, session=session, preview=None))["beginTurn"]
    assert begun["turn"]["preview"] is False
    added = (await api.ok(ADD, turn=begun["turn"]["id"]))["addMemory"]
    assert added["memories"][0]["record"]["pinned"] is False
    invoked = await api.ok(INVOKE, execution=begun["execution"]["id"])
    call = invoked["recordInvocation"]["invocation"]
    assert call == {"inputTokens": 0, "outputTokens": 0}


async def test_a_replay_may_spell_the_default_as_null(api: Api) -> None:
    s = Scenario(api)
    await s.agent(memory_config(), sessionless=False)
    session = await s.session()
    first = (await api.ok(BEGIN, session=session, preview=False, key="k"))["beginTurn"]
    again = (await api.ok(BEGIN, session=session, preview=None, key="k"))["beginTurn"]
    assert again["turn"]["id"] == first["turn"]["id"]
