"""Idempotency keys under real concurrency: every runtime mutation that takes an
idempotencyKey, sent several times at once with one key and one input, answers
each call with the first result or with "in flight; retry it" (CONFLICT on
idempotencyKey, the same for every mutation), never with an error the first
call's own effect causes ("turn is committed, not open"); and its effect happens
once. A retry after the race replays the first result."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text

from tests.api.history_scenario import HistoryScenario, history_config, user
from tests.api.history_scenario import agent as agent_reply
from tests.conftest import Api

CALLS = 4
IN_FLIGHT = "a call with this idempotencyKey is in flight; retry it"

BEGIN = """
mutation($session: ID!, $key: String) {
  beginTurn(input: {sessionId: $session, idempotencyKey: $key}) { turn { id status } }
}"""
CLOSE = """
mutation($turn: ID!, $key: String) {
  %s(input: {turnId: $turn, idempotencyKey: $key}) { turn { id status } }
}"""
ADD = """
mutation($turn: ID!, $key: String) {
  addMemory(input: {turnId: $turn, summary: "The customer lives in Lyon", idempotencyKey: $key}) {
    execution { id } memories { id recordId status }
  }
}"""
BY_ID = """
mutation($turn: ID!, $id: ID!, $key: String) {
  %s(input: {turnId: $turn, id: $id, idempotencyKey: $key}) { execution { id } %s { id } }
}"""
SEARCH = """
mutation($turn: ID!, $key: String) {
  searchMemory(input: {turnId: $turn, query: "where does the customer live",
                       idempotencyKey: $key}) {
    execution { id } results { version { id } }
  }
}"""
RECALL = """
mutation($turn: ID!, $key: String) {
  recall(input: {turnId: $turn, query: "where does the customer live", idempotencyKey: $key}) {
    recorded execution { id } results { version { id } }
  }
}"""
RECORD = """
mutation($turn: ID!, $key: String) {
  recordEvents(input: {turnId: $turn, events: [{type: USER_MESSAGE, text: "Hello again"}],
                       idempotencyKey: $key}) { events { id sequence } }
}"""
SEARCH_HISTORY = """
mutation($turn: ID!, $key: String) {
  searchHistory(input: {turnId: $turn, query: "city", idempotencyKey: $key}) {
    execution { id } results { eventId }
  }
}"""


@dataclass
class World:
    """An agent with a session, an earlier committed turn (a record, kept history) and an
    open turn, the state every mutation below starts from."""

    api: Api
    agent: str
    session: str
    turn: str
    record: str

    async def count(self, sql: str) -> int:
        async with self.api.database.session() as db:
            params = {"agent": self.agent, "session": self.session, "turn": self.turn}
            return int(await db.scalar(text(sql), params) or 0)

    async def executions(self, name: str) -> int:
        return await self.count(
            f"SELECT count(*) FROM executions WHERE turn_id = :turn AND name = '{name}'"
        )


async def _world(api: Api) -> World:
    s = HistoryScenario(api)
    agent = await s.agent(history_config())
    session = await s.session()
    earlier = await s.turn(session)
    await s.record(earlier, user("I moved to Lyon"), agent_reply("Noted: Lyon."))
    record = await s.add_id(earlier, "The customer lives in Lyon")
    await s.commit(earlier)
    return World(api, agent, session, await s.turn(session), record)


@dataclass(frozen=True)
class Case:
    query: str
    variables: Callable[[World], dict[str, Any]]
    effect: Callable[[World], Awaitable[int]]  # counts what the mutation did: 1 once


def _turn(w: World) -> dict[str, Any]:
    return {"turn": w.turn}


def _record(w: World) -> dict[str, Any]:
    return {"turn": w.turn, "id": w.record}


def _status(status: str) -> Callable[[World], Awaitable[int]]:
    return lambda w: w.count(f"SELECT count(*) FROM turns WHERE id = :turn AND status = '{status}'")


CASES = {
    "beginTurn": Case(
        BEGIN,
        lambda w: {"session": w.session},
        # the world's two turns, and the one this call begins
        lambda w: w.count("SELECT count(*) - 2 FROM turns WHERE session_id = :session"),
    ),
    "commitTurn": Case(CLOSE % "commitTurn", _turn, _status("committed")),
    "rollbackTurn": Case(CLOSE % "rollbackTurn", _turn, _status("rolled_back")),
    "failTurn": Case(CLOSE % "failTurn", _turn, _status("failed")),
    "addMemory": Case(ADD, _turn, lambda w: w.executions("add_memory")),
    "readMemory": Case(
        BY_ID % ("readMemory", "sources"), _record, lambda w: w.executions("read_memory")
    ),
    "deleteMemory": Case(
        BY_ID % ("deleteMemory", "memories"), _record, lambda w: w.executions("delete_memory")
    ),
    "searchMemory": Case(SEARCH, _turn, lambda w: w.executions("search_memory")),
    "recall": Case(RECALL, _turn, lambda w: w.executions("search_memory")),
    "recordEvents": Case(
        RECORD,
        _turn,
        lambda w: w.count(
            "SELECT count(*) FROM transcript_events WHERE turn_id = :turn AND type = 'message.user'"
        ),
    ),
    "searchHistory": Case(SEARCH_HISTORY, _turn, lambda w: w.executions("search_history")),
}


@pytest.mark.parametrize("operation", sorted(CASES))
async def test_concurrent_calls_with_one_key_answer_the_first_result_or_in_flight(
    api: Api, operation: str
) -> None:
    case = CASES[operation]
    world = await _world(api)
    variables = {**case.variables(world), "key": f"race-{uuid.uuid4().hex}"}
    before = await case.effect(world)
    answers = await asyncio.gather(*(api.execute(case.query, **variables) for _ in range(CALLS)))
    results = [a.data[operation] for a in answers if not a.errors]
    for answer in answers:
        for error in answer.errors or ():
            assert (error.message, error.extensions) == (
                IN_FLIGHT,
                {"code": "CONFLICT", "field": "idempotencyKey"},
            ), operation
    retried = (await api.ok(case.query, **variables))[operation]
    assert all(result == retried for result in results), (results, retried)
    assert await case.effect(world) - before == 1
