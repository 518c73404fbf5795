"""Following a session as it happens, against a real server process: the sessionTurns
subscription over a WebSocket (graphql-transport-ws), authorized as the query is and
bounded (resolvers/live.py, server/services/turn_watch.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets
from sqlalchemy.engine import URL

from tests.e2e.live import Seeded, am, dashboard_token, seed

FOLLOW = """subscription($s: ID!) { sessionTurns(sessionId: $s) { id number status } }"""
BEGIN = "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id } } }"
COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { id } } }"


@pytest.fixture(scope="module")
def seeded(server: str, database_url: URL) -> Seeded:
    return seed(server, database_url)


@pytest.fixture(scope="module")
def reader(database_url: URL, seeded: Seeded) -> str:
    return dashboard_token(database_url, seeded.namespace)


def _ws(server: str) -> str:
    return server.replace("http://", "ws://") + "/graphql"


async def _send(ws: Any, message: dict[str, Any]) -> None:
    await ws.send(json.dumps(message))


async def _follow(ws: Any, id_: str, session: str) -> None:
    payload = {"query": FOLLOW, "variables": {"s": session}}
    await _send(ws, {"id": id_, "type": "subscribe", "payload": payload})


async def _next(ws: Any, timeout: float = 15) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), timeout))
    return message


def _errors(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """An answer's errors: a next message's, or an error message's."""
    found: list[dict[str, Any]] = (
        answer["payload"]["errors"] if answer["type"] == "next" else answer["payload"]
    )
    return found


async def _connected(server: str, token: str, **headers: str) -> Any:
    ws = await websockets.connect(
        _ws(server), subprotocols=["graphql-transport-ws"], additional_headers=headers
    )
    await _send(ws, {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    assert (await _next(ws))["type"] == "connection_ack"
    return ws


async def _call(server: str, token: str, query: str, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{server}/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {token}"},
        )
    body: dict[str, Any] = answer.json()
    assert not body.get("errors"), body
    return dict(body["data"])


async def test_a_reader_follows_turns_as_they_begin_and_commit(
    server: str, seeded: Seeded, reader: str
) -> None:
    ws = await _connected(server, reader)
    try:
        await _follow(ws, "1", seeded.session_id)
        await asyncio.sleep(1.5)  # the watch has looked once: what happens from now on
        begun = await _call(server, seeded.runtime_token, BEGIN, s=seeded.session_id)
        turn = begun["beginTurn"]["turn"]["id"]
        opened = await _next(ws)
        assert opened["type"] == "next" and opened["id"] == "1", opened
        assert opened["payload"].get("data"), opened
        assert opened["payload"]["data"]["sessionTurns"]["id"] == turn
        assert opened["payload"]["data"]["sessionTurns"]["status"] == "OPEN"
        await _call(server, seeded.runtime_token, COMMIT, t=turn)
        committed = (await _next(ws))["payload"]["data"]["sessionTurns"]
        assert committed == {**committed, "id": turn, "status": "COMMITTED"}

        # one subscription per connection
        await _follow(ws, "2", seeded.session_id)
        refused = await _next(ws)
        assert refused["type"] == "error" and refused["id"] == "2"
        assert "limit" in refused["payload"][0]["message"]
    finally:
        await ws.close()


async def test_a_reader_without_the_session_grant_is_refused(
    server: str, seeded: Seeded, database_url: URL
) -> None:
    *_, token = am(
        database_url,
        ["policy", "create", seeded.namespace, "live-agents"],
        ["policy", "grant", seeded.namespace, "live-agents", "SELECT", f"{seeded.namespace}.Agent"],
        ["token", "create", "--kind", "client", "--name", "live-agents", "--quiet"],
    )
    am(database_url, ["policy", "bind", seeded.namespace, "live-agents", "--principal", token[:12]])
    ws = await _connected(server, token)
    try:
        await _follow(ws, "1", seeded.session_id)
        answer = await _next(ws)
        assert answer["type"] in ("next", "error")
        errors = _errors(answer)
        assert errors[0]["extensions"]["code"] == "FORBIDDEN"
        assert f"SELECT {seeded.namespace}.Session" in errors[0]["message"]
    finally:
        await ws.close()


async def test_a_revoked_token_ends_the_subscription_at_the_next_turn(
    server: str, seeded: Seeded, database_url: URL
) -> None:
    token = dashboard_token(database_url, seeded.namespace)
    ws = await _connected(server, token)
    try:
        await _follow(ws, "1", seeded.session_id)
        await asyncio.sleep(1.5)
        am(database_url, ["token", "revoke", token[:12]])
        begun = await _call(server, seeded.runtime_token, BEGIN, s=seeded.session_id)
        answer = await _next(ws)
        errors = _errors(answer)
        assert errors[0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert "data" not in answer["payload"] or not answer["payload"].get("data")
        await _call(server, seeded.runtime_token, COMMIT, t=begun["beginTurn"]["turn"]["id"])
    finally:
        await ws.close()


async def test_only_subscriptions_over_the_websocket_and_none_over_http(
    server: str, seeded: Seeded, reader: str
) -> None:
    ws = await _connected(server, reader)
    try:
        await _send(ws, {"id": "1", "type": "subscribe", "payload": {"query": "{ namespaces }"}})
        answer = await _next(ws)
        errors = _errors(answer)
        assert errors[0]["extensions"]["code"] == "BAD_INPUT"
    finally:
        await ws.close()
    async with httpx.AsyncClient() as http:
        over_http = await http.post(
            f"{server}/graphql",
            json={"query": FOLLOW, "variables": {"s": seeded.session_id}},
            headers={"authorization": f"Bearer {reader}"},
        )
    assert over_http.json()["errors"][0]["extensions"]["code"] in ("BAD_INPUT", "BAD_REQUEST")


async def test_a_websocket_from_another_origin_is_refused(server: str) -> None:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(
            _ws(server),
            subprotocols=["graphql-transport-ws"],
            additional_headers={"Origin": "https://elsewhere.example"},
        )
    assert refused.value.response.status_code == 403
