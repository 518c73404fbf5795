"""Idempotency keys on runtime mutations: the same key and input return the first
result and write nothing more; the same key with other input is a CONFLICT; a call
that fails stores no key, so it can be fixed and retried with the same key."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.orm import Session

from resolvers.context import make_context
from tests.api.scenario import ADD, BEGIN, Scenario, memory_config
from tests.auth_helpers import full_caller
from tests.conftest import Api

COMMIT_KEYED = """
mutation($turn: ID!, $key: String) {
  commitTurn(input: {turnId: $turn, idempotencyKey: $key}) { turn { id status } }
}"""
DELETE_KEYED = """
mutation($turn: ID!, $id: ID!, $key: String) {
  deleteMemory(input: {turnId: $turn, id: $id, idempotencyKey: $key}) {
    execution { id name }
    memories { id recordId status }
  }
}"""


def _key() -> str:
    return f"key-{uuid.uuid4().hex}"


async def _count(api: Api, sql: str, **params: Any) -> int:
    async with api.database.session() as db:
        return int(await db.scalar(text(sql), params) or 0)


async def _rows(api: Api, agent: str) -> dict[str, int]:
    """Every row the agent owns, by table: a replay must not add any."""
    tables = ("turns", "executions", "transcript_events", "memory_records", "memory_versions")
    return {
        t: await _count(api, f"SELECT count(*) FROM {t} WHERE agent_id = :a", a=agent)
        for t in tables
    }


async def _stored_keys(api: Api, key: str) -> int:
    return await _count(api, "SELECT count(*) FROM idempotency_keys WHERE key = :k", k=key)


async def _expect(api: Api, code: str, query: str, **variables: Any) -> str:
    message, ext = await api.error(query, **variables)
    assert ext.get("code") == code, (message, ext)
    return message


async def test_begin_turn_replays_the_first_turn(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config(pinned=200))
    session = await s.session()
    await s.committed("The customer prefers email", session, pinned=True)
    key = _key()
    first = (await api.ok(BEGIN, session=session, key=key))["beginTurn"]
    rows = await _rows(api, agent)
    again = (await api.ok(BEGIN, session=session, key=key))["beginTurn"]
    assert again == first
    assert len(first["pinned"]) == 1
    assert await _rows(api, agent) == rows
    assert await _stored_keys(api, key) == 1
    # the same key with other input
    message = await _expect(api, "CONFLICT", BEGIN, session=session, key=key, preview=True)
    assert "idempotencyKey" in message
    assert await _rows(api, agent) == rows
    # without a key, a new turn
    other = (await api.ok(BEGIN, session=session))["beginTurn"]
    assert other["turn"]["id"] != first["turn"]["id"]


async def test_add_memory_replays_the_first_write(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    key = _key()
    first = await s.add(turn, "The customer's account is in Lyon", kind="fact", key=key)
    rows = await _rows(api, agent)
    again = await s.add(turn, "The customer's account is in Lyon", kind="fact", key=key)
    assert again == first
    assert await _rows(api, agent) == rows
    await _expect(api, "CONFLICT", ADD, turn=turn, summary="The account is in Paris", key=key)
    await _expect(
        api,
        "CONFLICT",
        ADD,
        turn=turn,
        summary="The customer's account is in Lyon",
        kind="event",
        key=key,
    )
    assert await _rows(api, agent) == rows
    # the same key is independent per operation
    begun = (await api.ok(BEGIN, session=await s.session(), key=key))["beginTurn"]
    assert begun["turn"]["status"] == "OPEN"


async def test_delete_memory_replays_instead_of_conflicting(api: Api) -> None:
    """Without a key a second delete is a CONFLICT (the record is no longer ACTIVE);
    with the first call's key it returns the first result."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    record = await s.committed("The customer has a cat", session)
    turn = await s.turn(session)
    key = _key()
    first = (await api.ok(DELETE_KEYED, turn=turn, id=record, key=key))["deleteMemory"]
    assert first["memories"][0]["status"] == "DELETED"
    rows = await _rows(api, agent)
    again = (await api.ok(DELETE_KEYED, turn=turn, id=record, key=key))["deleteMemory"]
    assert again == first
    assert await _rows(api, agent) == rows
    other = await s.committed("The customer has a dog", session)
    await _expect(api, "CONFLICT", DELETE_KEYED, turn=turn, id=other, key=key)
    await _expect(api, "CONFLICT", DELETE_KEYED, turn=turn, id=record)


async def test_commit_turn_replays_instead_of_conflicting(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    await s.add(turn, "The customer travels in May")
    key = _key()
    first = (await api.ok(COMMIT_KEYED, turn=turn, key=key))["commitTurn"]["turn"]
    assert first == {"id": turn, "status": "COMMITTED"}
    rows = await _rows(api, agent)
    assert (await api.ok(COMMIT_KEYED, turn=turn, key=key))["commitTurn"]["turn"] == first
    assert await _rows(api, agent) == rows
    await _expect(api, "CONFLICT", COMMIT_KEYED, turn=turn)
    another = await s.turn(session)
    await _expect(api, "CONFLICT", COMMIT_KEYED, turn=another, key=key)
    status = await _count(
        api, "SELECT count(*) FROM turns WHERE id = :t AND status = 'open'", t=another
    )
    assert status == 1


async def test_r24_failed_call_stores_no_key_and_can_be_retried(api: Api) -> None:
    """A refused addMemory (undeclared kind, R24) stores no key and no memory; the fixed
    call with the same key succeeds, and is then replayed."""
    s = Scenario(api)
    agent = await s.agent(memory_config(kinds=["fact"]))
    session = await s.session()
    turn = await s.turn(session)
    key = _key()
    await _expect(
        api, "NOT_ALLOWED", ADD, turn=turn, summary="Prefers tea", kind="opinion", key=key
    )
    assert await _stored_keys(api, key) == 0
    assert (await _rows(api, agent))["memory_records"] == 0
    fixed = await s.add(turn, "Prefers tea", kind="fact", key=key)
    assert fixed["memories"][0]["status"] == "ACTIVE"
    assert await _stored_keys(api, key) == 1
    assert await s.add(turn, "Prefers tea", kind="fact", key=key) == fixed
    assert (await _rows(api, agent))["memory_records"] == 1


async def test_failed_begin_and_commit_store_no_key(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    key = _key()
    await _expect(api, "NOT_FOUND", BEGIN, session=str(uuid.uuid4()), key=key)
    assert await _stored_keys(api, key) == 0
    begun = (await api.ok(BEGIN, session=session, key=key))["beginTurn"]
    turn = begun["turn"]["id"]
    assert (await api.ok(BEGIN, session=session, key=key))["beginTurn"] == begun

    commit_key = _key()
    await _expect(api, "NOT_FOUND", COMMIT_KEYED, turn=str(uuid.uuid4()), key=commit_key)
    assert await _stored_keys(api, commit_key) == 0
    assert (await api.ok(COMMIT_KEYED, turn=turn, key=commit_key))["commitTurn"]["turn"][
        "status"
    ] == ("COMMITTED")
    assert (await _rows(api, agent))["turns"] == 1


async def test_bad_idempotency_keys_are_bad_input(api: Api) -> None:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    for key in ("", "k" * 201, "a\x00b"):  # PostgreSQL text cannot hold NUL
        message, ext = await api.error(BEGIN, session=session, key=key)
        assert ext == {"code": "BAD_INPUT", "field": "idempotencyKey"}, message
    assert (await _rows(api, agent))["turns"] == 0


async def test_concurrent_calls_with_one_key_begin_one_turn(api: Api) -> None:
    """Two calls racing with one key: at most one turn is created; the other call gets
    the same turn or a CONFLICT telling it to retry."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    key = _key()
    results = await asyncio.gather(
        *(api.execute(BEGIN, session=session, key=key) for _ in range(2))
    )
    turns = {r.data["beginTurn"]["turn"]["id"] for r in results if not r.errors}
    codes = [r.errors[0].extensions["code"] for r in results if r.errors]
    assert len(turns) == 1
    assert codes in ([], ["CONFLICT"])
    assert (await _rows(api, agent))["turns"] == 1
    retried = (await api.ok(BEGIN, session=session, key=key))["beginTurn"]
    assert {retried["turn"]["id"]} == turns


async def test_a_connection_lost_at_commit_answers_outcome_unknown(api: Api) -> None:
    """When the connection drops while COMMIT is on its way, the server cannot know
    whether the call was kept: it answers OUTCOME_UNKNOWN (not TIMEOUT, which promises
    that nothing was kept), and the same call sent again with its key answers the real
    result: here the COMMIT never ran, so the retry begins the turn, once."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    key = _key()
    context = make_context(
        database=api.database, embedder=api.embedder, settings=api.settings, identity=full_caller()
    )
    assert api.database.engine is not None
    engine = api.database.engine.sync_engine

    def drop_connection(db: Session) -> None:
        pid = db.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with engine.connect() as other:
            other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)}, 5000)")

    event.listen(context.db.sync_session, "before_commit", drop_connection)
    lost = await api.schema.execute(
        BEGIN, variable_values={"session": session, "key": key}, context_value=context
    )
    assert lost.errors, lost.data
    assert lost.errors[0].extensions == {"code": "OUTCOME_UNKNOWN"}
    assert "same idempotencyKey" in lost.errors[0].message
    assert (await _rows(api, agent))["turns"] == 0
    retried = (await api.ok(BEGIN, session=session, key=key))["beginTurn"]
    assert retried["turn"]["number"] == 1
    assert (await api.ok(BEGIN, session=session, key=key))["beginTurn"] == retried
    assert (await _rows(api, agent))["turns"] == 1
