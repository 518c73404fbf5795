"""Authentication over HTTP: ``Authorization: Bearer <token>`` on /graphql, 401 for a
missing, unknown, revoked or expired token; /healthz and /metrics stay open; the
chain headers name the execution and the tool a call comes from (R70)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.models import Principal
from server.services import auth
from server.settings import Settings
from tests.api.scenario import BEGIN, COMMIT, Scenario, memory_config
from tests.auth_helpers import bearer, statements
from tests.conftest import Api

AGENTS = '{ agents(namespace: "nobody", first: 1) { edges { cursor } } }'


@pytest.fixture
async def client(
    settings: Settings, database: Database, embedder: Embedder
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        settings.model_copy(update={"dev": False}), database=database, embedder=embedder
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as c:
        yield c


async def _post(
    client: httpx.AsyncClient,
    token: str | None,
    query: str,
    headers: dict[str, str] | None = None,
    **variables: Any,
) -> httpx.Response:
    sent = dict(headers or {})
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    return await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=sent
    )


def _code(response: httpx.Response) -> str:
    return str(response.json()["errors"][0]["extensions"]["code"])


@pytest.mark.parametrize("header", [None, "Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "token x"])
async def test_missing_token_is_401_before_any_sql(
    client: httpx.AsyncClient, database: Database, header: str | None
) -> None:
    headers = {"authorization": header} if header is not None else {}
    with statements(database) as sent:
        response = await client.post("/graphql", json={"query": AGENTS}, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert _code(response) == "UNAUTHENTICATED"
    assert sent == []


async def test_unknown_revoked_and_expired_tokens_are_401(
    client: httpx.AsyncClient, api: Api, database: Database
) -> None:
    with statements(database) as sent:
        unknown = await _post(client, "amk_" + "x" * 43, AGENTS)
    assert unknown.status_code == 401 and _code(unknown) == "UNAUTHENTICATED"
    assert len(sent) == 1  # the token lookup, nothing else
    token = await bearer(api, kind="admin")
    assert (await _post(client, token, AGENTS)).status_code == 200
    async with database.session() as db:
        await auth.revoke_principal(db, ref=token[: auth.PREFIX_LENGTH])
        await db.commit()
    revoked = await _post(client, token, AGENTS)
    assert revoked.status_code == 401 and "revoked" in revoked.json()["errors"][0]["message"]
    expiring = await bearer(api, kind="admin")
    assert (await _post(client, expiring, AGENTS)).status_code == 200
    async with database.session() as db:
        await db.execute(
            update(Principal)
            .where(Principal.token_hash == auth.hash_token(expiring))  # type: ignore[arg-type]
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await db.commit()
    expired = await _post(client, expiring, AGENTS)
    assert expired.status_code == 401 and "expired" in expired.json()["errors"][0]["message"]


async def test_a_refused_document_costs_no_token_lookup(
    client: httpx.AsyncClient, database: Database
) -> None:
    """The limits run before authentication: a document they refuse sends no SQL, even
    the token lookup."""
    deep = '{ agents(namespace: "x", first: 1) { edges { node { ' + "versions { agent { " * 8
    deep += "id" + " } }" * 8 + " } } } }"
    with statements(database) as sent:
        response = await _post(client, "amk_" + "y" * 43, deep)
    assert response.status_code == 200
    assert _code(response) == "GRAPHQL_VALIDATION_FAILED"
    assert sent == []


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
async def test_the_bearer_scheme_is_case_insensitive(
    client: httpx.AsyncClient, api: Api, scheme: str
) -> None:
    """RFC 7235: the scheme's name is case-insensitive, at the guard and in the context."""
    token = await bearer(api, kind="admin")
    response = await client.post(
        "/graphql", json={"query": AGENTS}, headers={"authorization": f"{scheme} {token}"}
    )
    assert response.status_code == 200, response.text
    assert "errors" not in response.json(), response.json()


async def test_health_and_metrics_need_no_token(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).status_code == 200
    assert (await client.get("/metrics")).status_code == 200


async def test_chain_headers_name_the_execution_and_the_tool(
    client: httpx.AsyncClient, api: Api
) -> None:
    """A runtime token with the headers is a tool inside an execution: it reads only
    what the chain grants (here nothing), and writes nothing (R23, R70)."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    turn = await s.turn(session)
    record = await s.add_id(turn, "SENTINEL-HTTP chain")
    await s.commit(turn)
    runtime = await bearer(api, kind="runtime", agent_id=agent)
    begun = (await _post(client, runtime, BEGIN, session=session)).json()["data"]["beginTurn"]
    read = "query($id: ID!) { agentMemory(id: $id) { current { summary } } }"
    direct = await _post(client, runtime, read, id=record)
    assert direct.json()["data"]["agentMemory"]["current"]["summary"] == "SENTINEL-HTTP chain"
    chain = {"x-agent-memory-execution": begun["execution"]["id"], "x-agent-memory-tool": "export"}
    as_tool = await _post(client, runtime, read, headers=chain, id=record)
    # what the chain may not read is answered as an unknown id (docs/security.md,
    # "Refusals look like absence")
    assert _code(as_tool) == "NOT_FOUND" and "SENTINEL" not in as_tool.text
    bad = await _post(
        client, runtime, read, headers={"x-agent-memory-execution": "nope"}, id=record
    )
    assert _code(bad) == "BAD_INPUT"
    unknown = await _post(
        client, runtime, read, headers={"x-agent-memory-execution": str(uuid.uuid4())}, id=record
    )
    assert _code(unknown) == "BAD_INPUT"
    assert "errors" not in (await _post(client, runtime, COMMIT, turn=begun["turn"]["id"])).json()
