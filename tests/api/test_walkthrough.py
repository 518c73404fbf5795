"""The README's walkthrough, through the schema."""

from __future__ import annotations

from tests.api.history_scenario import agent, user
from tests.api.review_scenario import ReviewScenario, decide
from tests.api.scenario import DELETE, memory_config
from tests.conftest import Api


async def test_walkthrough(api: Api) -> None:
    s = ReviewScenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"], pinned=200))
    session = await s.session()
    turn = await s.turn(session)
    first = await s.add_id(turn, "The customer prefers email", kind="fact", pinned=True)
    second = await s.add(turn, "The customer prefers phone calls", replaces=first, scope="AGENT")
    assert [m["status"] for m in second["memories"]] == ["ACTIVE", "SUPERSEDED"]
    read = await s.read(turn, first)
    assert isinstance(read, dict) and read["sources"][0]["status"] == "SUPERSEDED"
    deleted = await api.ok(DELETE, turn=turn, id=second["memories"][0]["recordId"])
    assert deleted["deleteMemory"]["memories"][0]["status"] == "DELETED"
    # the turn-end review, with fixed decisions: a restated fact is skipped (R50)
    await s.record(turn, user("Call me, please. I bank at the Baixa branch."), agent("Noted."))
    reviewed = await s.reviewed(
        turn,
        decide("ADD", "Banks at the Baixa branch", kind="fact"),
        decide("ADD", "banks at the Baixa branch.", kind="fact"),
    )
    assert [d["applied"] for d in reviewed["decisions"]] == ["ADD", "SKIP"]
    await s.commit(turn)
    nxt = await s.begin(session)
    assert nxt["pinned"] == []
