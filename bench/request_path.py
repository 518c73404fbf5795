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
weighs on all of them alike. ``BENCH_BASELINE_TREE`` (another checkout of the project)
serves that tree beside this one and sends every measured request to both, in
alternating order: the before/after table of docs/scaling.md, measured in one run.
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
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench import common
from server.services import agents, auth, turns

TRIVIAL = "{ __typename }"
SEARCH = """
mutation($turn: ID!, $q: String!) {
  searchMemory(input: {turnId: $turn, query: $q, limit: 10}) {
    results { score version { id summary } }
  }
}"""
BEGIN = "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id } } }"
RECALL = """mutation($t: ID!, $q: String!) {
  recall(input: {turnId: $t, query: $q}) { recorded text } }"""
ADD = """mutation($t: ID!, $s: String!) {
  addMemory(input: {turnId: $t, summary: $s}) { memories { id } } }"""
COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { id status } } }"

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
async def served(url: Any, tree: Path | None = None) -> AsyncIterator[str]:
    """``agent-memory serve`` on a free port, against ``url``; its base URL once healthy.
    ``tree``: another checkout of the project to serve instead of this one (its code, this
    interpreter; the schema as this tree migrated it)."""
    port = _free_port()
    env = {
        **os.environ,
        "AGENT_MEMORY_DATABASE_URL": url.render_as_string(hide_password=False),
        "AGENT_MEMORY_PORT": str(port),
        "AGENT_MEMORY_DEV": "0",
        "AGENT_MEMORY_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
    }
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", *(["--no-migrate"] if tree else [])],
        env=env,
        cwd=tree,
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


@dataclass
class _Figures:
    """One server's timings, in seconds."""

    trivial: list[float] = field(default_factory=list)
    search: list[float] = field(default_factory=list)
    embedding: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)
    steps: dict[str, list[float]] = field(
        default_factory=lambda: {"begin": [], "recall": [], "add": [], "commit": []}
    )
    rps: list[float] = field(default_factory=list)


async def measure(ctx: dict[str, Any], owner: common.Owner, p: dict[str, Any]) -> dict[str, Any]:
    """The HTTP figures of ``owner`` (an agent of the loaded table): prints the tables and
    returns the figures, with the targets' ratios.

    With ``BENCH_BASELINE_TREE`` naming another checkout of the project (``git archive
    <commit> | tar -x -C <dir>``), its server runs beside this tree's, every measured
    request goes to both in alternating order, and the tables compare the two."""
    baseline = os.environ.get("BENCH_BASELINE_TREE")
    db = ctx["db"]
    async with db.session() as s:
        issued = await auth.create_principal(
            s, kind="runtime", name="bench", agent_id=owner.agent_id
        )
        open_turns = [
            str((await turns.begin_turn(s, session_id=owner.session_id)).turn.id)
            for _ in range(p["clients"] + 1)
        ]
        turn_session = str((await agents.create_session(s, agent_id=owner.agent_id)).id)
        await s.commit()
    model = common.embedder(cache=False)
    vocabulary = common.extra_words(20_000, seed=2)
    texts = iter(common.zipf_texts(80_000, words=5, vocabulary=vocabulary, seed=99))
    headers = {"Authorization": f"Bearer {issued.token}"}
    cleanup = psycopg.connect(common.dsn(ctx["url"]), autocommit=True)
    trees: list[Path | None] = [None] if baseline is None else [None, Path(baseline)]
    try:
        async with AsyncExitStack() as stack:
            runs = []
            for tree in trees:
                base = await stack.enter_async_context(served(ctx["url"], tree))
                http = await stack.enter_async_context(
                    httpx.AsyncClient(base_url=base, headers=headers, timeout=30)
                )
                runs.append(
                    _Run(_Client(http), model, texts, cleanup, open_turns, turn_session, tree)
                )
            await _interleaved(runs, p)
            for run in runs:  # one server at a time, the other idle
                run.out.rps.append(await _throughput(run.client.client, open_turns[1:], texts, p))
    finally:
        cleanup.execute(_CLEANUP, {"s": turn_session})
        cleanup.close()
        model.close()
    figures = {run.tree: run.out for run in runs}
    report = _report(p, figures[None])
    if baseline is not None:
        report["baseline"] = _report(p, figures[Path(baseline)], title=f"baseline {baseline}")
        _compare(report["baseline"], report)
    return report


@dataclass
class _Run:
    """One server's client and what it measured."""

    client: _Client
    model: Any
    texts: Any
    cleanup: psycopg.Connection[Any]
    open_turns: list[str]
    turn_session: str
    tree: Path | None
    out: _Figures = field(default_factory=_Figures)

    async def search(self) -> None:
        await self.client.ok(SEARCH, turn=self.open_turns[0], q=next(self.texts))

    async def embedding(self) -> None:
        await self.model.embed_query(f"{next(self.texts)} {uuid.uuid4().hex[:6]}")

    async def trivial(self) -> None:
        await self.client.ok(TRIVIAL)

    async def turn(self, steps: dict[str, list[float]]) -> None:
        """begin, recall, add, commit; the record it added is removed after (untimed)."""

        async def begin() -> str:
            got = await self.client.ok(BEGIN, s=self.turn_session)
            return str(got["beginTurn"]["turn"]["id"])

        t = await _timed(begin, steps["begin"])
        await _timed(lambda: self.client.ok(RECALL, t=t, q=next(self.texts)), steps["recall"])
        await _timed(lambda: self.client.ok(ADD, t=t, s=next(self.texts)), steps["add"])
        await _timed(lambda: self.client.ok(COMMIT, t=t), steps["commit"])

    async def a_turn(self) -> None:
        """A whole turn between its four trivial requests and two embeddings."""
        for _ in range(4):
            await _timed(self.trivial, self.out.trivial)
        await _timed(self.embedding, self.out.embedding)
        await _timed(lambda: self.turn(self.out.steps), self.out.turn)
        await _timed(self.embedding, self.out.embedding)
        self.cleanup.execute(_CLEANUP, {"s": self.turn_session})


async def _interleaved(runs: list[_Run], p: dict[str, Any]) -> None:
    """Every server warmed, then trivial, search and embedding, then whole turns, each
    step sent to every server in turn, which goes first alternating."""
    for run in runs:
        for _ in range(3):
            await run.trivial()
            await run.search()
            await run.turn(_Figures().steps)
        run.cleanup.execute(_CLEANUP, {"s": run.turn_session})
    for i in range(p["http"]):
        for run in runs if i % 2 == 0 else runs[::-1]:
            await _timed(run.trivial, run.out.trivial)
            await _timed(run.search, run.out.search)
            await _timed(run.embedding, run.out.embedding)
    for i in range(p["turns"]):
        for run in runs if i % 2 == 0 else runs[::-1]:
            await run.a_turn()


async def _throughput(
    http: httpx.AsyncClient, open_turns: list[str], texts: Any, p: dict[str, Any]
) -> float:
    """searchMemory requests/s with one client per open turn."""
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


def _report(p: dict[str, Any], f: _Figures, *, title: str = "") -> dict[str, Any]:
    t, s, e, w = _p50(f.trivial), _p50(f.search), _p50(f.embedding), _p50(f.turn)
    rps = statistics.median(f.rps)
    turn_floor = 4 * t + 2 * e
    size = f"{p['agents'][-1]:,}"
    common.table(
        f"(b) over HTTP, one client, {size} records/agent: p50 ms {title}",
        ["request", "p50", "p99"],
        [
            ("{ __typename }", t, _p99(f.trivial)),
            ("embedding alone", e, _p99(f.embedding)),
            ("searchMemory", s, _p99(f.search)),
            *((f"  turn: {name}", _p50(v), _p99(v)) for name, v in f.steps.items()),
            ("whole turn", w, _p99(f.turn)),
        ],
    )
    common.table(
        f"request path targets (issue 23, target 4) {title}",
        ["figure", "value", "target"],
        [
            ("searchMemory - (trivial + embedding), ms", s - t - e, f"<= {SEARCH_SLACK_MS}"),
            ("turn / (4 trivial + 2 embeddings)", w / turn_floor, f"<= {TURN_FACTOR}"),
            (f"searchMemory requests/s, {p['clients']} clients", rps, ""),
        ],
    )
    return {
        "b_http": {
            "records_per_agent": p["agents"][-1],
            "p50_ms": s,
            "p99_ms": _p99(f.search),
            "trivial_p50_ms": t,
            "embedding_p50_ms": e,
            "search_over_floor_ms": s - t - e,
            "search_target_met": s - t - e <= SEARCH_SLACK_MS,
            "turn_p50_ms": w,
            "turn_steps_p50_ms": {name: _p50(v) for name, v in f.steps.items()},
            "turn_ratio": w / turn_floor,
            "turn_target_met": w / turn_floor <= TURN_FACTOR,
        },
        "c_rps": {"clients": p["clients"], "requests_per_s": rps},
    }


def _compare(before: dict[str, Any], after: dict[str, Any]) -> None:
    b, a = before["b_http"], after["b_http"]
    rows = [
        (name, b[key], a[key])
        for name, key in (
            ("{ __typename } p50 ms", "trivial_p50_ms"),
            ("embedding alone p50 ms", "embedding_p50_ms"),
            ("searchMemory p50 ms", "p50_ms"),
            ("searchMemory - (trivial + embedding), ms", "search_over_floor_ms"),
            ("whole turn p50 ms", "turn_p50_ms"),
            ("turn / (4 trivial + 2 embeddings)", "turn_ratio"),
        )
    ]
    rows += [
        (f"  turn: {k} p50 ms", b["turn_steps_p50_ms"][k], v)
        for k, v in a["turn_steps_p50_ms"].items()
    ]
    rows.append(
        (
            "searchMemory requests/s",
            before["c_rps"]["requests_per_s"],
            after["c_rps"]["requests_per_s"],
        )
    )
    common.table(
        "before (baseline tree) and after (this tree), same run",
        ["figure", "before", "after"],
        rows,
    )


def _p99(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000
