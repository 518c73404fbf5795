"""``bench mcp``: an MCP ``search_memory`` call against the GraphQL ``searchMemory``.

One server process (``agent-memory serve``), one runtime token, the same agent, the
same open turn. Each round sends a distinct query (no embedding cache hit) as:

- ``searchMemory`` over ``/graphql`` (httpx), selecting what the MCP tool selects
  (so both do the same work in the schema), ``limit: 10``;
- ``search_memory`` over ``/mcp`` through the official SDK's client (Streamable HTTP),
  bound to the turn by ``Agent-Memory-Turn``, ``limit: 10``;
- ``search_memory`` unbound (a turn of its own: ``beginTurn``, the search,
  ``commitTurn``), shown for what a desktop client's call costs; no target.

The kinds alternate, which goes first alternating each round, so a busy machine weighs
on them alike. Target: MCP p50 / GraphQL p50 <= 1.2, at each agent size (1k and 10k
records; the full run adds 100k). The records are those of ``bench search``'s loader
(15 Zipf-like words each, vectors blended from real sentence embeddings), in a
database of their own, kept for the next run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx
from mcp import ClientSession

from bench import common, search
from bench.request_path import served
from memory_mcp.results import SELECTIONS
from server.services import auth, turns
from tests.mcp.clients import connected

GRAPHQL = f"""mutation($turn: ID!, $q: String!) {{
  searchMemory(input: {{turnId: $turn, query: $q, limit: 10}}) {{ {SELECTIONS["search_memory"]} }}
}}"""
TARGET = 1.2


def plan(quick: bool) -> dict[str, Any]:
    agents = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    return {
        "name": f"bench_mcp_{'quick' if quick else 'full'}_v1",
        "agents": agents,
        "total": sum(agents),
        "bases": 200,
        "rounds": 60 if quick else 200,
    }


def _p50(seconds: list[float]) -> float:
    return round(statistics.median(seconds) * 1000, 2)


async def _timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> None:
    start = time.perf_counter()
    await call()
    into.append(time.perf_counter() - start)


async def _measure(ctx: dict[str, Any], owner: common.Owner, p: dict[str, Any]) -> dict[str, Any]:
    async with ctx["db"].session() as s:
        token = (
            await auth.create_principal(s, kind="runtime", name="bench", agent_id=owner.agent_id)
        ).token
        turn = str((await turns.begin_turn(s, session_id=owner.session_id)).turn.id)
        await s.commit()
    vocabulary = common.extra_words(20_000, seed=2)
    texts = iter(common.zipf_texts(20_000, words=5, vocabulary=vocabulary, seed=7))
    auth_header = {"Authorization": f"Bearer {token}"}
    times: dict[str, list[float]] = {"graphql": [], "mcp": [], "unbound": []}
    async with AsyncExitStack() as stack:
        base = await stack.enter_async_context(served(ctx["url"]))
        http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=base, headers=auth_header, timeout=60)
        )
        bound = await stack.enter_async_context(connected(base, token, {"Agent-Memory-Turn": turn}))
        unbound = await stack.enter_async_context(connected(base, token))

        async def graphql() -> None:
            r = await http.post(
                "/graphql", json={"query": GRAPHQL, "variables": {"turn": turn, "q": next(texts)}}
            )
            assert r.status_code == 200 and "errors" not in r.json(), r.text

        async def over_mcp(session: ClientSession) -> None:
            result = await session.call_tool("search_memory", {"query": next(texts), "limit": 10})
            assert not result.isError, result.content

        calls: dict[str, Callable[[], Awaitable[None]]] = {
            "graphql": graphql,
            "mcp": lambda: over_mcp(bound),
            "unbound": lambda: over_mcp(unbound),
        }
        for call in calls.values():  # warm every path
            for _ in range(5):
                await call()
        order = list(calls)
        for i in range(p["rounds"]):
            for name in order if i % 2 == 0 else order[::-1]:
                await _timed(calls[name], times[name])
    return {name: _p50(t) for name, t in times.items()}


async def _run(quick: bool) -> dict[str, Any]:
    p = plan(quick)
    ctx = await search.load(p)
    rows, figures = [], {}
    for size, owner in zip(p["agents"], ctx["owners"], strict=False):
        got = await _measure(ctx, owner, p)
        ratio = round(got["mcp"] / got["graphql"], 3)
        rows.append([size, got["graphql"], got["mcp"], ratio, got["unbound"]])
        figures[f"agent_{size}"] = {**got, "mcp_over_graphql_p50": ratio}
    await ctx["db"].dispose()
    common.table(
        f"search_memory over MCP vs searchMemory over GraphQL, p50 ms (target <= {TARGET})",
        ["records", "GraphQL", "MCP bound", "MCP / GraphQL", "MCP unbound"],
        rows,
    )
    worst = max(f["mcp_over_graphql_p50"] for f in figures.values())
    return {**figures, "worst_ratio": worst, "target": TARGET, "met": worst <= TARGET}


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))
