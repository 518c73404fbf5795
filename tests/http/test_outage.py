"""While PostgreSQL is down, a call answers HTTP 503 with code UNAVAILABLE: a retryable
outage a client can tell from a bug's INTERNAL (item 8 of issue 22; docs/security.md,
"Errors at the HTTP boundary"). A server of its own is stopped under a running app."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

from server import migrate
from server.app import create_app
from server.database import Database
from server.embedded import EmbeddedPostgres
from server.embedding import Embedder
from server.settings import Settings
from tests.auth_helpers import full_caller


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[EmbeddedPostgres, URL]]:
    server = EmbeddedPostgres(tmp_path / "pg", database="outage")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        url = server.start()
    migrate.upgrade(url)
    yield server, url
    server.stop()


async def test_a_database_that_is_down_answers_503_unavailable(
    own_server: tuple[EmbeddedPostgres, URL], settings: Settings, embedder: Embedder
) -> None:
    server, url = own_server
    own = settings.model_copy(update={"database_url": url.render_as_string(hide_password=False)})
    database = Database(own)
    await database.connect()
    query = {"query": "{ namespaces }"}
    try:
        apps = {
            "as a caller the app trusts": create_app(
                own, database=database, embedder=embedder, caller=full_caller()
            ),
            "with a token to look up": create_app(own, database=database, embedder=embedder),
        }
        for app in apps.values():
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test"
            ) as client:
                token = {"authorization": "Bearer amk_unknown"}
                up = await client.post("/graphql", json=query, headers=token)
                assert up.status_code in (200, 401)
        server.stop()
        for name, app in apps.items():
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test"
            ) as client:
                down = await client.post("/graphql", json=query, headers=token)
                assert down.status_code == 503, (name, down.text)
                (error,) = down.json()["errors"]
                assert error["extensions"] == {"code": "UNAVAILABLE"}, name
                assert "retry" in error["message"] and "psycopg" not in down.text
                assert (await client.get("/healthz")).status_code == 503
    finally:
        await database.dispose()
