"""A live server with real data, and Debian's Chromium driven by playwright's Python API
(no browser download: `make browser`, part of `make test`, installs the package as root)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright
from sqlalchemy.engine import URL

from tests.e2e.conftest import server  # noqa: F401  (the live server process)
from tests.e2e.live import Seeded, am, dashboard_token, seed

SHOTS = Path(__file__).resolve().parents[2] / ".pytest_cache" / "screenshots"


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
