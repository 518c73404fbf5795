"""``python -m bench request-path``: what an agent's requests cost through the server,
against the cost of their parts, measured in the same run.

The server runs as ``agent-memory serve --workers N`` (a process of its own, the
machine's cores by default) on bench search's quick data set (an agent of 10,000
records in a table of 50,000, loaded once and kept), with a runtime token of that agent.
Figures, each a ratio of the same run (the issue's targets in brackets):

1. latency, one client, the three kinds interleaved: ``searchMemory`` p50 against the
   trivial request ``{ __typename }`` plus the query's embedding alone (the model as
   the server builds it, in this process, on texts it has not seen): the margin
   [<= 5 ms];
2. CPU per call, over ``cpu_calls`` calls of each kind (>= 500): the server's
   processes and the PostgreSQL backends, read from ``/proc``; ``searchMemory`` against
   the trivial request, with and without the query embedding's own CPU (the same
   model in this process) [<= 5x without it];
3. throughput with ``clients`` concurrent clients (keep-alive), ``searchMemory`` against
   the trivial request on the same server [>= 0.3x], its p99 against its p50 [<= 3x],
   and how it scales from 1 to 2 processes;
4. a whole runtime turn (``beginTurn``, ``recall``, ``addMemory``, ``commitTurn``) against
   four trivial requests and two embeddings [<= 1.5x];
5. what a search and a turn send to PostgreSQL (:mod:`bench.anatomy`: statements and
   round trips, counted over HTTP in this process) [a search <= 3 round trips, a turn
   <= 12], and the modules a search passes through from its resolver down [<= 8
   modules, <= 3 returns to a module it had left].

``BENCH_BASELINE_TREE`` (another checkout, ``git archive <commit> | tar -x -C <dir>``)
serves that tree beside this one: every measured request of 1, 2 and 4 goes to both, in
alternating order, for the before/after table of docs/scaling.md (5 is this tree's).
``--quick`` takes under a minute once the data set is loaded.
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

from bench import anatomy, common, search
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

TARGETS = {
    "search_over_floor_ms": ("<=", 5.0),
    "cpu_ratio_without_embedding": ("<=", 5.0),
    "rps_ratio": (">=", 0.3),
    "p99_over_p50": ("<=", 3.0),
    "turn_ratio": ("<=", 1.5),
    "search_round_trips": ("<=", 3),
    "turn_round_trips": ("<=", 12),
    "search_modules": ("<=", 8),
    "search_returns": ("<=", 3),
}
_CLOCK = os.sysconf("SC_CLK_TCK")


def plan(quick: bool) -> dict[str, Any]:
    cores = os.cpu_count() or 1
    if quick:
        return {
            "http": 40,
            "cpu_calls": 500,
            "turns": 12,
            "clients": 16,
            "seconds": 3.0,
            "workers": cores,
        }
    return {
        "http": 200,
        "cpu_calls": 1000,
        "turns": 60,
        "clients": 16,
        "seconds": 10.0,
        "workers": cores,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _takes_workers(tree: Path | None) -> bool:
    root = tree or Path(__file__).resolve().parents[1]
    return '"--workers"' in (root / "server" / "cli.py").read_text()


@dataclass
class _Served:
    base: str
    pid: int


@asynccontextmanager
async def served(url: Any, tree: Path | None = None, workers: int = 1) -> AsyncIterator[_Served]:
    """``agent-memory serve`` on a free port, against ``url``; its base URL and pid once
    healthy. ``tree``: another checkout of the project to serve instead of this one (its
    code, this interpreter; the schema as this tree migrated it); a tree without
    ``--workers`` runs one process."""
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
    args = ["--no-migrate"] if tree else []
    if _takes_workers(tree):
        args += ["--workers", str(workers)]
    server = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", *args],
        env=env,
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=5) as probe:
            for _ in range(480):
                try:
                    if (await probe.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.25)
        yield _Served(base, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)


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


def _p99(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000


async def _timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> Any:
    start = time.perf_counter()
    out = await call()
    into.append(time.perf_counter() - start)
    return out


# -- CPU, from /proc --------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of a process (all its threads), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the server's worker processes)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _backends(conn: psycopg.Connection[Any]) -> list[int]:
    """The PostgreSQL backends of the bench's database, but this connection's."""
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
    ).fetchall()
    return [int(r[0]) for r in rows]


@dataclass
class _Cpu:
    server_ms: float
    database_ms: float

    @property
    def total_ms(self) -> float:
        return self.server_ms + self.database_ms


async def _cpu_of(
    pid: int, conn: psycopg.Connection[Any], call: Callable[[], Awaitable[Any]], n: int
) -> tuple[_Cpu, list[float]]:
    """The CPU per call of ``n`` calls of ``call``: the server's processes, and the
    database's backends (those that ran it: every backend of the database but the
    bench's own); and each call's seconds."""
    server, backends = _tree(pid), _backends(conn)
    before = {p: _cpu_seconds(p) for p in server + backends}
    seconds: list[float] = []
    for _ in range(n):
        await _timed(call, seconds)
    backends = sorted(set(backends) | set(_backends(conn)))
    used = {p: _cpu_seconds(p) - before.get(p, 0.0) for p in server + backends}
    return (
        _Cpu(
            server_ms=sum(used[p] for p in server) / n * 1000,
            database_ms=sum(used[p] for p in backends) / n * 1000,
        ),
        seconds,
    )


async def _embedding_cpu_ms(model: Any, texts: Any, n: int) -> float:
    """CPU per query embedding of this process's model (texts never seen before)."""
    before = time.process_time()
    for _ in range(n):
        await model.embed_one(f"{next(texts)} {uuid.uuid4().hex[:6]}")
    return (time.process_time() - before) / n * 1000


# -- the runs --------------------------------------------------------------------------------


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
    cpu: dict[str, _Cpu] = field(default_factory=dict)
    load: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class _Run:
    """One server's client and what it measured."""

    client: _Client
    pid: int
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


async def _cpu(runs: list[_Run], p: dict[str, Any]) -> None:
    """CPU per trivial request and per search, each server in turn, the other idle."""
    for run in runs:
        for name, call in (("trivial", run.trivial), ("search", run.search)):
            run.out.cpu[name], _ = await _cpu_of(run.pid, run.cleanup, call, p["cpu_calls"])


async def _load(
    base: str, headers: dict[str, str], open_turns: list[str], texts: Any, seconds: float
) -> dict[str, Any]:
    """Requests/s, p50 and p99 with one client per open turn (keep-alive), for
    ``seconds`` each: the trivial request, then searchMemory."""
    clients = len(open_turns)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60, limits=limits) as http:
        client = _Client(http)
        calls: dict[str, Callable[[str], Awaitable[Any]]] = {
            "trivial": lambda _turn: client.ok(TRIVIAL),
            "search": lambda turn: client.ok(SEARCH, turn=turn, q=next(texts)),
        }
        for name, call in calls.items():
            took: list[float] = []
            stop = time.perf_counter() + seconds

            async def one_client(
                turn: str, call: Any = call, took: list[float] = took, stop: float = stop
            ) -> None:
                while time.perf_counter() < stop:
                    await _timed(lambda: call(turn), took)

            start = time.perf_counter()
            await asyncio.gather(*(one_client(t) for t in open_turns))
            out[name] = {
                "rps": len(took) / (time.perf_counter() - start),
                "p50_ms": _p50(took),
                "p99_ms": _p99(took),
            }
    return out


async def _wire_and_path(
    ctx: dict[str, Any], headers: dict[str, str], owner: common.Owner, texts: Any
) -> dict[str, Any]:
    """This tree's statements, round trips and modules, over HTTP in this process."""
    from server.app import create_app
    from server.embedding import Embedder

    db = ctx["db"]
    model = Embedder(cache_size=0)
    model.load()
    app = create_app(db.settings, database=db, embedder=model)
    out: dict[str, Any] = {}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers) as http,
    ):
        client = _Client(http)
        async with db.session() as s:
            turn = str((await turns.begin_turn(s, session_id=owner.session_id)).turn.id)
            session = str((await agents.create_session(s, agent_id=owner.agent_id)).id)
            await s.commit()
        for _ in range(3):
            await client.ok(SEARCH, turn=turn, q=next(texts))
        with anatomy.counted(db) as wire:
            await client.ok(SEARCH, turn=turn, q=next(texts))
        out["search_statements"], out["search_round_trips"] = (
            len(wire.statements),
            wire.round_trips,
        )
        with anatomy.followed("resolvers/search.py", "search_memory") as path:
            await client.ok(SEARCH, turn=turn, q=next(texts))
        out["search_modules"], out["search_returns"] = len(path.modules), len(path.returns)
        out["search_path"] = path.modules
        with anatomy.counted(db) as wire:
            t = (await client.ok(BEGIN, s=session))["beginTurn"]["turn"]["id"]
            await client.ok(RECALL, t=t, q=next(texts))
            await client.ok(ADD, t=t, s=next(texts))
            await client.ok(COMMIT, t=t)
        out["turn_statements"], out["turn_round_trips"] = len(wire.statements), wire.round_trips
    model.close()
    with psycopg.connect(common.dsn(ctx["url"]), autocommit=True) as conn:
        conn.execute(_CLEANUP, {"s": session})
    return out


async def _run(quick: bool) -> dict[str, Any]:
    p = plan(quick)
    data = search.plan(True)
    ctx = await search.load(data)
    owner = ctx["owners"][len(data["agents"]) - 1]  # the agent of 10,000 records
    baseline = common.baseline_tree()
    db = ctx["db"]
    async with db.session() as s:
        issued = await auth.create_principal(
            s, kind="runtime", name="bench", agent_id=owner.agent_id
        )
        open_turns = [
            str((await turns.begin_turn(s, session_id=owner.session_id)).turn.id)
            for _ in range(p["clients"])
        ]
        turn_session = str((await agents.create_session(s, agent_id=owner.agent_id)).id)
        await s.commit()
    headers = {"Authorization": f"Bearer {issued.token}"}
    threads = max(1, (os.cpu_count() or 1) // p["workers"])
    from server.embedding import Embedder

    model = Embedder(cache_size=0, workers=threads)  # as one server process builds it
    model.load()
    vocabulary = common.extra_words(20_000, seed=2)
    texts = iter(common.zipf_texts(200_000, words=5, vocabulary=vocabulary, seed=99))
    cleanup = psycopg.connect(common.dsn(ctx["url"]), autocommit=True)
    trees: list[Path | None] = [None] if baseline is None else [None, baseline]
    try:
        embedding_cpu = await _embedding_cpu_ms(model, texts, 200)
        async with AsyncExitStack() as stack:
            runs = []
            for tree in trees:
                server = await stack.enter_async_context(
                    served(ctx["url"], tree, workers=p["workers"])
                )
                http = await stack.enter_async_context(
                    httpx.AsyncClient(base_url=server.base, headers=headers, timeout=60)
                )
                runs.append(
                    _Run(
                        _Client(http),
                        server.pid,
                        model,
                        texts,
                        cleanup,
                        [open_turns[0]],
                        turn_session,
                        tree,
                    )
                )
            await _interleaved(runs, p)
            await _cpu(runs, p)
        for run in runs:  # one server at a time
            counts = sorted({1, 2, p["workers"]}) if _takes_workers(run.tree) else [1]
            for workers in counts:
                async with served(ctx["url"], run.tree, workers=workers) as server:
                    await _load(server.base, headers, open_turns, texts, 1.0)  # warm up
                    run.out.load[workers] = await _load(
                        server.base, headers, open_turns, texts, p["seconds"]
                    )
        anatomy_figures = await _wire_and_path(ctx, headers, owner, texts)
    finally:
        cleanup.execute(_CLEANUP, {"s": turn_session})
        cleanup.close()
        model.close()
        await db.dispose()
    figures = {run.tree: run.out for run in runs}
    report = _report(p, figures[None], embedding_cpu, anatomy_figures)
    if baseline is not None:
        report["baseline"] = _report(
            p, figures[baseline], embedding_cpu, None, title=f"baseline {baseline}"
        )
        _compare(report["baseline"], report)
    print(f"load while measuring: {os.getloadavg()}")
    return report


def _report(
    p: dict[str, Any],
    f: _Figures,
    embedding_cpu: float,
    wire: dict[str, Any] | None,
    *,
    title: str = "",
) -> dict[str, Any]:
    t, s, e, w = _p50(f.trivial), _p50(f.search), _p50(f.embedding), _p50(f.turn)
    turn_floor = 4 * t + 2 * e
    common.table(
        f"(1, 4) one client, 10,000 records/agent, p50 ms {title}",
        ["request", "p50", "p99"],
        [
            ("{ __typename }", t, _p99(f.trivial)),
            ("embedding alone", e, _p99(f.embedding)),
            ("searchMemory", s, _p99(f.search)),
            *((f"  turn: {name}", _p50(v), _p99(v)) for name, v in f.steps.items()),
            ("whole turn", w, _p99(f.turn)),
        ],
    )
    cpu_t, cpu_s = f.cpu["trivial"], f.cpu["search"]
    common.table(
        f"(2) CPU per call over {p['cpu_calls']} calls, ms {title}",
        ["request", "server", "PostgreSQL", "total"],
        [
            ("{ __typename }", cpu_t.server_ms, cpu_t.database_ms, cpu_t.total_ms),
            ("searchMemory", cpu_s.server_ms, cpu_s.database_ms, cpu_s.total_ms),
            ("query embedding (this process)", embedding_cpu, 0.0, embedding_cpu),
        ],
    )
    workers = sorted(f.load)
    common.table(
        f"(3) {p['clients']} clients, by server processes {title}",
        ["processes", "trivial rps", "search rps", "ratio", "search p50", "search p99"],
        [
            (
                n,
                f.load[n]["trivial"]["rps"],
                f.load[n]["search"]["rps"],
                f.load[n]["search"]["rps"] / f.load[n]["trivial"]["rps"],
                f.load[n]["search"]["p50_ms"],
                f.load[n]["search"]["p99_ms"],
            )
            for n in workers
        ],
    )
    at = f.load[p["workers"]] if p["workers"] in f.load else f.load[workers[-1]]
    one = f.load.get(1)
    two = f.load.get(2)
    ratios: dict[str, Any] = {
        "search_over_floor_ms": s - t - e,
        "cpu_ratio": cpu_s.total_ms / cpu_t.total_ms,
        "cpu_ratio_without_embedding": (cpu_s.total_ms - embedding_cpu) / cpu_t.total_ms,
        "rps_ratio": at["search"]["rps"] / at["trivial"]["rps"],
        "p99_over_p50": at["search"]["p99_ms"] / at["search"]["p50_ms"],
        "scaling_1_to_2": None
        if one is None or two is None
        else two["search"]["rps"] / one["search"]["rps"],
        "turn_ratio": w / turn_floor,
    }
    if wire is not None:
        ratios.update({k: wire[k] for k in TARGETS if k in wire})
        common.table(
            "(5) what a search and a turn send, and the search's path (this tree)",
            ["figure", "value"],
            [
                (
                    "search: statements / round trips",
                    f"{wire['search_statements']} / {wire['search_round_trips']}",
                ),
                (
                    "turn: statements / round trips",
                    f"{wire['turn_statements']} / {wire['turn_round_trips']}",
                ),
                (
                    "search: modules / returns",
                    f"{wire['search_modules']} / {wire['search_returns']}",
                ),
            ],
        )
    met = {
        k: (v <= bound if op == "<=" else v >= bound)
        for k, (op, bound) in TARGETS.items()
        if (v := ratios.get(k)) is not None
    }
    common.table(
        f"targets {title}",
        ["figure", "value", "target", "met"],
        [(k, ratios[k], f"{op} {b}", met[k]) for k, (op, b) in TARGETS.items() if k in met],
    )
    return {
        "records_per_agent": 10_000,
        "processes": p["workers"],
        "p50_ms": {
            "trivial": t,
            "embedding": e,
            "search": s,
            "turn": w,
            **{k: _p50(v) for k, v in f.steps.items()},
        },
        "search_p99_ms": _p99(f.search),
        "cpu_ms": {
            "trivial": {"server": cpu_t.server_ms, "postgresql": cpu_t.database_ms},
            "search": {"server": cpu_s.server_ms, "postgresql": cpu_s.database_ms},
            "embedding": embedding_cpu,
        },
        "load": {str(n): v for n, v in f.load.items()},
        "anatomy": wire,
        "ratios": ratios,
        "targets_met": met,
    }


def _compare(before: dict[str, Any], after: dict[str, Any]) -> None:
    b, a = before["ratios"], after["ratios"]
    rows = [(k, b[k], a[k]) for k in a if k in b and b[k] is not None]
    rows += [(f"p50 ms {k}", before["p50_ms"][k], after["p50_ms"][k]) for k in after["p50_ms"]]
    common.table(
        "before (baseline tree) and after (this tree), same run",
        ["figure", "before", "after"],
        rows,
    )


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))
