"""``bench search``'s HTTP part: the request path of a search and of a whole turn.

The server runs as ``agent-memory serve`` in a process of its own (uvicorn, the
database of the in-process part); one client sends one request at a time, with a
runtime token of the measured agent, and the figures are p50s of the same run:

- ``{ __typename }``: the trivial request (the HTTP stack, parsing, authentication);
- the query's embedding alone: the model as the server builds it, in this process,
  on texts it has not seen (no cache hit);
- ``searchMemory`` at the agent's size, distinct queries: target
  ``search p50 <= trivial p50 + embedding p50 + 5 ms``;
- a whole runtime turn (``beginTurn``, ``recall``, ``addMemory``, ``commitTurn``) in
  a session of its own, against four trivial requests and two embeddings (the
  recall's query and the record's text): target ``turn p50 <= 2 x (4 x trivial p50 +
  2 x embedding p50)``. The record each turn adds is deleted after it (untimed), so the
  agent keeps its size and its search path;
- requests/s of ``searchMemory`` with concurrent clients.

The three kinds of request are interleaved, so that a machine busy with other work
weighs on all of them alike.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import psycopg

from bench import common
from server.services import agents, auth, turns

TRIVIAL = "{ __typename }"
SEARCH = """
mutation($turn: UUID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q, limit: 10}) {
    results { score version { id summary } }
  }
}"""
BEGIN = "mutation($s: UUID!) { beginTurn(input: {sessionId: $s}) { turn { id } } }"
RECALL = """mutation($t: UUID!, $q: String!) {
  recall(input: {turnId: $t, query: $q}) { recorded text } }"""
ADD = """mutation($t: UUID!, $s: String!) {
  addMemory(input: {turnId: $t, summary: $s}) { memories { id } } }"""
COMMIT = "mutation($t: UUID!) { commitTurn(input: {turnId: $t}) { turn { id status } } }"

# The records a bench session's turns wrote, removed with what refers to them.
_CLEANUP = """
WITH r AS (SELECT id FROM memory_records WHERE session_id = %(s)s),
v AS (SELECT id FROM memory_versions WHERE record_id IN (SELECT id FROM r)),
u AS (DELETE FROM output_uses WHERE memory_version_id IN (SELECT id FROM v)),
gone AS (DELETE FROM memory_versions WHERE id IN (SELECT id FROM v))
DELETE FROM memory_records WHERE id IN (SELECT id FROM r)
"""

SEARCH_SLACK_MS = 5.0
TURN_FACTOR = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def served(url: Any) -> AsyncIterator[str]:
    """``agent-memory serve`` on a free port, against ``url``; its base URL once healthy."""
    port = _free_port()
    env = {
        **os.environ,
        "AGENT_MEMORY_DATABASE_URL": url.render_as_string(hide_password=False),
        "AGENT_MEMORY_PORT": str(port),
        "AGENT_MEMORY_DEV": "0",
        "AGENT_MEMORY_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=5) as probe:
            for _ in range(240):
                try:
                    if (await probe.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.25)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


class _Client:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def ok(self, query: str, **variables: Any) -> dict[str, Any]:
        r = await self.client.post("/graphql", json={"query": query, "variables": variables})
        data = r.json()
        assert r.status_code == 200 and not data.get("errors"), data
        return dict(data["data"])


def _p50(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


async def _timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> Any:
    start = time.perf_counter()
    out = await call()
    into.append(time.perf_counter() - start)
    return out


async def measure(ctx: dict[str, Any], owner: common.Owner, p: dict[str, Any]) -> dict[str, Any]:
    """The HTTP figures of ``owner`` (an agent of the loaded table): prints the tables and
    returns the figures, with the targets' ratios."""
    db = ctx["db"]
    async with db.session() as s:
        issued = await auth.create_principal(
            s, kind="runtime", name="bench", agent_id=owner.agent_id
        )
        open_turns = [
            (await turns.begin_turn(s, session_id=owner.session_id)).turn.id
            for _ in range(p["clients"] + 1)
        ]
        turn_session = (await agents.create_session(s, agent_id=owner.agent_id)).id
        await s.commit()
    model = common.embedder(cache=False)
    vocabulary = common.extra_words(20_000, seed=2)
    texts = iter(common.zipf_texts(40_000, words=5, vocabulary=vocabulary, seed=99))
    headers = {"Authorization": f"Bearer {issued.token}"}
    trivial: list[float] = []
    search: list[float] = []
    embedding: list[float] = []
    turn: list[float] = []
    steps: dict[str, list[float]] = {"begin": [], "recall": [], "add": [], "commit": []}
    cleanup = psycopg.connect(common.dsn(ctx["url"]), autocommit=True)
    try:
        async with (
            served(ctx["url"]) as base,
            httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http,
        ):
            client = _Client(http)
            search_turn = str(open_turns[0])

            async def one_search() -> None:
                await client.ok(SEARCH, turn=search_turn, q=next(texts))

            async def one_embedding() -> None:
                await model.embed_one(f"{next(texts)} {uuid.uuid4().hex[:6]}")

            async def one_turn() -> None:
                async def begin() -> str:
                    got = await client.ok(BEGIN, s=str(turn_session))
                    return str(got["beginTurn"]["turn"]["id"])

                t = await _timed(begin, steps["begin"])
                await _timed(lambda: client.ok(RECALL, t=t, q=next(texts)), steps["recall"])
                await _timed(lambda: client.ok(ADD, t=t, s=next(texts)), steps["add"])
                await _timed(lambda: client.ok(COMMIT, t=t), steps["commit"])

            warm = [lambda: client.ok(TRIVIAL), one_search, one_embedding, one_turn]
            for call in warm * 3:
                await call()
            cleanup.execute(_CLEANUP, {"s": turn_session})
            for name in steps:
                steps[name].clear()
            for _ in range(p["http"]):
                await _timed(lambda: client.ok(TRIVIAL), trivial)
                await _timed(one_search, search)
                await _timed(one_embedding, embedding)
            for _ in range(p["turns"]):
                for _ in range(4):
                    await _timed(lambda: client.ok(TRIVIAL), trivial)
                await _timed(one_embedding, embedding)
                await _timed(one_turn, turn)
                await _timed(one_embedding, embedding)
                cleanup.execute(_CLEANUP, {"s": turn_session})
            rps = await _throughput(http, [str(t) for t in open_turns[1:]], texts, p)
    finally:
        cleanup.execute(_CLEANUP, {"s": turn_session})
        cleanup.close()
        model.close()
    return _report(p, trivial, search, embedding, turn, steps, rps)


async def _throughput(
    http: httpx.AsyncClient, open_turns: list[str], texts: Any, p: dict[str, Any]
) -> float:
    client = _Client(http)
    done = 0
    stop = time.perf_counter() + p["seconds"]

    async def worker(turn: str) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await client.ok(SEARCH, turn=turn, q=next(texts))
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(t) for t in open_turns))
    return done / (time.perf_counter() - start)


def _report(
    p: dict[str, Any],
    trivial: list[float],
    search: list[float],
    embedding: list[float],
    turn: list[float],
    steps: dict[str, list[float]],
    rps: float,
) -> dict[str, Any]:
    t, s, e, w = _p50(trivial), _p50(search), _p50(embedding), _p50(turn)
    search_floor = t + e
    turn_floor = 4 * t + 2 * e
    size = f"{p['agents'][-1]:,}"
    common.table(
        f"(b) over HTTP, one client, {size} records/agent: p50 ms",
        ["request", "p50", "p99"],
        [
            ("{ __typename }", t, _p99(trivial)),
            ("embedding alone", e, _p99(embedding)),
            ("searchMemory", s, _p99(search)),
            *((f"  turn: {name}", _p50(v), _p99(v)) for name, v in steps.items()),
            ("whole turn", w, _p99(turn)),
        ],
    )
    common.table(
        "request path targets (issue 23, target 4)",
        ["figure", "value", "target"],
        [
            ("searchMemory - (trivial + embedding), ms", s - search_floor, f"<= {SEARCH_SLACK_MS}"),
            ("turn / (4 trivial + 2 embeddings)", w / turn_floor, f"<= {TURN_FACTOR}"),
            (f"searchMemory requests/s, {p['clients']} clients", rps, ""),
        ],
    )
    return {
        "b_http": {
            "records_per_agent": p["agents"][-1],
            "p50_ms": s,
            "p99_ms": _p99(search),
            "trivial_p50_ms": t,
            "embedding_p50_ms": e,
            "search_over_floor_ms": s - search_floor,
            "search_target_met": s - search_floor <= SEARCH_SLACK_MS,
            "turn_p50_ms": w,
            "turn_steps_p50_ms": {name: _p50(v) for name, v in steps.items()},
            "turn_ratio": w / turn_floor,
            "turn_target_met": w / turn_floor <= TURN_FACTOR,
        },
        "c_rps": {"clients": p["clients"], "requests_per_s": rps},
    }


def _p99(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000
