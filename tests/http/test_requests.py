"""Requests the server cannot run, over HTTP (docs/security.md, "Errors at the HTTP
boundary"): every one is answered in JSON with ``extensions.code``, never a plain-text
body, a 500 or a traceback.

- a body that is not one JSON object with a query: 400, ``BAD_REQUEST``;
- several operations and no ``operationName``: 400, ``BAD_REQUEST``;
- a syntax error: 200 (GraphQL-over-HTTP, ``application/json``), ``GRAPHQL_PARSE_FAILED``
  with the parser's message and location.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.auth_helpers import full_caller, statements

AGENTS = '{ agents(namespace: "nobody", first: 1) { edges { cursor } } }'
JSON = {"content-type": "application/json"}


@pytest.fixture
async def client(
    settings: Settings, database: Database, embedder: Embedder
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        settings.model_copy(update={"dev": False}),
        database=database,
        embedder=embedder,
        caller=full_caller(),
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as c:
        yield c


def _deep(levels: int) -> bytes:
    nested = b"[" * levels + b"]" * levels
    return b'{"query": "{ __typename }", "variables": {"v": ' + nested + b"}}"


BAD_BODIES = {
    "a JSON string": b'"hello"',
    "a JSON number": b"42",
    "null": b"null",
    "invalid UTF-8": b'{"query": "{ __typename \xff\xfe }"}',
    "JSON nested past the parser's depth": _deep(100_000),
    "a batch": b'[{"query": "{ __typename }"}]',
    "malformed JSON": b'{"query": ',
    "no query": b"{}",
    "a query that is not a string": b'{"query": 7}',
    "variables that are not an object": b'{"query": "{ __typename }", "variables": [1]}',
}


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_a_body_that_is_not_one_request_is_a_json_400(
    client: httpx.AsyncClient, database: Database, body: bytes
) -> None:
    with statements(database) as sent:
        response = await client.post("/graphql", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    payload = response.json()
    assert payload["data"] is None
    (error,) = payload["errors"]
    assert error["extensions"] == {"code": "BAD_REQUEST"}
    assert error["message"] and "Traceback" not in response.text
    assert sent == []


async def test_several_operations_need_an_operation_name(
    client: httpx.AsyncClient, database: Database
) -> None:
    """GraphQL-over-HTTP: the client names the operation to run; none is guessed."""
    document = f"query A {AGENTS} query B {{ __typename }}"
    with statements(database) as sent:
        response = await client.post("/graphql", json={"query": document})
    assert response.status_code == 400, response.text
    (error,) = response.json()["errors"]
    assert error["extensions"] == {"code": "BAD_REQUEST"}
    assert "operationName" in error["message"]
    assert sent == []
    named = await client.post("/graphql", json={"query": document, "operationName": "B"})
    assert named.status_code == 200
    assert named.json() == {"data": {"__typename": "Query"}}
    unknown = await client.post("/graphql", json={"query": document, "operationName": "C"})
    assert unknown.status_code == 400
    assert unknown.json()["errors"][0]["extensions"] == {"code": "BAD_REQUEST"}


@pytest.mark.parametrize(
    ("document", "message", "column"),
    [
        ("{", "Syntax Error: Expected Name, found <EOF>.", 2),
        ("query {", "Syntax Error: Expected Name, found <EOF>.", 8),
        ("{ __typename }}", "Syntax Error: Unexpected '}'.", 15),
    ],
)
async def test_a_syntax_error_answers_the_parser_message_and_location(
    client: httpx.AsyncClient, document: str, message: str, column: int
) -> None:
    response = await client.post("/graphql", json={"query": document})
    assert response.status_code == 200
    (error,) = response.json()["errors"]
    assert error["message"] == message
    assert error["locations"] == [{"line": 1, "column": column}]
    assert error["extensions"] == {"code": "GRAPHQL_PARSE_FAILED"}


async def test_a_validation_error_has_its_own_code(client: httpx.AsyncClient) -> None:
    response = await client.post("/graphql", json={"query": "{ nope }"})
    assert response.status_code == 200
    (error,) = response.json()["errors"]
    assert error["extensions"] == {"code": "GRAPHQL_VALIDATION_FAILED"}
