"""Hardening limits of the public endpoint (issue: GraphQL hardening; docs/security.md).

For each limit the request at the limit passes and the request one past it is
rejected before any resolver runs or any SQL statement is sent (statements are
counted on the engine).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from graphql.language import Lexer, Source, TokenKind
from sqlalchemy import text

from resolvers.cost import document_cost
from resolvers.schema import build_schema
from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.scenario import BEGIN, Scenario, memory_config
from tests.auth_helpers import bearer, context_for, full_caller, statements
from tests.conftest import Api

ZERO = "00000000-0000-0000-0000-000000000000"


@pytest.fixture(scope="module")
def strict(settings: Settings) -> Settings:
    """The production defaults (dev mode off), on the test database."""
    return settings.model_copy(update={"dev": False})


async def _run(api: Api, settings: Settings, query: str, **variables: Any) -> Any:
    schema = build_schema(settings=settings)
    context = context_for(api, settings=settings, identity=full_caller())
    return await schema.execute(query, variable_values=variables or None, context_value=context)


async def _passes(api: Api, settings: Settings, query: str, **variables: Any) -> int:
    with statements(api.database) as sent:
        result = await _run(api, settings, query, **variables)
    assert result.errors is None, [e.message for e in result.errors or []]
    assert sent, "the query at the limit should reach the database"
    return len(sent)


async def _rejected(api: Api, settings: Settings, query: str, **variables: Any) -> str:
    with statements(api.database) as sent:
        result = await _run(api, settings, query, **variables)
    assert result.errors, "expected the limit to reject the query"
    assert result.data is None
    assert sent == [], f"SQL ran before the rejection: {sent}"
    return str(result.errors[0].message)


@pytest.fixture(scope="module")
async def agent_id(api: Api) -> str:
    s = Scenario(api)
    return await s.agent(memory_config())


def _nested(levels: int) -> str:
    """``agent { versions { agent { versions … { id } } } }`` with ``levels`` fields below
    the root field."""
    fields = ["versions" if i % 2 == 0 else "agent" for i in range(levels - 1)]
    body = "id"
    for name in reversed(fields):
        body = f"{name} {{ {body} }}"
    return f"query($id: ID!) {{ agent(id: $id) {{ {body} }} }}"


async def test_depth_limit(api: Api, strict: Settings, agent_id: str) -> None:
    depth = strict.max_query_depth
    await _passes(api, strict, _nested(depth), id=agent_id)
    message = await _rejected(api, strict, _nested(depth + 1), id=agent_id)
    assert f"exceeds maximum operation depth of {depth}" in message


async def test_a_document_is_validated_once_and_refused_every_time(
    api: Api, strict: Settings, agent_id: str
) -> None:
    """Parsed and validated documents are cached: a runtime's repeated document is not
    validated again, and a refused one stays refused, SQL-free, on every request."""
    from strawberry.extensions.validation_cache import _get_validate_cache

    from resolvers.security import DOCUMENT_CACHE_SIZE

    schema = build_schema(settings=strict)
    cache = _get_validate_cache(DOCUMENT_CACHE_SIZE)
    context = context_for(api, settings=strict, identity=full_caller())
    deep, ok = _nested(strict.max_query_depth + 1), _nested(strict.max_query_depth)
    for round_ in range(3):
        before = cache.cache_info()
        with statements(api.database) as sent:
            refused = await schema.execute(
                deep, variable_values={"id": agent_id}, context_value=context
            )
        assert refused.errors and refused.data is None and sent == []
        assert "exceeds maximum operation depth" in refused.errors[0].message
        passed = await schema.execute(ok, variable_values={"id": agent_id}, context_value=context)
        assert passed.errors is None
        hits = cache.cache_info().hits - before.hits
        assert hits == (0 if round_ == 0 else 2), hits


def _aliased(count: int) -> str:
    fields = " ".join(f"a{i}: agent(id: $id) {{ id }}" for i in range(count))
    return f"query($id: ID!) {{ {fields} }}"


async def test_alias_limit(api: Api, strict: Settings, agent_id: str) -> None:
    await _passes(api, strict, _aliased(strict.max_aliases), id=agent_id)
    message = await _rejected(api, strict, _aliased(strict.max_aliases + 1), id=agent_id)
    assert f"Allowed: {strict.max_aliases}" in message


def _tokens(document: str) -> int:
    lexer, count = Lexer(Source(document)), 0
    while lexer.advance().kind != TokenKind.EOF:
        count += 1
    return count


async def test_token_limit(api: Api, strict: Settings, agent_id: str) -> None:
    limits = strict.model_copy(update={"max_tokens": 120})
    base = "query($id: ID!) { agent(id: $id) { id %s } }"
    padding = limits.max_tokens - _tokens(base % "")
    at_limit = base % " ".join(["name"] * padding)
    assert _tokens(at_limit) == limits.max_tokens
    await _passes(api, limits, at_limit, id=agent_id)
    over = base % " ".join(["name"] * (padding + 1))
    message = await _rejected(api, limits, over, id=agent_id)
    assert "more than 120 tokens" in message
    # the parser aborts: the error is the client's, with its code (docs/security.md)
    result = await _run(api, limits, over, id=agent_id)
    assert result.errors[0].extensions == {"code": "GRAPHQL_PARSE_FAILED"}


COSTLY = """
query($ns: String!, $n: Int!, $m: Int!) {
  agents(namespace: $ns, first: $n) {
    edges { node { sessions(first: $m) { edges { node { id } } } } }
  }
}"""


def test_cost_counts_each_field_once_per_node_it_may_resolve() -> None:
    """agents 1; edges, node, sessions n each; edges, node, id n·m each."""
    from graphql import parse

    for n, m in ((1, 1), (10, 5), (100, 100)):
        cost = document_cost(parse(COSTLY), {"n": n, "m": m}, maximum=10**9, max_page_size=100)
        assert cost == 1 + 3 * n + 3 * n * m


async def test_cost_limit(api: Api, strict: Settings, agent_id: str) -> None:
    ns = await _namespace_of(api, agent_id)
    n, m = 10, 20
    cost = 1 + 3 * n + 3 * n * m
    await _passes(api, strict.model_copy(update={"max_query_cost": cost}), COSTLY, ns=ns, n=n, m=m)
    message = await _rejected(
        api, strict.model_copy(update={"max_query_cost": cost - 1}), COSTLY, ns=ns, n=n, m=m
    )
    assert f"more than {cost - 1} fields" in message


async def test_default_cost_limit_refuses_two_full_nested_pages(
    api: Api, strict: Settings, agent_id: str
) -> None:
    ns = await _namespace_of(api, agent_id)
    assert strict.max_query_cost < 1 + 3 * 100 + 3 * 100 * 100
    await _rejected(api, strict, COSTLY, ns=ns, n=100, m=100)


async def test_a_variable_left_out_is_counted_at_its_default(
    api: Api, strict: Settings, agent_id: str
) -> None:
    """`$n: Int = 100` sent without n resolves 100 nodes: it is counted so, and refused."""
    ns = await _namespace_of(api, agent_id)
    defaulted = COSTLY.replace("$n: Int!", "$n: Int = 100").replace("$m: Int!", "$m: Int = 100")
    assert defaulted != COSTLY
    message = await _rejected(api, strict, defaulted, ns=ns)
    assert f"more than {strict.max_query_cost} fields" in message
    await _passes(api, strict, defaulted, ns=ns, n=2, m=2)


async def test_first_over_the_page_size_is_refused_before_sql(
    api: Api, strict: Settings, agent_id: str
) -> None:
    ns = await _namespace_of(api, agent_id)
    top = strict.max_page_size
    roomy = strict.model_copy(update={"max_query_cost": 10**6})
    await _passes(api, roomy, COSTLY, ns=ns, n=1, m=top)
    message = await _rejected(api, roomy, COSTLY, ns=ns, n=1, m=top + 1)
    assert f"first must be from 1 to {top}" in message
    await _rejected(api, roomy, COSTLY, ns=ns, n=0, m=1)


async def _namespace_of(api: Api, agent_id: str) -> str:
    data = await api.ok("query($id: ID!) { agent(id: $id) { namespace } }", id=agent_id)
    return str(data["agent"]["namespace"])


INTROSPECTION = "{ __schema { queryType { name } } }"


async def test_introspection_is_off_outside_dev_mode(
    api: Api, strict: Settings, settings: Settings
) -> None:
    message = await _rejected(api, strict, INTROSPECTION)
    assert "introspection has been disabled" in message
    dev = await _run(api, settings, INTROSPECTION)
    assert dev.errors is None and dev.data["__schema"]["queryType"]["name"] == "Query"
    typename = await _run(api, strict, "{ __typename }")
    assert typename.errors is None and typename.data == {"__typename": "Query"}


async def test_field_suggestions_are_off_outside_dev_mode(
    api: Api, strict: Settings, settings: Settings
) -> None:
    query = f'{{ agnt(id: "{ZERO}") {{ id }} }}'
    message = await _rejected(api, strict, query)
    assert message == "Cannot query field 'agnt' on type 'Query'."
    dev = await _run(api, settings, query)
    assert "Did you mean 'agent'" in dev.errors[0].message
    enum = (
        f'mutation {{ addMemory(input: {{turnId: "{ZERO}", summary: "x", scope: AGNT}}) '
        "{ execution { id } } }"
    )
    strict_enum = await _rejected(api, strict, enum)
    assert "Did you mean" not in strict_enum


# -- over HTTP ------------------------------------------------------------------------


@pytest.fixture
async def strict_client(
    strict: Settings, database: Database, embedder: Embedder, api: Api
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(strict, database=database, embedder=embedder)
    token = await bearer(api, kind="admin")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        yield client


def _body(query: str, size: int, **variables: Any) -> bytes:
    """A JSON request body of exactly ``size`` bytes (padded with JSON whitespace)."""
    raw = json.dumps({"query": query, "variables": variables}).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


AGENT = "query($id: ID!) { agent(id: $id) { id name } }"


async def test_body_size_limit(
    strict_client: httpx.AsyncClient, strict: Settings, database: Database, agent_id: str
) -> None:
    limit = strict.max_body_bytes
    headers = {"content-type": "application/json"}
    ok = await strict_client.post(
        "/graphql", content=_body(AGENT, limit, id=agent_id), headers=headers
    )
    assert ok.status_code == 200 and "errors" not in ok.json(), ok.text
    with statements(database) as sent:
        big = await strict_client.post(
            "/graphql", content=_body(AGENT, limit + 1, id=agent_id), headers=headers
        )
    assert big.status_code == 413
    assert big.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert sent == []

    async def chunks() -> AsyncIterator[bytes]:
        body = _body(AGENT, limit + 1, id=agent_id)
        for start in range(0, len(body), 4096):
            yield body[start : start + 4096]

    with statements(database) as sent:
        streamed = await strict_client.post("/graphql", content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert sent == []


@pytest.mark.parametrize(
    ("method", "content_type", "status"),
    [
        ("POST", "text/plain", 415),
        ("POST", "application/x-www-form-urlencoded", 415),
        ("POST", "multipart/form-data; boundary=x", 415),
        ("GET", None, 405),
        ("PUT", "application/json", 405),
    ],
)
async def test_only_json_posts_are_executed(
    strict_client: httpx.AsyncClient,
    database: Database,
    agent_id: str,
    method: str,
    content_type: str | None,
    status: int,
) -> None:
    """A form or text/plain POST is what a browser sends cross-site without a preflight;
    a GET could be a link. Neither runs, mutation or query."""
    mutation = 'mutation { createAgent(input: {namespace: "nsget", name: "x"}) { agent { id } } }'
    body = json.dumps({"query": mutation})
    headers = {"content-type": content_type} if content_type else {}
    with statements(database) as sent:
        if method == "GET":
            response = await strict_client.get("/graphql", params={"query": mutation})
        else:
            response = await strict_client.request(
                method, "/graphql", content=body, headers=headers
            )
    assert response.status_code == status, response.text
    assert sent == []
    good = await strict_client.post(
        "/graphql",
        content=json.dumps({"query": AGENT, "variables": {"id": agent_id}}),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert good.status_code == 200 and "errors" not in good.json(), good.text


async def test_query_timeout(
    strict: Settings, database: Database, embedder: Embedder, api: Api
) -> None:
    """A request held past the timeout gets a TIMEOUT error and leaves nothing behind;
    the same request within the timeout passes."""
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    timed = strict.model_copy(update={"query_timeout_ms": 500})
    app = create_app(timed, database=database, embedder=embedder)
    token = await bearer(api, kind="runtime", agent_id=agent)
    body = {"query": BEGIN, "variables": {"session": session}}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        assert database.engine is not None
        async with database.engine.connect() as blocker:
            await blocker.execute(
                text("SELECT 1 FROM sessions WHERE id = :id FOR UPDATE"), {"id": uuid.UUID(session)}
            )
            held = await client.post("/graphql", json=body)
            await blocker.rollback()
        assert held.status_code == 200
        assert held.json()["errors"][0]["extensions"]["code"] == "TIMEOUT"
        await asyncio.sleep(0.2)
        async with database.engine.connect() as conn:
            turns = await conn.scalar(
                text("SELECT count(*) FROM turns WHERE session_id = :id"),
                {"id": uuid.UUID(session)},
            )
        assert turns == 0
        passed = await client.post("/graphql", json=body)
        assert "errors" not in passed.json(), passed.text
        assert passed.json()["data"]["beginTurn"]["turn"]["number"] == 1
