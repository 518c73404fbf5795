"""A live server with real data, and Debian's Chromium driven by playwright's Python API
(no browser download: `make browser`, part of `make test`, installs the package as root)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy.engine import URL

from tests.e2e.conftest import server  # noqa: F401  (the live server process)
from tests.e2e.live import Seeded, am, client, dashboard_token, seed
from tests.e2e.test_readme import _walkthrough

ROOT = Path(__file__).resolve().parents[2]
# Screenshots go to .pytest_cache/screenshots; `make screenshots` points them at
# docs/screenshots, where the documentation shows them.
SHOTS = Path(os.environ.get("AGENT_MEMORY_SCREENSHOTS") or ROOT / ".pytest_cache" / "screenshots")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = _chromium()
    if executable is None:
        pytest.skip(
            "no chromium on PATH and it could not be installed here "
            "(`make browser` installs Debian's chromium as root with apt-get)"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def seeded(server: str, database_url: URL) -> Seeded:  # noqa: F811
    return seed(server, database_url)


@pytest.fixture(scope="module")
def admin_token(database_url: URL) -> str:
    [token] = am(
        database_url, ["token", "create", "--kind", "admin", "--name", "browser", "--quiet"]
    )
    return token


@pytest.fixture(scope="module")
def client_token(database_url: URL, seeded: Seeded) -> str:
    return dashboard_token(database_url, seeded.namespace)


@pytest.fixture
def shots() -> Path:
    """Where the tests leave screenshots, to look at the pages as a person would."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


@dataclass(frozen=True)
class Walked:
    """What the README's walkthrough made: its agent (in namespace financial), its
    session, and a client token that reads the namespace as a dashboard's does."""

    agent: str
    session: str
    token: str
    namespace: str = "financial"


@pytest.fixture(scope="module")
def walked(server: str, database_url: URL) -> Walked:  # noqa: F811
    """The README walkthrough, run as written against the live server."""
    script = _walkthrough() + '\necho "WALKED $AGENT $SESSION"\n'
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env={
            **os.environ,
            "URL": f"{server}/graphql",
            "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
            "AM": str(Path(sys.executable).parent / "agent-memory"),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    _, agent, session = done.stdout.strip().splitlines()[-1].split()
    return Walked(agent=agent, session=session, token=dashboard_token(database_url, "financial"))


@dataclass(frozen=True)
class Traced:
    """A session of 200 turns written by bench.trace, its agent and a reader's token."""

    namespace: str
    agent: str
    session: str
    token: str
    turns: int
    runtime: str  # the agent's runtime token, to write more turns


@pytest.fixture(scope="module")
def traced(server: str, database_url: URL) -> Traced:  # noqa: F811
    import uuid

    import httpx
    from agent_memory_client import (
        CreateAgentInput,
        CreateSessionInput,
        PublishAgentVersionInput,
    )

    from bench.trace import CONFIG, write_session

    namespace = f"trace{uuid.uuid4().hex[:6]}"
    [admin] = am(
        database_url, ["token", "create", "--kind", "admin", "--name", namespace, "--quiet"]
    )
    with client(server, admin) as api:
        agent = api.create_agent(
            CreateAgentInput(namespace=namespace, name="planner")
        ).create_agent.agent
        api.publish_agent_version(PublishAgentVersionInput(agent_id=agent.id, config=CONFIG))
    [runtime] = am(
        database_url,
        [
            "token",
            "create",
            "--kind",
            "runtime",
            "--name",
            namespace,
            "--agent",
            str(agent.id),
            "--quiet",
        ],
    )
    with client(server, runtime) as api:
        session = api.create_session(
            CreateSessionInput(agent_id=agent.id, external_id="trace-200")
        ).create_session.session

    async def write() -> None:
        headers = {"authorization": f"Bearer {runtime}"}
        async with httpx.AsyncClient(base_url=server, headers=headers, timeout=60) as http:
            await write_session(http, session_id=str(session.id), turns=200)

    # playwright's sync API keeps an event loop running in this thread: write from another
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, write()).result()
    return Traced(
        namespace,
        str(agent.id),
        str(session.id),
        dashboard_token(database_url, namespace),
        200,
        runtime,
    )
