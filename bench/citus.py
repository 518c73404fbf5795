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
  the coordinator, which plans it as a router query
  (one task, on the agent's shard: checked with EXPLAIN) and sends it to a worker. The
  difference is what a search pays for the coordinator;
- **turns/s**: concurrent agents, each running turns as a runtime does (begin, one
  ``add_memory``, commit: three transactions), for a few seconds, one node and the
  cluster taking turns, twice each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
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
        return {"agents": 16, "records": 600, "queries": 60, "writers": 8, "seconds": 4.0}
    return {"agents": 64, "records": 3000, "queries": 200, "writers": 8, "seconds": 15.0}


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
        "single": await _load(p, single.create_database("bench_citus"), model),
        "cluster": await _load(p, cluster.create_database("bench_citus"), model),
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
    raw = await _statements(sides, queries)
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
            "statement_p50_ms": raw[0].p50,
            "turns_per_s": turns_s["single"],
        },
        "cluster": {
            "search_p50_ms": search[1].p50,
            "search_p99_ms": search[1].p99,
            "statement_p50_ms": raw[1].p50,
            "turns_per_s": turns_s["cluster"],
            "search_tasks": tasks,
        },
        "coordinator_extra_ms": raw[1].p50 - raw[0].p50,
        "search_ratio": search[1].p50 / search[0].p50,
        "turns_ratio": turns_s["cluster"] / turns_s["single"],
    }
    common.table(
        f"searchMemory and turns: {p['agents']} agents x {p['records']} records, "
        "one node against coordinator + 2 workers",
        ["", "search p50 ms", "search p99 ms", "statement p50 ms", "turns/s"],
        [
            ["one node", search[0].p50, search[0].p99, raw[0].p50, turns_s["single"]],
            ["Citus", search[1].p50, search[1].p99, raw[1].p50, turns_s["cluster"]],
        ],
    )
    print(
        f"the ranking statement through the coordinator: {tasks} task (router), "
        f"+{figures['coordinator_extra_ms']:.2f} ms at p50",
        flush=True,
    )
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
        common.build_search_indexes(conn)
    return {"db": db, "owners": owners, "bases": bases}


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


async def _statements(
    sides: dict[str, Any], queries: list[tuple[str, list[float]]]
) -> tuple[common.Timings, common.Timings]:
    """The ranking statement alone (psycopg, not prepared), each query on one node and
    through the coordinator in alternating order; each in a transaction, as the service
    runs it. Only the statement is timed."""
    conns = {
        name: await psycopg.AsyncConnection.connect(common.dsn(sides[name]["db"].url))
        for name in ("single", "cluster")
    }
    times: dict[str, list[float]] = {"single": [], "cluster": []}
    try:
        for i, q in enumerate(queries):
            order = ("single", "cluster") if i % 2 == 0 else ("cluster", "single")
            for name in order:
                owners = sides[name]["owners"]
                sql, params = _sql(owners[i % len(owners)], q)
                conn = conns[name]
                start = time.perf_counter()
                cur = await conn.execute(sql, params, prepare=False)
                assert await cur.fetchall()
                times[name].append(time.perf_counter() - start)
                await conn.rollback()
    finally:
        for conn in conns.values():
            await conn.close()
    return common.Timings(times["single"][5:]), common.Timings(times["cluster"][5:])


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
