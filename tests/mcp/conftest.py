"""A live server for the MCP tests (tests/live_server.py), one per module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.live_server import served


@pytest.fixture(scope="module")
async def live(settings: Settings, database: Database, embedder: Embedder) -> AsyncIterator[str]:
    """The server's base URL."""
    async with served(create_app(settings, database=database, embedder=embedder)) as url:
        yield url
