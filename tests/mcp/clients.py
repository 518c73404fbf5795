"""The official MCP SDK's client over Streamable HTTP, as the tests connect it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from memory_mcp.operations import mutation
from memory_mcp.tools import SPECS, graphql_input
from tests.auth_helpers import run_as


@asynccontextmanager
async def connected(
    url: str, token: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with ``url``'s ``/mcp``, the token and ``headers``
    sent with every request."""
    sent = {"authorization": f"Bearer {token}", **(headers or {})}
    async with (
        httpx.AsyncClient(headers=sent, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def over_graphql(
    api: Any, token: str, tool: str, arguments: dict[str, Any], turn: dict[str, Any]
) -> Any:
    """The same call as the GraphQL mutation of ``tool``, in ``turn`` (its turnId, ...),
    as the bearer of ``token``."""
    spec = SPECS[tool]
    document = mutation("Direct", spec.mutation, spec.input_type, "execution { id }")
    variables = {"input": {**graphql_input(spec, arguments), **turn}}
    return await run_as(api, token, document, **variables)
