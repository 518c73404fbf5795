"""The API over HTTP: the Starlette app built by ``create_app``, driven in-process.

The session's database and embedder are passed in already connected and loaded, so
the app's lifespan (which would connect them) is not needed here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest
from graphql import GraphQLError
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from starlette.applications import Starlette

from resolvers.errors import to_graphql_error
from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.scenario import (
    ADD,
    BEGIN,
    COMMIT,
    CREATE_AGENT,
    CREATE_SESSION,
    PUBLISH,
    memory_config,
)
from tests.auth_helpers import full_caller

# What a leaked internal error would show: SQL, driver and ORM names, tracebacks, paths.
LEAKS = (
    "SELECT",
    "INSERT",
    "psycopg",
    "sqlalchemy",
    "Traceback",
    'File "',
    ".py",
    "/tmp",
    "/work",
    "FATAL",
    "connection",
)

RECORD = """
query($id: ID!) {
  agentMemory(id: $id) { id status scope current { summary kind } }
}"""


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.fixture
async def client(
    settings: Settings, database: Database, embedder: Embedder
) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(
        create_app(settings, database=database, embedder=embedder, caller=full_caller())
    ) as c:
        yield c


async def _post(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return dict(response.json())


async def _ok(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    body = await _post(client, query, **variables)
    assert "errors" not in body, body["errors"]
    return dict(body["data"])


async def _error(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    body = await _post(client, query, **variables)
    assert body.get("errors"), body
    return dict(body["errors"][0])


def _assert_no_leak(payload: object) -> None:
    raw = json.dumps(payload)
    for leak in LEAKS:
        assert leak not in raw, f"{leak!r} leaked in {raw}"


async def test_healthz_reports_database_and_model(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": True, "model": True}


async def test_metrics_are_plain_text(client: httpx.AsyncClient) -> None:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "agent_memory_embedding_forward_passes_total " in response.text


async def test_post_graphql_runs_the_walkthrough(client: httpx.AsyncClient) -> None:
    """The README's first steps as JSON over POST: a record written in a turn is
    readable once the turn commits (R12, R20)."""
    ns = f"http{uuid.uuid4().hex[:10]}"
    agent = (await _ok(client, CREATE_AGENT, ns=ns, name="agent", sessionless=False))[
        "createAgent"
    ]["agent"]["id"]
    config = memory_config(read=["session", "agent"], write=["session", "agent"])
    version = (await _ok(client, PUBLISH, agent=agent, config=config))["publishAgentVersion"][
        "agentVersion"
    ]
    assert version["number"] == 1
    session = (await _ok(client, CREATE_SESSION, agent=agent))["createSession"]["session"]["id"]
    begun = (await _ok(client, BEGIN, session=session))["beginTurn"]
    assert begun["turn"]["status"] == "OPEN" and begun["turn"]["number"] == 1
    turn = begun["turn"]["id"]
    added = (await _ok(client, ADD, turn=turn, summary="The customer prefers email", kind="fact"))[
        "addMemory"
    ]
    assert added["execution"]["name"] == "add_memory"
    record = added["memories"][0]["recordId"]
    staged = await _error(client, RECORD, id=record)
    assert staged["extensions"]["code"] == "NOT_FOUND"
    committed = (await _ok(client, COMMIT, turn=turn))["commitTurn"]["turn"]
    assert committed == {"id": turn, "status": "COMMITTED"}
    read = (await _ok(client, RECORD, id=record))["agentMemory"]
    assert read == {
        "id": record,
        "status": "ACTIVE",
        "scope": "SESSION",
        "current": {"summary": "The customer prefers email", "kind": "fact"},
    }


async def test_get_cannot_run_a_mutation(client: httpx.AsyncClient) -> None:
    """A GET must never change anything: the mutation is refused and creates nothing."""
    ns = f"get{uuid.uuid4().hex[:10]}"
    mutation = (
        f'mutation {{ createAgent(input: {{namespace: "{ns}", name: "a"}}) {{ agent {{ id }} }} }}'
    )
    response = await client.get("/graphql", params={"query": mutation})
    assert response.status_code in (400, 405), response.text
    lookup = f'{{ agent(namespace: "{ns}", name: "a") {{ id }} }}'
    missing = await _error(client, lookup)
    assert missing["extensions"]["code"] == "NOT_FOUND"


async def test_errors_over_http_carry_a_code(client: httpx.AsyncClient) -> None:
    """A malformed variable, a garbage cursor and an unknown field each come back as a
    typed error naming only the client's input."""
    bad_uuid = await _error(
        client, "query($id: ID!) { agentMemory(id: $id) { id } }", id="not-a-uuid"
    )
    # an id is read before the field runs: BAD_INPUT naming the argument, the field null
    assert bad_uuid["extensions"] == {"code": "BAD_INPUT", "field": "id"}
    assert "not an id" in bad_uuid["message"] and bad_uuid["path"] == ["agentMemory"]
    bad_cursor = await _error(
        client,
        'query($after: String) { agents(namespace: "x", first: 5, after: $after) '
        "{ edges { cursor } } }",
        after="garbage!",
    )
    assert bad_cursor["extensions"] == {"code": "BAD_INPUT", "field": "after"}
    assert bad_cursor["path"] == ["agents"]
    unknown = await _error(client, "{ nothing }")
    assert unknown["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    bad_enum = await _error(
        client,
        'query($f: MemoryRecordFilter) { agent(namespace: "x", '
        'name: "y") { memoryRecords(first: 1, filter: $f) { edges '
        "{ cursor } } } }",
        f={"status": "GONE"},
    )
    assert bad_enum["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    for error in (bad_uuid, bad_cursor, unknown, bad_enum):
        _assert_no_leak(error)


@pytest.fixture
async def lost_database(database_url: URL) -> AsyncIterator[Database]:
    """A connected Database whose PostgreSQL database is then dropped under it."""
    name = f"agent_memory_http_{uuid.uuid4().hex[:8]}"
    admin = database_url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url.set(database=name).render_as_string(hide_password=False)
    db = Database(Settings(database_url=url))
    await db.connect()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    yield db
    await db.dispose()


async def test_a_lost_database_is_unavailable_and_masked(
    settings: Settings, embedder: Embedder, lost_database: Database
) -> None:
    """A database that is gone cannot be reached: UNAVAILABLE with HTTP 503 (a client
    retries; item 8 of issue 22), with a fixed message and no SQL, driver message,
    database name or path; /healthz reports the database down. (An error of a statement
    is INTERNAL: the next test.)"""
    app = create_app(settings, database=lost_database, embedder=embedder, caller=full_caller())
    async with _client(app) as client:
        health = await client.get("/healthz")
        assert health.status_code == 503
        assert health.json() == {"database": False, "model": True}
        response = await client.post(
            "/graphql",
            json={
                "query": "query($id: ID!) { agentMemory(id: $id) { id } }",
                "variables": {"id": str(uuid.uuid4())},
            },
        )
    assert response.status_code == 503
    body = response.json()
    assert body["data"] == {"agentMemory": None}  # a lookup that fails nulls its field
    assert body["errors"] == [
        {
            "message": "the database is unavailable: nothing was done; retry in a moment",
            "locations": [{"line": 1, "column": 19}],
            "path": ["agentMemory"],
            "extensions": {"code": "UNAVAILABLE"},
        }
    ]
    _assert_no_leak(body)
    name = str(make_url(lost_database.settings.database_url or "").database)
    assert name not in json.dumps(body)


async def test_database_error_is_masked_by_the_error_mapping(database: Database) -> None:
    """The mapping itself, on a real driver error carrying SQL text."""
    async with database.session() as db:
        try:
            await db.execute(text("SELECT 1 / 0 AS secret_column"))
        except DBAPIError as exc:
            failure: Exception = exc
        else:  # pragma: no cover
            pytest.fail("division by zero did not fail")
    assert "secret_column" in str(failure)
    wrapped = GraphQLError(str(failure), path=["agents"], original_error=failure)
    masked = to_graphql_error(wrapped)
    assert masked.message == "Internal server error."
    assert masked.extensions == {"code": "INTERNAL"}
    assert masked.path == ["agents"]
    _assert_no_leak(masked.formatted)
    assert "secret_column" not in json.dumps(masked.formatted)


async def test_graphiql_is_served_in_dev_mode_only(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    html = {"accept": "text/html"}
    dev = create_app(
        settings.model_copy(update={"dev": True}),
        database=database,
        embedder=embedder,
        caller=full_caller(),
    )
    async with _client(dev) as client:
        page = await client.get("/graphql", headers=html)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "graphiql" in page.text.lower()

    production = create_app(
        settings.model_copy(update={"dev": False}),
        database=database,
        embedder=embedder,
        caller=full_caller(),
    )
    async with _client(production) as client:
        page = await client.get("/graphql", headers=html)
        assert page.status_code != 200
        assert "graphiql" not in page.text.lower()
        # the API itself still works
        assert await _ok(client, '{ agents(namespace: "none", first: 1) { edges { cursor } } }')


async def test_json_that_spells_a_lone_surrogate_is_bad_input(client: httpx.AsyncClient) -> None:
    """JSON may escape half a surrogate pair; the body parses, the text is not Unicode:
    a typed BAD_INPUT naming the variable, never a 500 or INTERNAL."""
    body = (
        '{"query": "query($after: String) { agents(namespace: \\"x\\", first: 5, '
        'after: $after) { edges { cursor } } }", "variables": {"after": "ab\\ud800cd"}}'
    )
    response = await client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    (error,) = response.json()["errors"]
    assert error["extensions"] == {"code": "BAD_INPUT", "field": "after"}
    _assert_no_leak(error)
