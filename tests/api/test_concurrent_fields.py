"""Sibling fields resolve concurrently and share the operation's one session: a document
whose root and nested fields all read the database at once still answers every field,
never with INTERNAL (server/session.py)."""

from __future__ import annotations

from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api


async def test_many_sibling_reads_of_one_session_all_answer(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    turn = await s.turn(session)
    record = await s.add_id(turn, "the user prefers tea")
    await s.commit(turn)
    ns = (await api.ok("query($id: ID!) { agent(id: $id) { namespace } }", id=agent))["agent"][
        "namespace"
    ]
    fields = []
    for i in range(12):
        fields.append(f'n{i}: agent(namespace: "{ns}", name: "agent") {{ id }}')
        fields.append(f'l{i}: agents(namespace: "{ns}", first: 5) {{ edges {{ node {{ id }} }} }}')
        fields.append(f'm{i}: turn(id: "{turn}") {{ memories {{ id }} }}')
        fields.append(f'r{i}: agentMemory(id: "{record}") {{ id current {{ summary }} }}')
    result = await api.execute("{ " + "\n".join(fields) + " }")
    assert result.errors is None, [(e.message, e.extensions) for e in result.errors or []]
    for i in range(12):
        assert result.data[f"n{i}"]["id"] == agent
        assert [e["node"]["id"] for e in result.data[f"l{i}"]["edges"]] == [agent]
        assert [m["id"] for m in result.data[f"m{i}"]["memories"]] == [record]
        assert result.data[f"r{i}"]["current"]["summary"] == "the user prefers tea"
