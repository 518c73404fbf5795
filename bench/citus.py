"""``bench citus``: the same server on one PostgreSQL node and on Citus (a coordinator and
two workers, ``agent-memory migrate --citus``), the same data, in one run
(docs/scaling.md, "Distributing by agent").

Both are started here from the PostgreSQL that ``make citus`` builds, with the same
settings; the single node is plain PostgreSQL (Citus not loaded). All of them, and this
process, share one machine, so the cluster cannot be faster here: what it shows is the
price of the coordinator on each call, next to the same call on one node.

- **searchMemory**, in process (the service: the one ranking statement, which carries its
  own index settings, and the rows; the query's embedding excluded), many agents, each
  query on one agent, one node and the cluster timed side by side, query by query;
- **the ranking statement alone** (psycopg, in a transaction): on one node, and through
  the coordinator, which plans it as a router query (one task, on the agent's shard:
  checked with EXPLAIN) and sends it to a worker, parsed and planned each time and
  prepared (as the service runs it: the single node on its generic plan, Citus on custom
  plans). Its p50 on each side and the CPU per statement of each side's PostgreSQL
  processes (the coordinator's and the workers' on Citus), read from ``/proc``: the
  difference is what a search pays for the coordinator, and CPU holds steadier than
  time on a shared machine;
- **an agent's size** (the full run): on the cluster, agents of 10,000 and 100,000
  versions searched as the service searches them (by bits up to
  :data:`server.storage.nearest.ROUTED_BITS_AT_MOST` versions, past it on the HNSW
  index of the agent's shard, ``filtered``), and by bits;
- **turns/s**: concurrent agents, each running turns as a runtime does (begin, one
  ``add_memory``, commit: three transactions), for a few seconds, one node and the
  cluster taking turns, twice each.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import psycopg
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

from bench import common
from server.citus.build import home, installed
from server.citus.local import LocalCluster
from server.database import Database
from server.embedding import Embedder
from server.memory_search import ranking as memory_ranking
from server.services import commit, memory, tools, turns

# Each node: the settings the embedded server takes on a small machine (server/embedded.py).
NODE_SETTINGS = {
    "shared_buffers": "256MB",
    "work_mem": "32MB",
    "maintenance_work_mem": "256MB",
    "effective_cache_size": "1GB",
}


def plan(quick: bool) -> dict[str, Any]:
    if quick:
        return {
            "agents": 16,
            "records": 600,
            "queries": 60,
            "writers": 8,
            "seconds": 4.0,
            "ladder": (),
        }
    return {
        "agents": 64,
        "records": 3000,
        "queries": 200,
        "writers": 8,
        "seconds": 15.0,
        "ladder": (10_000, 100_000),
    }


def run(quick: bool) -> dict[str, Any]:
    pginstall = installed(home())
    if pginstall is None:
        print("citus: no Citus built here; run `make citus` first")
        return {"skipped": "no Citus built (make citus)"}
    return asyncio.run(_run(plan(quick), pginstall))


async def _run(p: dict[str, Any], pginstall: Path) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-citus-") as tmp:
        root = Path(tmp)
        single = LocalCluster(
            pginstall, root / "single", workers=0, citus=False, settings=NODE_SETTINGS
        )
        cluster = LocalCluster(pginstall, root / "cluster", workers=2, settings=NODE_SETTINGS)
        with single, cluster:
            return await _measure(p, single, cluster)


async def _measure(
    p: dict[str, Any], single: LocalCluster, cluster: LocalCluster
) -> dict[str, Any]:
    model = common.embedder()
    started = time.perf_counter()
    sides = {
        "single": {
            **await _load(p, single.create_database("bench_citus"), model),
            "nodes": single.nodes,
        },
        "cluster": {
            **await _load(p, cluster.create_database("bench_citus"), model),
            "nodes": cluster.nodes,
        },
    }
    print(
        f"loaded {p['agents']} agents x {p['records']} records on each in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    queries = _queries(sides["single"]["bases"], p["queries"])
    owners = {name: side["owners"] for name, side in sides.items()}
    search = await common.timed_side_by_side(
        *(_searches(sides[name]["db"], owners[name], queries) for name in ("single", "cluster"))
    )
    raw = await _statements(sides, queries, prepared=False)
    ready = await _statements(sides, queries, prepared=True)
    ladder = await _ladder(p, cluster, model) if p["ladder"] else None
    tasks = await _tasks(sides["cluster"]["db"], owners["cluster"][0], queries[0])
    rounds: dict[str, list[float]] = {"single": [], "cluster": []}
    for _ in range(2):
        for name in ("single", "cluster"):
            rounds[name].append(await _turns_per_second(sides[name]["db"], model, owners[name], p))
    for side in sides.values():
        await side["db"].dispose()
    model.close()
    turns_s = {name: float(np.median(r)) for name, r in rounds.items()}
    figures = {
        "agents": p["agents"],
        "records_per_agent": p["records"],
        "single": {
            "search_p50_ms": search[0].p50,
            "search_p99_ms": search[0].p99,
            "statement_p50_ms": raw["single"][0].p50,
            "statement_prepared_p50_ms": ready["single"][0].p50,
            "statement_cpu_ms": raw["single"][1] * 1000,
            "statement_prepared_cpu_ms": ready["single"][1] * 1000,
            "turns_per_s": turns_s["single"],
        },
        "cluster": {
            "search_p50_ms": search[1].p50,
            "search_p99_ms": search[1].p99,
            "statement_p50_ms": raw["cluster"][0].p50,
            "statement_prepared_p50_ms": ready["cluster"][0].p50,
            "statement_cpu_ms": raw["cluster"][1] * 1000,
            "statement_prepared_cpu_ms": ready["cluster"][1] * 1000,
            "turns_per_s": turns_s["cluster"],
            "search_tasks": tasks,
        },
        "coordinator_extra_ms": raw["cluster"][0].p50 - raw["single"][0].p50,
        "coordinator_extra_prepared_ms": ready["cluster"][0].p50 - ready["single"][0].p50,
        # CPU is what the nodes spend, whatever else runs on the machine: the steadier figure
        "coordinator_extra_cpu_ms": (raw["cluster"][1] - raw["single"][1]) * 1000,
        "coordinator_extra_prepared_cpu_ms": (ready["cluster"][1] - ready["single"][1]) * 1000,
        "search_ratio": search[1].p50 / search[0].p50,
        "turns_ratio": turns_s["cluster"] / turns_s["single"],
    }
    figures["meets_2_ms_coordinator"] = figures["coordinator_extra_prepared_cpu_ms"] <= 2.0
    common.table(
        f"searchMemory and turns: {p['agents']} agents x {p['records']} records, "
        "one node against coordinator + 2 workers",
        ["", "search p50 ms", "search p99 ms", "statement p50 ms", "turns/s"],
        [
            ["one node", search[0].p50, search[0].p99, raw["single"][0].p50, turns_s["single"]],
            ["Citus", search[1].p50, search[1].p99, raw["cluster"][0].p50, turns_s["cluster"]],
        ],
    )
    common.table(
        "the ranking statement alone: p50 and CPU of the nodes' processes per statement (ms)",
        ["", "one node p50", "Citus p50", "one node CPU", "Citus CPU", "Citus adds (CPU)"],
        [
            [
                name,
                side["single"][0].p50,
                side["cluster"][0].p50,
                side["single"][1] * 1000,
                side["cluster"][1] * 1000,
                (side["cluster"][1] - side["single"][1]) * 1000,
            ]
            for name, side in (("parsed each time", raw), ("prepared", ready))
        ],
    )
    print(
        f"the ranking statement through the coordinator: {tasks} task (router), "
        f"+{figures['coordinator_extra_ms']:.2f} ms at p50 "
        f"(+{figures['coordinator_extra_prepared_cpu_ms']:.2f} ms CPU prepared)",
        flush=True,
    )
    if ladder is not None:
        figures["ladder"] = ladder
    return figures


async def _load(p: dict[str, Any], url: Any, model: Embedder) -> dict[str, Any]:
    """The same agents' records on one side (the same seeds: the same vectors and texts)."""
    db = await common.connect(url)
    texts = common.sentences(80, seed=1)
    bases = np.array([v for v, _ in model.encode_now(texts)], dtype=np.float32)
    vocabulary = common.extra_words(5_000, seed=2)
    bodies = common.zipf_texts(5_000, words=15, vocabulary=vocabulary, seed=3)
    owners = [
        await common.make_owner(db, namespace=f"citus{i}", config=common.MEMORY_CONFIG)
        for i in range(p["agents"])
    ]
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        common.drop_search_indexes(conn)
        for i, owner in enumerate(owners):
            vectors, _ = common.blend(bases, p["records"], seed=10 + i)
            text_of = np.random.default_rng(i).integers(0, len(bodies), p["records"])
            common.bulk_records(conn, owner, vectors=vectors, texts=bodies, text_of=text_of)
        _build_indexes(conn)
    return {"db": db, "owners": owners, "bases": bases}


async def _ladder(p: dict[str, Any], cluster: LocalCluster, model: Embedder) -> dict[str, Any]:
    """On the cluster, one agent of each of ``p["ladder"]``'s sizes: its search (the
    service, which picks the path: by bits, or ``filtered`` on its shard's HNSW index
    past :data:`server.storage.nearest.ROUTED_BITS_AT_MOST`) and the same search by
    bits, p50 over the queries; and how the largest compares with the smallest."""
    side = await _load({**p, "agents": 0}, cluster.create_database("bench_citus_ladder"), model)
    db = side["db"]
    queries = _queries(side["bases"], p["queries"] // 2)
    vocabulary = common.extra_words(5_000, seed=2)
    bodies = common.zipf_texts(5_000, words=15, vocabulary=vocabulary, seed=3)
    owners = [
        await common.make_owner(db, namespace=f"ladder{n}", config=common.MEMORY_CONFIG)
        for n in p["ladder"]
    ]
    assert db.url is not None
    with psycopg.connect(common.dsn(db.url), autocommit=True) as conn:
        common.drop_search_indexes(conn)
        for n, owner in zip(p["ladder"], owners, strict=True):
            vectors, _ = common.blend(side["bases"], n, seed=n)
            text_of = np.random.default_rng(n).integers(0, len(bodies), n)
            common.bulk_records(conn, owner, vectors=vectors, texts=bodies, text_of=text_of)
        _build_indexes(conn)
    rows: list[Any] = []
    out: dict[str, Any] = {}
    for n, owner in zip(p["ladder"], owners, strict=True):
        async with db.session() as s:
            path = await memory_ranking.path_of(s, owner.agent_id)

        def one(q: tuple[str, list[float]], forced: Any, owner: Any = owner) -> Any:
            async def call() -> None:
                query = dataclasses.replace(_query(q), path=forced)
                async with db.session() as s:
                    assert await memory_ranking.ranked(s, owner.reader(), query)
                    await s.rollback()

            return call

        chosen, by_bits = await common.timed_side_by_side(
            [one(q, None) for q in queries], [one(q, "bits") for q in queries]
        )
        out[str(n)] = {"path": path, "search_p50_ms": chosen.p50, "bits_p50_ms": by_bits.p50}
        rows.append((f"{n:,}", path, chosen.p50, by_bits.p50))
        print(f"ladder: an agent of {n:,} versions measured", flush=True)
    await db.dispose()
    sizes = [str(n) for n in p["ladder"]]
    out["largest_over_smallest"] = out[sizes[-1]]["search_p50_ms"] / out[sizes[0]]["search_p50_ms"]
    common.table(
        "an agent's search on the cluster by its size: the path the service takes, p50 ms",
        ["versions", "path", "search p50", "by bits p50"],
        rows,
    )
    return out


def _build_indexes(conn: psycopg.Connection[Any]) -> None:
    """The search indexes, each build (on Citus: each shard's, several at once on every
    worker) within a node's own ``maintenance_work_mem`` and no parallel workers: with
    the 4 GB of :func:`bench.common.build_search_indexes` the shards' builds ran the
    machine out of memory."""
    common.build_search_indexes(conn, memory=NODE_SETTINGS["maintenance_work_mem"], workers=0)


def _queries(bases: np.ndarray, n: int) -> list[tuple[str, list[float]]]:
    vocabulary = common.extra_words(5_000, seed=2)
    texts = common.zipf_texts(n, words=5, vocabulary=vocabulary, seed=7)
    vectors, _ = common.blend(bases, n, seed=8)
    return [(t, [float(x) for x in v]) for t, v in zip(texts, vectors, strict=True)]


def _query(q: tuple[str, list[float]]) -> memory_ranking.MemoryQuery:
    return memory_ranking.MemoryQuery(q[0], q[1], "hybrid", 0.2, limit=10)


def _searches(db: Database, owners: list[common.Owner], queries: list[Any]) -> list[Any]:
    """One ranked search per query, of the agent ``i % agents`` (the service)."""

    def one(i: int, q: tuple[str, list[float]]) -> Any:
        async def call() -> None:
            async with db.session() as s:
                assert await memory_ranking.ranked(s, owners[i % len(owners)].reader(), _query(q))
                await s.rollback()

        return call

    return [one(i, q) for i, q in enumerate(queries)]


def _sql(owner: common.Owner, q: tuple[str, list[float]]) -> tuple[str, dict[str, Any]]:
    # the path the service takes on both sides: an agent of 600 or 3,000 versions is
    # ranked by bits on one node, and every agent on Citus (memory_ranking.path_of)
    query = dataclasses.replace(_query(q), path="bits")
    stmt, values = memory_ranking.ranking_statement(owner.reader(), query)
    compiled = stmt.compile(dialect=PGDialect_psycopg())
    params = {
        k: "[" + ",".join(map(str, v)) + "]" if k == "q" else v
        for k, v in compiled.construct_params(values).items()
    }
    return str(compiled), params


def _cpu(nodes: list[Any]) -> float:
    """Seconds of CPU the PostgreSQL processes of ``nodes`` (a postmaster and its
    backends) have used: what the statements cost them, whatever else runs on the box."""
    total = 0.0
    for node in nodes:
        pid = int((node.data / "postmaster.pid").read_text().split()[0])
        for proc in [psutil.Process(pid), *psutil.Process(pid).children()]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = proc.cpu_times()
                total += times.user + times.system
    return total


async def _statements(
    sides: dict[str, Any], queries: list[tuple[str, list[float]]], *, prepared: bool
) -> dict[str, tuple[common.Timings, float]]:
    """The ranking statement alone, each query on one node and through the coordinator
    in alternating order; each in a transaction, as the service runs it. Per side its
    timings and the CPU per statement of its nodes' processes (the coordinator's and
    the workers' on Citus). ``prepared``: as the service runs it, prepared (the single
    node on its generic plan, Citus on custom plans); else parsed and planned each
    time. Only the statement is timed."""
    conns = {
        name: await psycopg.AsyncConnection.connect(common.dsn(sides[name]["db"].url))
        for name in ("single", "cluster")
    }
    times: dict[str, list[float]] = {"single": [], "cluster": []}
    cpu: dict[str, float] = {"single": 0.0, "cluster": 0.0}
    try:
        if prepared:
            await conns["single"].execute("SET plan_cache_mode = force_generic_plan")
        for i, q in enumerate(queries):
            order = ("single", "cluster") if i % 2 == 0 else ("cluster", "single")
            for name in order:
                owners = sides[name]["owners"]
                sql, params = _sql(owners[i % len(owners)], q)
                conn = conns[name]
                before = _cpu(sides[name]["nodes"])
                start = time.perf_counter()
                cur = await conn.execute(sql, params, prepare=prepared)
                assert await cur.fetchall()
                elapsed = time.perf_counter() - start
                spent = _cpu(sides[name]["nodes"]) - before
                if i >= 5:
                    times[name].append(elapsed)
                    cpu[name] += spent
                await conn.rollback()
    finally:
        for conn in conns.values():
            await conn.close()
    n = len(queries) - 5
    return {name: (common.Timings(times[name]), cpu[name] / n) for name in ("single", "cluster")}


async def _tasks(db: Database, owner: common.Owner, q: tuple[str, list[float]]) -> int:
    """How many tasks the coordinator makes of an agent's ranking statement (EXPLAIN)."""
    assert db.url is not None
    sql, params = _sql(owner, q)
    async with await psycopg.AsyncConnection.connect(common.dsn(db.url)) as conn:
        cur = await conn.execute("EXPLAIN " + sql, params, prepare=False)
        plan = "\n".join(row[0] for row in await cur.fetchall())
    counts = [int(n) for n in re.findall(r"Task Count: (\d+)", plan)]
    assert counts and "Distributed Subplan" not in plan, plan
    return sum(counts)


async def _turns_per_second(
    db: Database, model: Embedder, owners: list[common.Owner], p: dict[str, Any]
) -> float:
    """Turns completed per second by ``writers`` agents at once, each turn three
    transactions: begin, one add_memory (a text the embedder has cached), commit."""
    summaries = common.sentences(20, seed=5)
    for text in summaries:
        await model.embed_one(text)
    stop = time.perf_counter() + p["seconds"]
    done = 0

    async def agent(owner: common.Owner) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            async with db.session() as s:
                turn = (await turns.begin_turn(s, session_id=owner.session_id)).turn
                await s.commit()
            async with db.session() as s:
                await memory.add_memory(
                    s,
                    model,
                    ref=tools.CallRef(turn_id=turn.id),
                    summary=summaries[done % len(summaries)],
                    scope="agent",
                )
                await s.commit()
            async with db.session() as s:
                await commit.commit_turn(s, model, turn_id=turn.id)
                await s.commit()
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(agent(o) for o in owners[: p["writers"]]))
    return done / (time.perf_counter() - start)


__all__ = ["plan", "run"]
