"""recall through the schema (R42-R44, R14, R23).

What a recall returns (records marked as memory), when it is recorded (not
when it found nothing, nor when it found exactly the versions an earlier
recall put before the same conversation), and what a recorded one writes.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select

from server.memory_search.recall import RECALL_NOTICE
from server.models import Execution, Invocation, OutputUse
from tests.api.scenario import HELPER, Scenario, memory_config, turn_view
from tests.conftest import Api

RECALL = """
mutation($turn: ID!, $work: String!, $execution: ID, $key: String) {
  recall(input: {turnId: $turn, query: $work, executionId: $execution, idempotencyKey: $key}) {
    kind notice text recorded
    execution { id name kind status input output parent { id } }
    repeatOf { id }
    results { score version { id recordId summary } record { id status } }
  }
}"""

NOTES = [
    "Maria is allergic to peanuts",
    "Maria's daughter starts school in September",
    "The team stand-up moved to 9:30 on Mondays",
]


def config(**search: Any) -> dict[str, Any]:
    cfg = memory_config(read=["session", "agent"], write=["session", "agent"])
    cfg["harness"]["memory"]["search"] = {"max_results": 2, "min_score": 0.35, **search}
    return cfg


async def agent_with_notes(api: Api, **search: Any) -> tuple[Scenario, str, list[str]]:
    s = Scenario(api)
    await s.agent(config(**search))
    session = await s.session()
    turn = await s.turn(session)
    ids = [await s.add_id(turn, note, scope="AGENT") for note in NOTES]
    await s.commit(turn)
    return s, session, ids


async def recall(api: Api, turn: str, work: str, **kw: Any) -> dict[str, Any]:
    return dict((await api.ok(RECALL, turn=turn, work=work, **kw))["recall"])


async def recall_runs(api: Api, turn: str) -> list[Execution]:
    async with api.database.session() as db:
        rows = await db.scalars(
            select(Execution)
            .where(Execution.turn_id == uuid.UUID(turn), Execution.name == "search_memory")  # type: ignore[arg-type]
            .order_by(Execution.created_at)
        )
        return list(rows.all())


async def embed_usage(api: Api, execution: str) -> list[tuple[str, int, bool]]:
    async with api.database.session() as db:
        rows = (
            await db.execute(
                select(Invocation.purpose, Invocation.input_tokens, Invocation.counted).where(
                    Invocation.execution_id == uuid.UUID(execution)  # type: ignore[arg-type]
                )
            )
        ).all()
    return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_r44_recalled_records_are_marked_as_memory(api: Api) -> None:
    """R42, R44: the best matches come back marked as memory: data, not instructions."""
    s, session, ids = await agent_with_notes(api)
    turn = await s.turn(session)
    got = await recall(api, turn, "User: can Maria eat the satay sauce? It has peanuts.")
    assert got["kind"] == "memory" and got["notice"] == RECALL_NOTICE
    assert got["results"][0]["version"]["summary"] == NOTES[0]
    assert got["results"][0]["record"]["id"] == ids[0]
    assert len(got["results"]) <= 2  # max_results
    text = got["text"]
    assert text.startswith("<memory>") and text.endswith("</memory>")
    assert RECALL_NOTICE in text and NOTES[0] in text and ids[0] in text
    assert got["execution"]["output"]["kind"] == "memory"
    assert got["execution"]["output"]["notice"] == RECALL_NOTICE


async def test_r42_r43_a_recall_is_recorded_as_search_memory_with_recall_true(api: Api) -> None:
    """R42, R43: a recall that finds records is a search_memory execution with recall: true,
    with a RETRIEVED use per returned version and an uncounted embed usage."""
    s, session, _ = await agent_with_notes(api)
    begun = await s.begin(session)
    turn, own = begun["turn"]["id"], begun["execution"]["id"]
    got = await recall(api, turn, "what does Maria's daughter do in September?")
    run = got["execution"]
    assert got["recorded"] is True and got["repeatOf"] is None
    assert (run["name"], run["kind"], run["status"]) == ("search_memory", "TOOL", "SUCCEEDED")
    assert run["input"]["recall"] is True and run["parent"]["id"] == own
    versions = [r["version"]["id"] for r in got["results"]]
    assert [o["version"] for o in run["output"]["records"]] == versions
    async with api.database.session() as db:
        uses = (
            await db.execute(
                select(OutputUse.memory_version_id, OutputUse.kind, OutputUse.rank)
                .where(OutputUse.execution_id == uuid.UUID(run["id"]))  # type: ignore[arg-type]
                .order_by(OutputUse.rank)
            )
        ).all()
    assert [(str(v), k, r) for v, k, r in uses] == [
        (v, "RETRIEVED", i) for i, v in enumerate(versions, 1)
    ]
    [(purpose, tokens, counted)] = await embed_usage(api, run["id"])
    assert purpose == "embed" and tokens > 0 and counted is False
    transcript = (await turn_view(api, turn))["transcript"]
    assert [e["type"] for e in transcript[-2:]] == ["USAGE", "TOOL_RESULT"]


async def test_r42_a_recall_that_finds_nothing_is_not_recorded(api: Api) -> None:
    """R42, R43: nothing found: no execution, nothing retrieved; the query's embedding is
    still usage (of the caller's execution), and no limit counts it."""
    s, session, _ = await agent_with_notes(api)
    begun = await s.begin(session)
    turn, own = begun["turn"]["id"], begun["execution"]["id"]
    got = await recall(api, turn, "quantum chromodynamics lattice simulations")
    assert got == {
        "kind": "memory",
        "notice": RECALL_NOTICE,
        "text": "",
        "recorded": False,
        "execution": None,
        "repeatOf": None,
        "results": [],
    }
    assert await recall_runs(api, turn) == []
    [(purpose, _, counted)] = await embed_usage(api, own)
    assert purpose == "embed" and counted is False


async def test_r42_the_same_versions_again_in_one_conversation_are_not_recorded(
    api: Api,
) -> None:
    """R42: a recall that finds exactly the versions an earlier recall of the same
    conversation put before it is not recorded (its repeatOf names that recall); a
    different set is recorded, and coming back to the first set is a repeat again."""
    s, session, _ = await agent_with_notes(api)
    turn = await s.turn(session)
    peanuts = "is Maria allergic to peanuts?"
    first = await recall(api, turn, peanuts)
    again = await recall(api, turn, "peanut allergy: Maria")
    assert {r["version"]["id"] for r in again["results"]} == {
        r["version"]["id"] for r in first["results"]
    }
    assert again["recorded"] is False and again["repeatOf"]["id"] == first["execution"]["id"]
    assert again["execution"] is None and again["text"] == first["text"]
    other = await recall(api, turn, "when does the team stand-up happen on Mondays?")
    assert other["recorded"] is True
    back = await recall(api, turn, peanuts)
    assert back["recorded"] is False and back["repeatOf"]["id"] == first["execution"]["id"]
    assert len(await recall_runs(api, turn)) == 2


async def test_r42_a_conversation_is_the_agents_run_or_one_helpers_run(api: Api) -> None:
    """R42: each conversation (the agent's run of the turn, each helper's run) has its own
    context, so a helper's first recall of versions the agent already has is recorded,
    and its own repeat is not; a later turn is a new conversation."""
    s, session, _ = await agent_with_notes(api)
    turn = await s.turn(session)
    work = "is Maria allergic to peanuts?"
    mine = await recall(api, turn, work)
    helper = (await api.ok(HELPER, turn=turn, kind="HELPER"))["startExecution"]["execution"]["id"]
    theirs = await recall(api, turn, work, execution=helper)
    assert theirs["recorded"] is True and theirs["execution"]["parent"]["id"] == helper
    repeat = await recall(api, turn, work, execution=helper)
    assert repeat["recorded"] is False
    assert repeat["repeatOf"]["id"] == theirs["execution"]["id"]
    program = (await api.ok(HELPER, turn=turn, kind="PROGRAM"))["startExecution"]["execution"]["id"]
    assert (await recall(api, turn, work, execution=program))["recorded"] is True
    assert (await recall(api, turn, work))["repeatOf"]["id"] == mine["execution"]["id"]
    await s.commit(turn)
    assert (await recall(api, await s.turn(session), work))["recorded"] is True


async def test_r42_a_changed_version_is_recorded_again(api: Api) -> None:
    """R42: the comparison is by record version: once a recalled record is replaced, the
    same question recalls a different version, and that recall is recorded."""
    s, session, ids = await agent_with_notes(api)
    turn = await s.turn(session)
    work = "is Maria allergic to peanuts?"
    first = await recall(api, turn, work)
    await s.add(
        turn, "Maria is allergic to peanuts and to tree nuts", scope="AGENT", replaces=ids[0]
    )
    second = await recall(api, turn, work)
    assert second["recorded"] is True
    assert second["results"][0]["version"]["summary"] != first["results"][0]["version"]["summary"]
    assert ids[0] not in {r["record"]["id"] for r in second["results"]}  # R14: superseded


async def test_r10_r13_recall_sees_only_what_the_reader_may(api: Api) -> None:
    """R10, R13, R14: recall goes through the same gate: another agent's records, preview
    records (in a live turn) and deleted ones are never recalled."""
    s, session, ids = await agent_with_notes(api)
    other = Scenario(api)
    await other.agent(config())
    await other.committed("Maria is allergic to shellfish", await other.session(), scope="AGENT")
    preview = await s.turn(session, preview=True)
    await s.add_id(preview, "Maria is allergic to peanut butter cookies", scope="AGENT")
    await s.commit(preview)
    got = await recall(api, await s.turn(session), "what is Maria allergic to?")
    assert {r["version"]["summary"] for r in got["results"]} <= set(NOTES)
    assert got["results"][0]["record"]["id"] == ids[0]
    in_preview = await recall(api, await s.turn(session, preview=True), "Maria peanut butter")
    assert "Maria is allergic to peanut butter cookies" in in_preview["text"]


async def test_r1_r24_recall_refusals_change_nothing(api: Api) -> None:
    """R1, R24: memory disabled, a blank or oversized query, an execution of another turn:
    typed errors, and nothing recorded."""
    s, session, _ = await agent_with_notes(api)
    turn = await s.turn(session)
    for work, code in (("  ", "BAD_INPUT"), ("x" * 20_001, "BAD_INPUT")):
        _, ext = await api.error(RECALL, turn=turn, work=work)
        assert ext["code"] == code and ext["field"] == "query"
    _, ext = await api.error(RECALL, turn=turn, work="peanuts", execution=str(uuid.uuid4()))
    assert ext["code"] == "NOT_FOUND"
    view = await turn_view(api, turn)
    assert [e["name"] for e in view["executions"]] == ["turn"]
    assert view["executions"][0]["invocations"] == []
    await s.publish(memory_config(enabled=False))
    message, ext = await api.error(RECALL, turn=await s.turn(session), work="peanuts")
    assert ext["code"] == "NOT_ALLOWED" and "enabled" in message


async def test_r42_idempotency_key_replays_the_first_answer(api: Api) -> None:
    """A retried recall with the same key returns the first answer and records nothing."""
    s, session, _ = await agent_with_notes(api)
    turn = await s.turn(session)
    key = f"recall-{uuid.uuid4()}"
    first = await recall(api, turn, "Maria peanuts", key=key)
    again = await recall(api, turn, "Maria peanuts", key=key)
    assert again == first and first["recorded"] is True
    async with api.database.session() as db:
        count = await db.scalar(
            select(func.count())
            .select_from(Execution)
            .where(
                Execution.turn_id == uuid.UUID(turn),
                Execution.name == "search_memory",  # type: ignore[arg-type]
            )
        )
    assert count == 1
