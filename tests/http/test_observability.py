"""What an operator watches: the Prometheus metrics and the request log lines
(docs/operations.md, "Metrics" and "Logs")."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.logs import JsonFormatter
from server.settings import Settings
from tests.auth_helpers import bearer, full_caller
from tests.conftest import Api


def _client(settings: Settings, database: Database, embedder: Embedder) -> httpx.AsyncClient:
    app = create_app(settings, database=database, embedder=embedder, caller=full_caller())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.fixture
async def client(
    settings: Settings, database: Database, embedder: Embedder
) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(settings, database, embedder) as c:
        yield c


async def _samples(
    client: httpx.AsyncClient,
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


async def _graphql(client: httpx.AsyncClient, query: str, **headers: str) -> httpx.Response:
    return await client.post("/graphql", json={"query": query}, headers=headers)


async def test_operations_are_counted_by_name_and_outcome(client: httpx.AsyncClient) -> None:
    for _ in range(2):
        await _graphql(client, "query Ping { __typename }")
    await _graphql(client, "query Broken { nothing }")
    await _graphql(client, "{ __typename }")
    await _graphql(client, "{")
    samples = await _samples(client)
    requests = "agent_memory_graphql_requests_total"
    assert samples[(requests, (("code", "OK"), ("operation", "Ping")))] == 2
    # a document that does not validate is not counted under the name it gives itself
    assert samples[(requests, (("code", "GRAPHQL_VALIDATION_FAILED"), ("operation", "other")))]
    assert samples[(requests, (("code", "OK"), ("operation", "query:__typename")))] == 1
    assert samples[(requests, (("code", "GRAPHQL_PARSE_FAILED"), ("operation", "unparsed")))]
    latency = "agent_memory_graphql_request_duration_seconds_count"
    assert samples[(latency, (("operation", "Ping"),))] == 2


async def test_each_app_counts_in_its_own_registry(
    client: httpx.AsyncClient, settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Two apps in one process (tests, or an embedding application) do not collide."""
    await _graphql(client, "query Ping { __typename }")
    async with _client(settings, database, embedder) as other:
        samples = await _samples(other)
    assert ("agent_memory_graphql_requests_total", (("code", "OK"), ("operation", "Ping"))) not in (
        samples
    )


async def test_embedder_and_pool_state_are_exported(
    client: httpx.AsyncClient, embedder: Embedder
) -> None:
    await embedder.embed(["metrics are read when scraped"])
    samples = await _samples(client)
    assert samples[("agent_memory_embedding_forward_passes_total", ())] == embedder.forward_passes
    assert samples[("agent_memory_embedding_queue_depth", ())] == 0
    assert samples[("agent_memory_db_pool_size", ())] >= 1
    assert ("agent_memory_db_pool_checked_out", ()) in samples
    assert samples[("agent_memory_uptime_seconds", ())] > 0


async def test_metrics_speak_openmetrics_when_asked(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/metrics", headers={"accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")


async def test_each_request_is_one_log_line_with_id_operation_and_duration(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="agent_memory.requests"):
        response = await _graphql(client, "query Ping { __typename }", **{"x-request-id": "abc-1"})
        fresh = await _graphql(client, "query Ping { __typename }", **{"x-request-id": "bad id!"})
    assert response.headers["x-request-id"] == "abc-1"
    assert fresh.headers["x-request-id"] not in ("", "bad id!")
    first, second = (r for r in caplog.records if r.name == "agent_memory.requests")
    assert first.request_id == "abc-1"  # type: ignore[attr-defined]
    assert second.request_id == fresh.headers["x-request-id"]  # type: ignore[attr-defined]
    entry = json.loads(JsonFormatter().format(first))
    assert entry["message"].startswith("POST /graphql 200 Ping OK ")
    assert {k: entry[k] for k in ("request_id", "method", "path", "status", "operation")} == {
        "request_id": "abc-1",
        "method": "POST",
        "path": "/graphql",
        "status": 200,
        "operation": "Ping",
    }
    assert entry["code"] == "OK" and entry["duration_ms"] >= 0
    assert entry["level"] == "info" and entry["logger"] == "agent_memory.requests"


async def test_unauthenticated_requests_and_made_up_names_do_not_grow_the_page(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Item 5 of issue 22: 200 requests with a bogus token, each with its own made-up
    operationName, get their 401 and are counted under ``other``: the page stays as it
    was, give or take the counts."""
    app = create_app(settings, database=database, embedder=embedder)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        bogus = {"authorization": "Bearer amk_not-a-token"}
        await client.post("/graphql", json={"query": "query Warm { __typename }"}, headers=bogus)
        before = len((await client.get("/metrics")).text)
        for i in range(200):
            name = f"Probe{i:03d}"
            response = await client.post(
                "/graphql",
                json={"query": f"query {name} {{ __typename }}", "operationName": name},
                headers=bogus,
            )
            assert response.status_code == 401
        page = (await client.get("/metrics")).text
        samples = await _samples(client)
    assert "Probe" not in page
    assert len(page) < before + 200  # the counts grew, not the labels
    requests = "agent_memory_graphql_requests_total"
    assert samples[(requests, (("code", "UNAUTHENTICATED"), ("operation", "other")))] == 201


async def test_operation_names_are_capped(client: httpx.AsyncClient) -> None:
    """Even an authenticated caller's names are counted apart only up to MAX_OPERATIONS;
    the rest are ``other``."""
    from server.metrics import MAX_OPERATIONS

    for i in range(MAX_OPERATIONS + 5):
        await _graphql(client, f"query Name{i:03d} {{ __typename }}")
    samples = await _samples(client)
    named = {
        dict(labels)["operation"]
        for (metric, labels) in samples
        if metric == "agent_memory_graphql_requests_total"
    }
    assert len(named - {"other"}) == MAX_OPERATIONS and "other" in named


async def test_a_client_cannot_take_the_operation_slots(
    api: Api, settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Only the operator's own callers claim an operation name: a client token with no
    grant sends more made-up names than there are slots, each answered, and all are
    ``other``; a runtime's name is counted apart, and a client's operation of that same
    name is counted under it."""
    from server.metrics import MAX_OPERATIONS

    client_token = await bearer(api, kind="client")
    runtime_token = await bearer(api, kind="runtime", namespace="metrics")
    app = create_app(settings, database=database, embedder=embedder)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        for i in range(MAX_OPERATIONS + 5):
            answered = await _graphql(
                client,
                f"query Probe{i:03d} {{ __typename }}",
                authorization=f"Bearer {client_token}",
            )
            assert answered.json() == {"data": {"__typename": "Query"}}
        for token in (runtime_token, client_token):
            await _graphql(client, "query Recall { __typename }", authorization=f"Bearer {token}")
        samples = await _samples(client)
    requests = "agent_memory_graphql_requests_total"
    named = {dict(labels)["operation"] for (metric, labels) in samples if metric == requests}
    assert named == {"other", "Recall"}
    assert samples[(requests, (("code", "OK"), ("operation", "other")))] == MAX_OPERATIONS + 5
    assert samples[(requests, (("code", "OK"), ("operation", "Recall")))] == 2


async def test_resolver_errors_are_counted_and_logged_under_their_own_code(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Item 5 of issue 22: a NOT_FOUND (or FORBIDDEN, CONFLICT, ...) raised by a resolver
    is counted and logged as NOT_FOUND, not GRAPHQL_VALIDATION_FAILED."""
    query = 'query Q { agent(namespace: "financial", name: "nope") { id } }'
    with caplog.at_level(logging.INFO, logger="agent_memory.requests"):
        response = await _graphql(client, query)
    assert response.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    (line,) = [r for r in caplog.records if r.name == "agent_memory.requests"]
    assert line.getMessage().startswith("POST /graphql 200 Q NOT_FOUND ")
    samples = await _samples(client)
    assert samples[
        ("agent_memory_graphql_requests_total", (("code", "NOT_FOUND"), ("operation", "Q")))
    ]
