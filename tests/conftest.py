"""Shared fixtures: a real PostgreSQL (embedded, fresh database per run, migrated),
the real embedding model, and the real schema executed with a real context."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import URL

from server import migrate
from server.database import Database, normalise_url
from server.embedded import EmbeddedPostgres
from server.embedding import Embedder
from server.settings import Settings


@pytest.fixture(scope="session")
def citus_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """With AGENT_MEMORY_TEST_CITUS set (``make test-citus``): a coordinator and two
    workers on free localhost ports, from the Citus ``make citus`` builds, stopped at the
    end of the run (or, when the variable names a directory, the cluster left running
    there by ``python -m server.citus.local start DIR``). Otherwise None."""
    wanted = os.environ.get("AGENT_MEMORY_TEST_CITUS")
    if not wanted:
        yield None
        return
    from server.citus.build import home, installed
    from server.citus.local import LocalCluster

    pginstall = installed(home())
    if pginstall is None:
        pytest.skip("no Citus built here: run `make citus` (it says why it cannot)")
    if Path(wanted).is_dir():
        yield LocalCluster.attach(pginstall, Path(wanted))
        return
    with LocalCluster(pginstall, tmp_path_factory.mktemp("citus")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory, citus_cluster: Any) -> Iterator[URL]:
    """A fresh, migrated database on the embedded server (or on TEST_DATABASE_URL's server,
    or on the Citus cluster, migrated with ``agent-memory migrate --citus``)."""
    name = f"agent_memory_test_{uuid.uuid4().hex[:8]}"
    if citus_cluster is not None:
        yield citus_cluster.create_database(name)
        citus_cluster.drop_database(name)
        return
    external = os.environ.get("AGENT_MEMORY_TEST_DATABASE_URL")
    embedded: EmbeddedPostgres | None = None
    if external:
        admin = normalise_url(external)
    else:
        embedded = EmbeddedPostgres(tmp_path_factory.mktemp("pg"), database="postgres")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            admin = embedded.start()
    admin_dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name)
    migrate.upgrade(url)
    yield url
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if embedded is not None:
        embedded.stop()


@pytest.fixture(scope="session")
def settings(database_url: URL) -> Settings:
    return Settings(database_url=database_url.render_as_string(hide_password=False), dev=True)


@pytest.fixture(scope="session")
def embedder() -> Iterator[Embedder]:
    model = Embedder()
    model.load()
    yield model
    model.close()


@pytest.fixture(scope="session")
async def database(settings: Settings) -> AsyncIterator[Database]:
    db = Database(settings)
    await db.connect()
    yield db
    await db.dispose()


@pytest.fixture(scope="session")
def schema() -> Any:
    from resolvers.schema import build_schema

    return build_schema()


@dataclass
class Api:
    """Runs operations through ``schema.execute`` with a fresh real context each time."""

    schema: Any
    database: Database
    embedder: Embedder
    settings: Settings
    statements: int = 0
    identity: Any = None  # the caller; default: tests.auth_helpers.full_caller()

    async def execute(self, query: str, **variables: Any) -> Any:
        from resolvers.context import make_context
        from tests.auth_helpers import full_caller

        context = make_context(
            database=self.database,
            embedder=self.embedder,
            settings=self.settings,
            identity=self.identity or full_caller(),
        )
        return await self.schema.execute(
            query, variable_values=variables or None, context_value=context
        )

    async def ok(self, query: str, **variables: Any) -> dict[str, Any]:
        result = await self.execute(query, **variables)
        assert result.errors is None, [(e.message, e.extensions) for e in result.errors or []]
        return dict(result.data)

    async def error(self, query: str, **variables: Any) -> tuple[str, dict[str, Any]]:
        """The first error's message and extensions; fails if the call succeeded."""
        result = await self.execute(query, **variables)
        assert result.errors, f"expected an error, got {result.data}"
        return result.errors[0].message, dict(result.errors[0].extensions or {})

    def count_statements(self) -> Any:
        api = self

        class _Counter:
            def __enter__(self) -> _Counter:
                api.statements = 0
                event.listen(api.database.engine.sync_engine, "before_cursor_execute", _count)
                return self

            def __exit__(self, *exc: object) -> None:
                event.remove(api.database.engine.sync_engine, "before_cursor_execute", _count)

        def _count(*args: Any, **kwargs: Any) -> None:
            api.statements += 1

        return _Counter()


@pytest.fixture(scope="session")
def api(schema: Any, database: Database, embedder: Embedder, settings: Settings) -> Api:
    return Api(schema=schema, database=database, embedder=embedder, settings=settings)
