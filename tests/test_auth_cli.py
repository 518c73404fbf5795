"""``agent-memory token …`` and ``agent-memory policy …`` against the test database."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from server.cli import main
from server.database import Database
from server.errors import UnauthenticatedError
from server.services import auth
from server.settings import Settings


@pytest.fixture
def cli_env(database_url: URL, monkeypatch: pytest.MonkeyPatch) -> URL:
    monkeypatch.setenv(
        "AGENT_MEMORY_DATABASE_URL", database_url.render_as_string(hide_password=False)
    )
    return database_url


def _authenticate(url: URL, token: str) -> str:
    async def run() -> str:
        database = Database(Settings(), url=url)
        await database.connect()
        try:
            async with database.session() as db:
                return (await auth.authenticate(db, token=token)).kind
        finally:
            await database.dispose()

    return asyncio.run(run())


def test_token_create_prints_the_token_once_and_list_shows_only_its_prefix(
    cli_env: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "token",
                "create",
                "--kind",
                "client",
                "--name",
                "cli dashboard",
                "--expires-in",
                "30d",
                "--quiet",
            ]
        )
        == 0
    )
    token = capsys.readouterr().out.strip()
    assert token.startswith(auth.TOKEN_MARK)
    assert _authenticate(cli_env, token) == "client"
    assert main(["token", "list"]) == 0
    listing = capsys.readouterr().out
    assert token[: auth.PREFIX_LENGTH] in listing
    assert token not in listing
    assert main(["token", "revoke", token[: auth.PREFIX_LENGTH]]) == 0
    assert "revoked" in capsys.readouterr().out
    with pytest.raises(UnauthenticatedError):
        _authenticate(cli_env, token)


def test_token_create_refuses_a_runtime_bound_to_nothing(
    cli_env: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "create", "--kind", "runtime", "--name", "rt"]) == 1
    assert "BAD_INPUT" in capsys.readouterr().err


def test_policy_commands_create_grant_bind_list_revoke(
    cli_env: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    assert main(["token", "create", "--kind", "client", "--name", "dash", "--quiet"]) == 0
    prefix = capsys.readouterr().out.strip()[: auth.PREFIX_LENGTH]
    assert main(["policy", "create", ns, "readers"]) == 0
    assert main(["policy", "grant", ns, "readers", "SELECT", f"{ns}.AgentMemory.indexes.*"]) == 0
    assert main(["policy", "grant", ns, "readers", "SELECT", f"{ns}.AgentMemory.document"]) == 0
    assert main(["policy", "bind", ns, "readers", "--principal", prefix]) == 0
    assert main(["policy", "bind", ns, "readers", "--tool", "export"]) == 0
    capsys.readouterr()
    assert main(["policy", "list", "--namespace", ns]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0] == f"{ns}/readers"
    assert f"  grant SELECT {ns}.AgentMemory.document" in listing
    assert f"  grant SELECT {ns}.AgentMemory.indexes.*" in listing
    assert "  bound to tool export" in listing
    assert sum(line.startswith("  bound to principal ") for line in listing) == 1
    assert main(["policy", "revoke", ns, "readers", "SELECT", f"{ns}.AgentMemory.document"]) == 0
    assert main(["policy", "unbind", ns, "readers", "--tool", "export"]) == 0
    capsys.readouterr()
    assert main(["policy", "list", "--namespace", ns]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert f"  grant SELECT {ns}.AgentMemory.document" not in listing
    assert "  bound to tool export" not in listing
    assert main(["policy", "delete", ns, "readers"]) == 0
    capsys.readouterr()
    assert main(["policy", "list", "--namespace", ns]) == 0
    assert capsys.readouterr().out == ""


def test_policy_grant_with_a_bad_pattern_fails_with_the_pattern_named(
    cli_env: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    assert main(["policy", "create", ns, "p"]) == 0
    assert main(["policy", "grant", ns, "p", "SELECT", f"{ns}.Agent*"]) == 1
    err = capsys.readouterr().err
    assert "BAD_INPUT" in err and f"{ns}.Agent*" in err


@pytest.fixture
def fresh_url(database_url: URL) -> Iterator[URL]:
    """A migrated database of its own, with no principal at all."""
    import psycopg

    from server import migrate

    name = f"agent_memory_dev_{uuid.uuid4().hex[:8]}"
    admin = database_url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = database_url.set(database=name)
    migrate.upgrade(url)
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _reads(url: URL, token: str, namespace: str) -> dict[str, bool]:
    """What the token's chain lets it read in ``namespace``: sessions, memory (R71)."""
    from server.domain.grants import memory_read_requirements, session_requirements
    from server.services.chain import load_caller

    async def work(db: Any) -> dict[str, bool]:
        caller = await load_caller(db, principal=await auth.authenticate(db, token=token))
        return {
            "sessions": caller.chain.explain_all(session_requirements(namespace)).allowed,
            "memory": caller.chain.explain_all(memory_read_requirements(namespace)).allowed,
        }

    return dict(_in_database(url, work))


def test_dev_mode_first_start_prints_an_admin_token_once(
    fresh_url: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    """The token make run prints opens the dashboard on the walkthrough's data: it reads
    every namespace's sessions and memory through the dev policy; later starts print the
    links alone."""
    from server.cli_auth import print_dev_admin_token

    print_dev_admin_token(fresh_url, base="http://127.0.0.1:8000")
    printed = capsys.readouterr().out
    token = next(w for w in printed.split() if w.startswith(auth.TOKEN_MARK))
    assert _authenticate(fresh_url, token) == "admin"
    assert f"http://127.0.0.1:8000/dashboard#token={token}" in printed
    assert _reads(fresh_url, token, "financial") == {"sessions": True, "memory": True}
    assert "dev/read-everything" in printed
    print_dev_admin_token(fresh_url, base="http://127.0.0.1:8000")
    again = capsys.readouterr().out
    assert auth.TOKEN_MARK not in again and "http://127.0.0.1:8000/dashboard" in again


def test_cli_commands_say_nothing_of_a_superuser_role(
    cli_env: URL, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded PostgreSQL's role is a superuser: a server outside dev mode warns of
    it (tests/test_database_roles.py), an operator's command does not, dev mode or not."""
    import logging

    with caplog.at_level(logging.WARNING, logger="server.database"):
        assert main(["token", "list"]) == 0
    assert not [r for r in caplog.records if "superuser" in r.getMessage()]
    assert "superuser" not in capsys.readouterr().err


def _in_database(url: URL, work: Any) -> Any:
    """Runs ``work(db)`` in a session of the database at ``url`` and returns its result."""

    async def run() -> Any:
        database = Database(Settings(), url=url)
        await database.connect()
        try:
            async with database.session() as db:
                return await work(db)
        finally:
            await database.dispose()

    return asyncio.run(run())


def _alembic_version(url: URL) -> str:
    async def work(db: Any) -> str:
        return str(await db.scalar(text("SELECT version_num FROM alembic_version")))

    return str(_in_database(url, work))


def _create_agent(url: URL, namespace: str, name: str) -> uuid.UUID:
    from server.services.agents import create_agent

    async def work(db: Any) -> uuid.UUID:
        agent = await create_agent(db, namespace=namespace, name=name)
        await db.commit()
        return agent.id

    return uuid.UUID(str(_in_database(url, work)))


def test_migrate_down_needs_a_revision(cli_env: URL, capsys: pytest.CaptureFixture[str]) -> None:
    """``migrate --down`` alone names no revision to go down to: an error, not a silent
    "migrated to head", and the database is left as it was."""
    before = _alembic_version(cli_env)
    assert main(["migrate", "--down"]) == 2
    out, err = capsys.readouterr()
    assert "migrated" not in out
    assert "--down needs the revision" in err
    assert _alembic_version(cli_env) == before


def test_token_create_takes_the_agent_by_name_as_policy_bind_does(
    cli_env: URL, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    agent_id = _create_agent(cli_env, ns, "support")
    assert (
        main(
            [
                "token",
                "create",
                "--kind",
                "runtime",
                "--name",
                "rt",
                "--agent",
                "support",
                "--namespace",
                ns,
            ]
        )
        == 0
    )
    assert f"bound={agent_id}" in capsys.readouterr().out
    assert (
        main(
            [
                "token",
                "create",
                "--kind",
                "runtime",
                "--name",
                "rt",
                "--agent",
                "nobody",
                "--namespace",
                ns,
            ]
        )
        == 1
    )
    assert (
        capsys.readouterr().err.strip() == f"error (NOT_FOUND): no agent nobody in namespace {ns}"
    )
