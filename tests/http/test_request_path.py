"""The request path over HTTP: kept callers honour every revocation on the next request
(R70, R71; docs/security.md, "Tokens checked on every request"), a connection the
server dropped is replaced without a failed request, and the statements a runtime sends
stay prepared on their connection (docs/scaling.md, "The request path")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import event, text, update
from sqlalchemy.engine import URL

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.models import Principal
from server.services import auth, policies
from server.settings import Settings
from tests.api.scenario import Scenario, memory_config
from tests.auth_helpers import bearer
from tests.conftest import Api

AGENT = "query($id: ID!) { agentById: node(id: $id) { id } }"
MEMORY = "query($id: ID!) { agentMemory(id: $id) { current { summary } } }"


@pytest.fixture
async def own_database(settings: Settings) -> AsyncIterator[Database]:
    """A pool of its own (two connections at most), so that what a test does to its
    connections touches no other test's."""
    db = Database(settings.model_copy(update={"pool_size": 1}))
    await db.connect()
    yield db
    await db.dispose()


def _client(settings: Settings, database: Database, embedder: Embedder) -> httpx.AsyncClient:
    app = create_app(
        settings.model_copy(update={"dev": False}), database=database, embedder=embedder
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def _post(
    client: httpx.AsyncClient, token: str, query: str, **variables: Any
) -> dict[str, Any]:
    response = await client.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token}"},
    )
    body: dict[str, Any] = response.json()
    body["status"] = response.status_code
    return body


def _code(body: dict[str, Any]) -> str | None:
    errors = body.get("errors")
    return str(errors[0]["extensions"]["code"]) if errors else None


class _Sent:
    """The SQL statements sent through ``database`` while it counts."""

    def __init__(self, database: Database) -> None:
        self.engine = database.engine
        assert self.engine is not None
        self.statements: list[str] = []

    def _count(self, _c: Any, _cur: Any, statement: str, *_: Any) -> None:
        self.statements.append(statement)

    def __enter__(self) -> list[str]:
        assert self.engine is not None
        event.listen(self.engine.sync_engine, "before_cursor_execute", self._count)
        return self.statements

    def __exit__(self, *_: object) -> None:
        assert self.engine is not None
        event.remove(self.engine.sync_engine, "before_cursor_execute", self._count)


async def _memory_world(api: Api) -> tuple[Scenario, str, str, str]:
    """An agent in a namespace of its own with one committed record: (its scenario, the
    namespace, the record, its session)."""
    s = Scenario(api)
    namespace = f"ns{uuid.uuid4().hex[:10]}"
    await s.agent(memory_config(), namespace=namespace)
    session = await s.session()
    turn = await s.turn(session)
    record = await s.add_id(turn, "SENTINEL-kept caller")
    await s.commit(turn)
    return s, namespace, record, session


async def test_a_kept_caller_costs_one_lookup_and_a_revoked_grant_is_refused_next(
    api: Api, settings: Settings, database: Database, embedder: Embedder
) -> None:
    """A client's caller is built once (its principal, its policies) and answers later
    requests after one lookup; a grant removed, a binding removed, or a policy deleted
    is honoured by the very next request, and granting again works at once (R70, R71)."""
    _, namespace, record, _ = await _memory_world(api)
    issued_token = await bearer(api, kind="client")
    policy = f"readers{uuid.uuid4().hex[:6]}"
    async with database.session() as db:
        principal = await auth.find_principal(db, ref=issued_token[: auth.PREFIX_LENGTH])
        await policies.create_policy(db, namespace=namespace, name=policy)
        for pattern in (f"{namespace}.AgentMemory.indexes.*", f"{namespace}.AgentMemory.document"):
            await policies.add_grant(
                db, namespace=namespace, name=policy, privilege="SELECT", pattern=pattern
            )
        await policies.bind(
            db,
            namespace=namespace,
            name=policy,
            subject_type="principal",
            subject=str(principal.id),
        )
        await db.commit()

    async def change(**kw: Any) -> None:
        async with database.session() as db:
            for name, call in kw.items():
                await getattr(policies, name)(db, namespace=namespace, name=policy, **call)
            await db.commit()

    async with _client(settings, database, embedder) as client:
        with _Sent(database) as built:
            first = await _post(client, issued_token, MEMORY, id=record)
        assert first["data"]["agentMemory"]["current"]["summary"] == "SENTINEL-kept caller"
        with _Sent(database) as kept:
            again = await _post(client, issued_token, "{ __typename }")
        assert again["data"] == {"__typename": "Query"}
        assert len(kept) == 1, kept  # the token's lookup, nothing else
        assert len(built) > len(kept) + 1  # the first also read the policies and the record

        grant = {"privilege": "SELECT", "pattern": f"{namespace}.AgentMemory.document"}
        await change(remove_grant=grant)
        refused = await _post(client, issued_token, MEMORY, id=record)
        # refused as an unknown id is (docs/security.md, "Refusals look like absence")
        assert _code(refused) == "NOT_FOUND" and "SENTINEL" not in str(refused)
        await change(add_grant=grant)
        granted = await _post(client, issued_token, MEMORY, id=record)
        assert granted["data"]["agentMemory"]["current"]["summary"] == "SENTINEL-kept caller"

        binding = {"subject_type": "principal", "subject": str(principal.id)}
        await change(unbind=binding)
        assert _code(await _post(client, issued_token, MEMORY, id=record)) == "NOT_FOUND"
        await change(bind=binding)
        assert _code(await _post(client, issued_token, MEMORY, id=record)) is None
        await change(delete_policy={})
        assert _code(await _post(client, issued_token, MEMORY, id=record)) == "NOT_FOUND"


async def test_a_kept_caller_is_refused_once_its_token_is_revoked_or_expired(
    api: Api, settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Revoking a token, or its expiry passing, is honoured by the next request: 401
    UNAUTHENTICATED, and nothing ran."""
    s, _, _, _ = await _memory_world(api)
    runtime = await bearer(api, kind="runtime", agent_id=s.agent_id)
    expiring = await bearer(api, kind="runtime", agent_id=s.agent_id)
    async with _client(settings, database, embedder) as client:
        for token in (runtime, expiring):
            for _ in range(3):  # kept after the first
                assert (await _post(client, token, "{ __typename }"))["status"] == 200
        async with database.session() as db:
            await auth.revoke_principal(db, ref=runtime[: auth.PREFIX_LENGTH])
            await db.execute(
                update(Principal)
                .where(Principal.token_hash == auth.hash_token(expiring))  # type: ignore[arg-type]
                .values(expires_at=datetime.now(UTC) + timedelta(milliseconds=300))
            )
            await db.commit()
        revoked = await _post(client, runtime, "{ __typename }")
        assert revoked["status"] == 401 and "revoked" in revoked["errors"][0]["message"]
        assert (await _post(client, expiring, "{ __typename }"))["status"] == 200
        async with database.session() as db:
            await db.execute(text("SELECT pg_sleep(0.4)"))
        expired = await _post(client, expiring, "{ __typename }")
        assert expired["status"] == 401 and "expired" in expired["errors"][0]["message"]


async def test_a_dropped_connection_is_replaced_without_a_failed_request(
    api: Api,
    settings: Settings,
    own_database: Database,
    embedder: Embedder,
    database_url: URL,
) -> None:
    """No ping precedes a request; a pooled connection whose server process ended (a
    restart, a terminated backend) is replaced when it is taken from the pool, and the
    request runs as if nothing happened."""
    s, _, record, _ = await _memory_world(api)
    token = await bearer(api, kind="runtime", agent_id=s.agent_id)
    assert own_database.engine is not None
    backends: list[int] = []
    event.listen(
        own_database.engine.sync_engine,
        "connect",
        lambda connection, _: backends.append(connection.driver_connection.pgconn.backend_pid),
    )
    dsn = database_url.set(drivername="postgresql").render_as_string(hide_password=False)
    async with _client(settings, own_database, embedder) as client:
        for _ in range(3):
            body = await _post(client, token, MEMORY, id=record)
            assert body["data"]["agentMemory"]["current"]["summary"] == "SENTINEL-kept caller"
        assert backends
        with psycopg.connect(dsn, autocommit=True) as conn:
            for pid in backends:
                conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        killed = list(backends)
        for _ in range(3):
            body = await _post(client, token, MEMORY, id=record)
            assert body["status"] == 200 and _code(body) is None, body
            assert body["data"]["agentMemory"]["current"]["summary"] == "SENTINEL-kept caller"
        assert set(backends) - set(killed), "a fresh connection took the dead one's place"


SEARCH = """mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q}) { execution { id status } results { score } } }"""


async def test_a_runtimes_statements_stay_prepared_on_its_connection(
    api: Api, settings: Settings, own_database: Database, embedder: Embedder
) -> None:
    """After a search the connection goes back to the pool with its transaction
    committed and nothing run after it, so the statements the driver prepared (those
    sent five times) stay prepared: no ROLLBACK, which would make it deallocate them
    all. Checked on the server, in pg_prepared_statements of the pool's connection."""
    s, _, _, session = await _memory_world(api)
    token = await bearer(api, kind="runtime", agent_id=s.agent_id)
    turn = await s.turn(session)
    async with _client(settings, own_database, embedder) as client:
        for i in range(8):
            body = await _post(client, token, SEARCH, turn=turn, q=f"kept caller {i}")
            assert body["data"]["searchMemory"]["execution"]["status"] == "SUCCEEDED", body
            assert body["data"]["searchMemory"]["results"]
    assert own_database.engine is not None
    async with own_database.engine.connect() as conn:
        prepared = (
            await conn.execute(text("SELECT statement FROM pg_prepared_statements"))
        ).scalars()
        statements = [" ".join(p.split()) for p in prepared]
    # the token's lookup and the search (its turn held, ranked, recorded) were sent eight
    # times each
    assert any("FROM principals" in p for p in statements), statements
    assert any("WITH scope AS MATERIALIZED" in p for p in statements), statements
