"""A live server for the MCP tests: the real app (``create_app``) served by uvicorn on a
free localhost port, in the tests' own event loop, one per module; the session's
database and embedding model are shared with it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import uvicorn

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def live(settings: Settings, database: Database, embedder: Embedder) -> AsyncIterator[str]:
    """The server's base URL."""
    app = create_app(settings, database=database, embedder=embedder)
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task
