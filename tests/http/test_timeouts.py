"""The request timeout under load (docs/security.md, "Limits"): a call answered
TIMEOUT kept nothing of what it did; a call that answered its result kept it,
once. Several runtimes write at once over HTTP with a timeout short enough that
many of their calls reach it, some of them while committing."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from server.app import create_app
from server.database import Database
from server.settings import Settings
from tests.api.scenario import Scenario, memory_config
from tests.auth_helpers import bearer
from tests.conftest import Api

WRITERS = 8
ROUNDS = 3
BUDGET_S = 10.0  # each writer stops starting rounds after this

BEGIN = """
mutation($session: ID!, $key: String) {
  beginTurn(input: {sessionId: $session, idempotencyKey: $key}) { turn { id status } }
}"""
ADD = """
mutation($turn: ID!, $summary: String!, $key: String) {
  addMemory(input: {turnId: $turn, summary: $summary, idempotencyKey: $key}) {
    memories { recordId status }
  }
}"""
COMMIT = """
mutation($turn: ID!, $key: String) {
  commitTurn(input: {turnId: $turn, idempotencyKey: $key}) { turn { id status } }
}"""


class Writer:
    """One runtime's session: begin a turn, add a memory, commit; every call is checked
    against the database as soon as it answers, and sent again until it succeeds."""

    def __init__(self, client: httpx.AsyncClient, database: Database, session: str) -> None:
        self.client = client
        self.database = database
        self.session = session
        self.answers: Counter[str] = Counter()
        self.latencies: list[float] = []

    async def _scalar(self, sql: str, **params: Any) -> Any:
        async with self.database.session() as db:
            return await db.scalar(text(sql), params)

    async def _call(self, query: str, **variables: Any) -> dict[str, Any] | None:
        """The call's data; None when it answered TIMEOUT. A call answered "in flight"
        (its key still held by an earlier attempt being unwound) is sent again."""
        while True:
            started = time.monotonic()
            response = await self.client.post(
                "/graphql", json={"query": query, "variables": variables}
            )
            self.latencies.append(time.monotonic() - started)
            assert response.status_code == 200, response.text
            body = response.json()
            if "errors" not in body:
                self.answers["ok"] += 1
                return dict(body["data"])
            (error,) = body["errors"]
            code = error["extensions"]["code"]
            self.answers[code] += 1
            if code == "TIMEOUT":
                return None
            assert code == "CONFLICT" and "in flight" in error["message"], body
            await asyncio.sleep(0.05)

    async def _turns(self) -> int:
        return int(
            await self._scalar("SELECT count(*) FROM turns WHERE session_id = :s", s=self.session)
        )

    async def _status(self, turn: str) -> str:
        return str(await self._scalar("SELECT status FROM turns WHERE id = :t", t=turn))

    async def _records(self, summary: str) -> int:
        return int(
            await self._scalar("SELECT count(*) FROM memory_versions WHERE summary = :s", s=summary)
        )

    async def begin(self) -> str:
        key = uuid.uuid4().hex  # retries send the same key
        while True:
            before = await self._turns()
            data = await self._call(BEGIN, session=self.session, key=key)
            if data is None:
                assert await self._turns() == before, "a TIMEOUT beginTurn began a turn"
                continue
            turn = str(data["beginTurn"]["turn"]["id"])
            assert await self._turns() == before + 1
            assert await self._status(turn) == "open"
            return turn

    async def add(self, turn: str, summary: str) -> None:
        key = uuid.uuid4().hex
        while True:
            data = await self._call(ADD, turn=turn, summary=summary, key=key)
            if data is None:
                assert await self._records(summary) == 0, "a TIMEOUT addMemory was kept"
                continue
            assert await self._records(summary) == 1
            return

    async def commit(self, turn: str) -> None:
        key = uuid.uuid4().hex
        while True:
            data = await self._call(COMMIT, turn=turn, key=key)
            if data is None:
                assert await self._status(turn) == "open", "a TIMEOUT commitTurn committed"
                continue
            assert data["commitTurn"]["turn"]["status"] == "COMMITTED"
            assert await self._status(turn) == "committed"
            return

    async def run(self, deadline: float) -> int:
        """Rounds until ``deadline`` (at least one) or ROUNDS."""
        rounds = 0
        while rounds < ROUNDS and (rounds == 0 or time.monotonic() < deadline):
            turn = await self.begin()
            await self.add(turn, f"Fact {uuid.uuid4().hex} of session {self.session}")
            await self.commit(turn)
            rounds += 1
        return rounds


@asynccontextmanager
async def _writers(
    api: Api, settings: Settings, sessions: list[str], token: str, timeout_ms: int
) -> AsyncIterator[list[Writer]]:
    timed = settings.model_copy(update={"dev": False, "query_timeout_ms": timeout_ms})
    app = create_app(timed, database=api.database, embedder=api.embedder)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        yield [Writer(client, api.database, session) for session in sessions]


@pytest.mark.slow
async def test_a_timeout_answer_kept_nothing_under_load(api: Api, settings: Settings) -> None:
    """8 writers at once; the timeout is set to the median time their calls took in a
    first round without one, so that about half of the calls reach it, at every stage
    of their work (commit included)."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    sessions = [await s.session() for _ in range(WRITERS)]
    token = await bearer(api, kind="runtime", agent_id=agent)
    async with _writers(api, settings, sessions, token, 30_000) as writers:
        await asyncio.gather(*(w.run(time.monotonic()) for w in writers))
        latencies = sorted(t for w in writers for t in w.latencies)
    timeout_ms = max(20, round(1000 * latencies[len(latencies) // 2]))

    async with _writers(api, settings, sessions, token, timeout_ms) as writers:
        deadline = time.monotonic() + BUDGET_S
        rounds = await asyncio.gather(*(w.run(deadline) for w in writers))
        answers = sum((w.answers for w in writers), Counter[str]())
    assert answers["TIMEOUT"] > 0, f"no call reached the {timeout_ms} ms timeout: {answers}"
    assert sum(rounds) >= WRITERS, f"too few rounds completed: {rounds}, {answers}"
