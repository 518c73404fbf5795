"""``bench search``: memory search latency at 10k and 100k records per agent.

(a) in-process, excluding the query's embedding, at a ladder of agent sizes
    (:mod:`bench.search_ranking`): the ranking
    (:func:`server.services.memory_ranking.ranked`: the one search statement, loading
    the records), hybrid and in vector mode, next to the raw SQL floor: the same
    statement run directly with psycopg. Ratio = (a) / floor. The two run side by
    side, query by query in alternating order, so that neither always finds the
    pages the other just read. Also the path taken, its recall@10 against exact
    ranking, each path's cost forced, and the ratios of the ladder.

The same search over HTTP, through the server with the query's embedding and what the
tool records, beside the cost of its parts: ``bench request-path``
(:mod:`bench.request_path`), on this bench's quick data set.

The full run's table holds 1M records (agents of 1k, 2k, 5k, 10k, 20k, 50k and 100k
records, and filler agents with 10k records each); the quick run's 50k (agents of
1k and 10k). Records are 15 made-up words drawn
Zipf-like (so a keyword is as selective as a content word of natural text);
vectors are blends of two real sentence embeddings of the model, so they have the
structure real memories have. Queries are five such words and a vector near the
data. A loaded data set is kept
in its own database for the next run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import psycopg

from bench import common, search_ranking


def plan(quick: bool) -> dict[str, Any]:
    if quick:
        return {
            "name": "bench_search_quick_v5",
            "agents": [1_000, 10_000],
            "total": 50_000,
            "bases": 200,
            "queries": 60,
            "forced": 20,
        }
    return {
        "name": "bench_search_full_v5",
        "agents": [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000],
        "total": 1_000_000,
        "bases": 600,
        "queries": 200,
        "forced": 40,
    }


async def load(p: dict[str, Any]) -> dict[str, Any]:
    url, existed = common.database(p["name"])
    db = await common.connect(url)
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        done = common.scalar(conn, "SELECT to_regclass('bench_loaded')")
        if existed and done:
            owners = [
                common.Owner(*row)
                for row in conn.execute(
                    "SELECT agent_id, version_id, session_id, turn_id, execution_id"
                    " FROM bench_loaded ORDER BY position"
                ).fetchall()
            ]
            bases = np.frombuffer(
                common.scalar(conn, "SELECT bases FROM bench_bases"),
                dtype=np.float32,
            ).reshape(-1, 384)
            return {"url": url, "db": db, "owners": owners, "bases": bases, "loaded_s": 0.0}
    started = time.perf_counter()
    model = common.embedder()
    texts = common.sentences(p["bases"], seed=1)
    bases = np.array([v for v, _ in model.encode_now(texts)], dtype=np.float32)
    vocabulary = common.extra_words(20_000, seed=2)
    bodies = common.zipf_texts(20_000, words=15, vocabulary=vocabulary, seed=3)
    sizes = list(p["agents"])
    filler = p["total"] - sum(sizes)
    sizes += [10_000] * (filler // 10_000) + ([filler % 10_000] if filler % 10_000 else [])
    owners = [
        await common.make_owner(db, namespace=f"bench{i}", config=common.MEMORY_CONFIG)
        for i in range(len(sizes))
    ]
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        common.drop_search_indexes(conn)
        for i, (owner, size) in enumerate(zip(owners, sizes, strict=True)):
            vectors, _ = common.blend(bases, size, seed=10 + i)
            text_of = np.random.default_rng(i).integers(0, len(bodies), size)
            common.bulk_records(conn, owner, vectors=vectors, texts=bodies, text_of=text_of)
            if i % 10 == 0:
                print(f"loaded {i + 1}/{len(sizes)} agents", flush=True)
        index_s = common.build_search_indexes(conn)
        conn.execute("CREATE TABLE bench_bases (bases bytea)")
        conn.execute("INSERT INTO bench_bases VALUES (%s)", (bases.tobytes(),))
        conn.execute(
            "CREATE TABLE bench_loaded (position int, agent_id uuid, version_id uuid,"
            " session_id uuid, turn_id uuid, execution_id uuid)"
        )
        for i, o in enumerate(owners):
            conn.execute(
                "INSERT INTO bench_loaded VALUES (%s, %s, %s, %s, %s, %s)",
                (i, o.agent_id, o.version_id, o.session_id, o.turn_id, o.execution_id),
            )
    model.close()
    loaded = time.perf_counter() - started
    print(f"loaded {p['total']} records in {loaded:.0f} s (indexes {index_s:.0f} s)", flush=True)
    return {"url": url, "db": db, "owners": owners, "bases": bases, "loaded_s": loaded}


async def _run(quick: bool) -> dict[str, Any]:
    p = plan(quick)
    ctx = await load(p)
    figures: dict[str, Any] = {"table_records": p["total"], "load_s": round(ctx["loaded_s"], 1)}
    figures.update(await search_ranking.measure(ctx, p))
    await ctx["db"].dispose()
    return figures


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))
