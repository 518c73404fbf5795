"""Fuzzing the HTTP endpoint with generated GraphQL documents (hypothesis-graphql), once
per kind of principal: no response is a 5xx, and none carries the sentinel text of a
tenant the principal may not read (R10, R70, R71).

UUID arguments are drawn from the ids of a real two-tenant world (agents, sessions,
turns, executions, records) as well as at random, so that the documents reach real
objects of both tenants. Bounded: ``EXAMPLES`` documents per principal kind.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import from_schema, nodes

from resolvers.schema import printed_schema
from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.scenario import BEGIN, Scenario, memory_config
from tests.auth_helpers import bearer
from tests.conftest import Api

EXAMPLES = 100
# What an unmasked internal error would show: SQL, driver and ORM names, tracebacks.
LEAKS = ("psycopg", "sqlalchemy", "sqlalche.me", "Traceback", 'File "', "/work/")


@dataclass
class Tenant:
    ns: str
    agent: str
    sentinel: str
    ids: list[str]


async def _tenant(api: Api, label: str) -> Tenant:
    ns = f"fz{label}{uuid.uuid4().hex[:6]}"
    sentinel = f"FUZZSENTINEL{label}{uuid.uuid4().hex[:6]}"
    s = Scenario(api)
    agent = await s.agent(
        memory_config(read=["session", "agent"], write=["session", "agent"]), namespace=ns
    )
    session = await s.session()
    begun = await s.begin(session)
    turn = begun["turn"]["id"]
    records = [await s.add_id(turn, f"{sentinel} record {i}") for i in range(2)]
    await s.commit(turn)
    open_turn = (await api.ok(BEGIN, session=session))["beginTurn"]
    return Tenant(
        ns,
        agent,
        sentinel,
        [
            agent,
            session,
            turn,
            begun["execution"]["id"],
            open_turn["turn"]["id"],
            open_turn["execution"]["id"],
            *records,
        ],
    )


@dataclass
class World:
    mine: Tenant
    theirs: Tenant


@pytest.fixture(scope="module")
async def world(api: Api) -> World:
    return World(await _tenant(api, "a"), await _tenant(api, "b"))


@pytest.fixture(scope="module")
async def fuzz_client(
    settings: Settings, database: Database, embedder: Embedder
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        settings.model_copy(update={"dev": False}), database=database, embedder=embedder
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        yield client


def _documents(world: World) -> st.SearchStrategy[str]:
    known = world.mine.ids + world.theirs.ids
    uuids = st.one_of(st.sampled_from(known), st.uuids().map(str)).map(nodes.String)
    json = st.one_of(
        st.just(nodes.Object([])),
        st.text(max_size=20).map(nodes.String),
        st.integers(-5, 5).map(nodes.Int),
    )
    return from_schema(
        printed_schema(),
        custom_scalars={
            "ID": uuids,
            "JSON": json,
            "DateTime": st.just("2026-01-01T00:00:00Z").map(nodes.String),
        },
    ).map(str)


async def _fuzz(client: httpx.AsyncClient, token: str, document: str, hidden: list[str]) -> None:
    response = await client.post(
        "/graphql", json={"query": document}, headers={"authorization": f"Bearer {token}"}
    )
    assert response.status_code < 500, (document, response.text)
    for sentinel in hidden:
        assert sentinel not in response.text, document
    for leak in LEAKS:
        assert leak not in response.text, (document, response.text)
    body = response.json()
    codes = sorted({str(e.get("extensions", {}).get("code")) for e in body.get("errors") or []})
    assert "INTERNAL" not in codes, (document, response.text)
    event(f"{'data' if body.get('data') else 'no data'}; codes {codes}")
    if "FUZZSENTINEL" in response.text:
        event("a sentinel the principal may read came back")


@pytest.fixture(scope="module")
async def principals(api: Api, world: World) -> dict[str, tuple[str, list[str]]]:
    """Per kind: a token and the sentinels its responses must never carry. admin: no
    memory grant, so no sentinel at all; client: may read and delete the first tenant's
    memory, never the second's; runtime: the first tenant's agent itself."""
    mine, theirs = world.mine, world.theirs
    return {
        "admin": (await bearer(api, kind="admin"), [mine.sentinel, theirs.sentinel]),
        "client": (
            await bearer(
                api, kind="client", grants=(("SELECT", f"{mine.ns}.*"), ("UPDATE", f"{mine.ns}.*"))
            ),
            [theirs.sentinel],
        ),
        "runtime": (await bearer(api, kind="runtime", agent_id=mine.agent), [theirs.sentinel]),
    }


_STRATEGIES: dict[str, st.SearchStrategy[str]] = {}


@pytest.mark.parametrize("kind", ["admin", "client", "runtime"])
@settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
@given(data=st.data())
async def test_fuzz_no_5xx_and_no_foreign_sentinel(
    world: World,
    principals: dict[str, tuple[str, list[str]]],
    fuzz_client: httpx.AsyncClient,
    kind: str,
    data: st.DataObject,
) -> None:
    token, hidden = principals[kind]
    documents = _STRATEGIES.setdefault(world.mine.agent, _documents(world))
    await _fuzz(fuzz_client, token, data.draw(documents, label="document"), hidden)
