"""Outside dev mode the server warns when its database role is a superuser or has
BYPASSRLS (docs/security.md, "Database roles"); an ordinary app role is quiet."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.engine import URL

from server.database import Database
from server.settings import Settings


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def app_role(database_url: URL) -> Iterator[str]:
    """A login role that owns nothing and may only use the tables (the recommended app
    role), dropped afterwards."""
    role = f"am_app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS')
        conn.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"'
        )
    yield role
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA public FROM "{role}"')
        conn.execute(f'REVOKE ALL ON SCHEMA public FROM "{role}"')
        conn.execute(f'DROP ROLE "{role}"')


async def _connect(url: URL, *, dev: bool) -> None:
    database = Database(Settings(database_url=url.render_as_string(hide_password=False), dev=dev))
    await database.connect()
    await database.dispose()


async def test_superuser_role_is_warned_about_outside_dev_mode(
    database_url: URL, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="server.database"):
        await _connect(database_url, dev=False)
    assert any("superuser" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="server.database"):
        await _connect(database_url, dev=True)
    assert not caplog.records


async def test_an_ordinary_app_role_is_not_warned_about(
    database_url: URL, app_role: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="server.database"):
        await _connect(database_url.set(username=app_role), dev=False)
    assert not [
        r for r in caplog.records if "BYPASSRLS" in r.getMessage() or "superuser" in r.getMessage()
    ]
