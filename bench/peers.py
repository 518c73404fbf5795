"""``bench peers``: this server's search against Mem0 OSS and LangGraph's PostgresStore.

Same PostgreSQL server, same records, same all-MiniLM-L6-v2 vectors, one process, at
600, 10,000 and 100,000 records of one agent (``--quick``: 600). The data, and how
each system holds it: :mod:`bench.peers_data`.

Search, two ways, each query asked of the three systems one after another (their
order turning from query to query, so none always finds the pages another just read):

- **the query's vector given**: every system gets the query's embedding computed
  beforehand, so the figures compare the search engines. This server:
  :func:`server.memory_search.ranking.ranked` (what ``search_memory`` ranks with,
  without the call's bookkeeping writes), hybrid and in ``vector`` mode, in the open
  transaction of the call it serves (the peers run on autocommit connections: a search
  is one statement for each); Mem0:
  ``Memory.search`` (its hybrid: pgvector HNSW plus full-text) with its embedder
  answering from the given vectors; LangGraph: ``PostgresStore.search`` with its
  index's ``embed`` answering from them;
- **each system embedding the query itself**: this server in ONNX Runtime
  (:func:`server.memory_search.ranking.ranked_by`, its cache off), the peers in
  PyTorch through sentence-transformers, as their users get them.

Every system is asked for 10 results (Mem0 2.2 reads ``top_k``; the ``limit`` this
bench used to pass was ignored, and Mem0 answered 20); the run checks how many each
returned. The ratio is ours / the faster peer's p50 (target <= 1.0, stretch 0.5).
With it, how many of our hybrid top ten are the exhaustive ranking's (the same
search with every candidate list read whole: the vectors ranked exactly, every
keyword match read from the full-text index and scored; the first 40 queries), and
how many queries return the very same ten in the same order. Ingest, one record per call, is
:mod:`bench.peers_ingest`. The run ends with one JSON line.
The peers are optional dependencies: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from bench import common, peers_data, peers_ingest
from server.domain.config import SearchConfig
from server.embedding import default_model_path
from server.memory_search import ranking as memory_ranking

TARGET_RATIO = 1.0
STRETCH_RATIO = 0.5
TARGET_OVERLAP = 0.98
LIMIT = 10
EXHAUSTIVE_QUERIES = 40  # the queries checked against the exhaustive ranking


def plan(quick: bool) -> dict[str, Any]:
    if quick:
        return {"sizes": (600,), "queries": 40, "ingest": 0}
    return {"sizes": (600, 10_000, 100_000), "queries": 150, "ingest": 600}


async def _round_robin(
    systems: dict[str, Callable[[str], Any]], queries: list[str], *, warmup: int = 5
) -> dict[str, tuple[common.Timings, float]]:
    """Each query asked of every system, in an order that turns from query to query; per
    system its timings and the mean number of results."""
    names = list(systems)
    for q in queries[:warmup]:
        for name in names:
            await _call(systems[name], q)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    counts: dict[str, list[int]] = {n: [] for n in names}
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            found = await _call(systems[name], q)
            seconds[name].append(time.perf_counter() - start)
            counts[name].append(found)
    return {n: (common.Timings(seconds[n]), statistics.fmean(counts[n])) for n in names}


async def _call(call: Callable[[str], Any], q: str) -> int:
    result = call(q)
    if asyncio.iscoroutine(result):
        result = await result
    return int(result)


async def _sizes(p: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network calls
    from sentence_transformers import SentenceTransformer

    model = common.embedder(cache=False)
    torch_model = SentenceTransformer(default_model_path(), device="cpu")
    out: dict[str, Any] = {}
    for size in p["sizes"]:
        out[str(size)] = await _one_size(size, p["queries"], model, torch_model)
        print(f"measured {size:,} records", flush=True)
    model.close()
    return out


async def _one_size(size: int, n: int, model: Any, torch_model: Any) -> dict[str, Any]:
    url, owner, loaded = await peers_data.load(size, model)
    if loaded:
        print(f"loaded {size:,} records into the three systems", flush=True)
    texts, vectors = peers_data.queries(model, n)
    given = dict(zip(texts, vectors, strict=True))
    db = await common.connect(url)
    reader = owner.reader()
    # ranked() runs in the transaction of the call it serves: one open transaction here
    # (its rows let go after each search), so that a search is its statement, not also a
    # BEGIN and a COMMIT (the peers run on autocommit connections)
    session_cm = db.session()
    session = await session_cm.__aenter__()

    def ranked(mode: Any) -> Callable[[str], Any]:
        async def call(q: str) -> int:
            found = await memory_ranking.ranked(
                session,
                reader,
                memory_ranking.MemoryQuery(q, given[q], mode, min_score=0.2, limit=LIMIT),
            )
            session.expunge_all()
            return len(found)

        return call

    async def ranked_by(q: str) -> int:
        found, _ = await memory_ranking.ranked_by(
            session,
            model,
            reader=reader,
            search=SearchConfig(mode="hybrid", max_results=LIMIT, min_score=0.2),
            query=q,
            limit=LIMIT,
        )
        session.expunge_all()
        return len(found)

    def mem0(memory: Any) -> Callable[[str], int]:
        def call(q: str) -> int:
            filters = {"user_id": peers_data.USER}
            return len(memory.search(q, filters=filters, top_k=LIMIT)["results"])

        return call

    def langgraph(store: Any) -> Callable[[str], int]:
        def call(q: str) -> int:
            return len(store.search(peers_data.NAMESPACE, query=q, limit=LIMIT))

        return call

    def embed_torch(batch: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in torch_model.encode(batch)]

    exactness = await _against_exhaustive(session, reader, texts, given)
    mem0_given = peers_data.mem0_memory(url, size, lambda t: given[t])
    mem0_own = peers_data.mem0_memory(url, size, None)
    with (
        peers_data.langgraph_store(url, lambda b: [given[t] for t in b]) as lg_given,
        peers_data.langgraph_store(url, embed_torch) as lg_own,
    ):
        given_run = await _round_robin(
            {
                "ours_hybrid": ranked("hybrid"),
                "ours_vector": ranked("vector"),
                "mem0": mem0(mem0_given),
                "langgraph": langgraph(lg_given),
            },
            texts,
        )
        # no system caches an embedding here: each embeds each query once, with queries
        # of their own (distinct from the first run's)
        own_texts = [t.replace("what did", "what about when") for t in texts]
        own_run = await _round_robin(
            {"ours_hybrid": ranked_by, "mem0": mem0(mem0_own), "langgraph": langgraph(lg_own)},
            own_texts,
        )
    await session.commit()
    await session_cm.__aexit__(None, None, None)
    await db.dispose()
    return {"given": given_run, "own": own_run, "exhaustive": exactness}


async def _against_exhaustive(
    session: Any, reader: Any, texts: list[str], given: dict[str, Any]
) -> dict[str, float]:
    """Our hybrid top ten against the exhaustive ranking's, query by query: the share of
    its ten we return (mean) and the share of queries answered with the very same ten in
    the same order. The exhaustive ranking is the same search filtered by the kind every
    record has, which reads every keyword match from the full-text index, with the
    vectors ranked exactly."""
    shared: list[float] = []
    same = 0
    # reading every match of a 100k agent takes seconds a query under load
    await session.execute(text("SET LOCAL statement_timeout = 0"))
    for q in texts[:EXHAUSTIVE_QUERIES]:
        fast = await memory_ranking.ranked(
            session, reader, memory_ranking.MemoryQuery(q, given[q], "hybrid", 0.2, LIMIT)
        )
        every = await memory_ranking.ranked(
            session,
            reader,
            memory_ranking.MemoryQuery(
                q,
                given[q],
                "hybrid",
                0.2,
                LIMIT,
                memory_ranking.Filters(kind="fact"),
                path="exact",
            ),
        )
        session.expunge_all()
        want = [f.version.id for f in every]
        got = [f.version.id for f in fast]
        shared.append(len(set(want) & set(got)) / max(len(want), 1))
        same += got == want
    return {"overlap_at_10": statistics.fmean(shared), "identical": same / len(shared)}


def _figures(results: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    rows = []
    for size, runs in results.items():
        entry: dict[str, Any] = {}
        for how in ("given", "own"):
            run = runs[how]
            peer = min(run["mem0"][0].p50, run["langgraph"][0].p50)
            part: dict[str, Any] = {
                name: {"p50_ms": t.p50, "p99_ms": t.p99, "results": n}
                for name, (t, n) in run.items()
            }
            part["ratio_hybrid"] = run["ours_hybrid"][0].p50 / peer
            if how == "given":
                part["vs_exhaustive"] = runs["exhaustive"]
            if "ours_vector" in run:
                part["ratio_vector"] = run["ours_vector"][0].p50 / peer
            entry[how] = part
            for name, (t, n) in run.items():
                ratio = t.p50 / peer if name.startswith("ours") else ""
                rows.append((f"{int(size):,}", how, name, t.p50, t.p99, n, ratio))
        figures[f"search_{size}"] = entry
    common.table(
        "search p50/p99 ms: the query's vector given, then each system embedding it "
        "(same PG, same model); ratio ours / the faster peer",
        ["records", "vector", "system", "p50", "p99", "results", "ratio"],
        rows,
    )
    ratios = {
        f"{how}_{mode}_{size}": figures[f"search_{size}"][how].get(f"ratio_{mode}")
        for size in results
        for how in ("given", "own")
        for mode in ("hybrid", "vector")
        if f"ratio_{mode}" in figures[f"search_{size}"][how]
    }
    figures["ratios"] = ratios
    common.table(
        "our hybrid top ten (vector given) against the exhaustive ranking's",
        ["records", "share of its ten", "queries with the same ten, in order"],
        [
            (f"{int(size):,}", runs["exhaustive"]["overlap_at_10"], runs["exhaustive"]["identical"])
            for size, runs in results.items()
        ],
    )
    given = [figures[f"search_{s}"]["given"] for s in results]
    figures["overlap_at_10_vs_exhaustive"] = {
        s: figures[f"search_{s}"]["given"]["vs_exhaustive"]["overlap_at_10"] for s in results
    }
    figures["meets_1_0_given_hybrid"] = all(g["ratio_hybrid"] <= TARGET_RATIO for g in given)
    figures["meets_0_5_given_hybrid"] = all(g["ratio_hybrid"] <= STRETCH_RATIO for g in given)
    figures["meets_0_98_overlap"] = all(
        g["vs_exhaustive"]["overlap_at_10"] >= TARGET_OVERLAP for g in given
    )
    return figures


def run(quick: bool) -> dict[str, Any]:
    p = plan(quick)
    try:
        results = asyncio.run(_sizes(p))
    except ImportError as exc:
        return {"not_run": f"the peers are not installed ({exc}); pip install -e '.[bench]'"}
    figures = _figures(results)
    if p["ingest"]:
        figures["ingest"] = peers_ingest.run(p["ingest"])
    return figures
