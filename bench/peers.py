"""``bench peers``: this server against Mem0 OSS and LangGraph's PostgresStore.

Same PostgreSQL server, same records, same embedding model (the bundled
all-MiniLM-L6-v2, loaded offline), one process each. The weights are the same;
the runtime is each system's own: this server runs the model in ONNX Runtime
(its default, the same vectors to 1e-6, a short text in about 4 ms), the peers
in PyTorch through sentence-transformers (about 11 ms), as their users get them.

- **this server**: ``add_memory`` (the native tool, in a turn: embeds the text,
  writes the record, its version and the execution) for ingest; for search, the
  query's embedding plus the ranked search (:func:`server.services.memory_ranking.ranked`,
  hybrid) and, separately, the whole ``search_memory`` tool (which also records
  its execution, RETRIEVED uses and embed usage);
- **Mem0** (``mem0ai``): ``Memory`` with the pgvector store (HNSW) and the
  HuggingFace embedder pointed at the bundled model; ``add(..., infer=False)``
  stores the text as given (no LLM); ``search`` embeds and ranks by vector;
- **LangGraph** (``langgraph-checkpoint-postgres``): ``PostgresStore`` with an
  index (``dims=384``, the same model as ``embed``); ``put`` embeds and stores,
  ``search`` embeds and ranks by vector.

Ingest is one record per call (as an agent saves memories); throughput is
records/s, one caller at a time (the ratio), and for this server also with
8 concurrent callers, whose embeddings the server batches into shared forward
passes (the peers' Python APIs embed each call on its own). Search is p50/p99
over distinct queries (no embedding cache hits: this server's cache is off here).
Ratios are peer / ours (> 1: ours is faster).
The peers are optional dependencies: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

from bench import common
from server.embedding import default_model_path
from server.services import memory, memory_ranking, search, tools, turns

WRITERS = 8  # concurrent add_memory callers: their embeddings share forward passes


def plan(quick: bool) -> dict[str, Any]:
    return {"records": 150, "queries": 40} if quick else {"records": 600, "queries": 150}


def texts(n: int) -> list[str]:
    return common.sentences(n, seed=11)


def query_texts(n: int) -> list[str]:
    return [f"what did {s}?" for s in common.sentences(n + 3000, seed=12)[-n:]]


async def ours(url: Any, records: list[str], queries: list[str]) -> dict[str, Any]:
    db = await common.connect(url)
    model = common.embedder(cache=False)
    owner = await common.make_owner(
        db, namespace=f"peers{uuid.uuid4().hex[:6]}", config=common.MEMORY_CONFIG
    )
    async with db.session() as s:
        turn = (await turns.begin_turn(s, session_id=owner.session_id)).turn
        await s.commit()
    ref = tools.CallRef(turn_id=turn.id)
    start = time.perf_counter()
    for text in records:
        async with db.session() as s:
            await memory.add_memory(s, model, ref=ref, summary=text, scope="agent")
            await s.commit()
    ingest = len(records) / (time.perf_counter() - start)
    async with db.session() as s:
        await turns.commit_turn(s, turn_id=turn.id)
        writers = [
            (await turns.begin_turn(s, session_id=owner.session_id)).turn.id for _ in range(WRITERS)
        ]
        await s.commit()

    async def writer(turn_id: Any, share: list[str]) -> None:
        for text in share:
            async with db.session() as s:
                await memory.add_memory(
                    s,
                    model,
                    ref=tools.CallRef(turn_id=turn_id),
                    summary=f"{text} (again)",
                    scope="agent",
                )
                await s.commit()

    start = time.perf_counter()
    await asyncio.gather(*(writer(t, records[i::WRITERS]) for i, t in enumerate(writers)))
    concurrent = len(records) / (time.perf_counter() - start)
    async with db.session() as s:
        for t in writers:
            await turns.commit_turn(s, turn_id=t)
        await s.commit()
    reader = owner.reader()

    def ranked(q: str) -> Any:
        async def call() -> None:
            vector, _ = await model.embed_one(q)
            async with db.session() as s:
                await memory_ranking.ranked(
                    s,
                    reader,
                    memory_ranking.MemoryQuery(q, vector, "hybrid", min_score=0.2, limit=10),
                )
                await s.rollback()

        return call

    searched = await common.timed([ranked(q) for q in queries])
    async with db.session() as s:
        tool_turn = (await turns.begin_turn(s, session_id=owner.session_id)).turn
        await s.commit()

    def tool(q: str) -> Any:
        async def call() -> None:
            async with db.session() as s:
                await search.search_memory(
                    s, model, ref=tools.CallRef(turn_id=tool_turn.id), query=q, limit=10
                )
                await s.commit()

        return call

    tooled = await common.timed([tool(q + " (tool)") for q in queries])
    await db.dispose()
    model.close()
    return {"ingest": ingest, "concurrent": concurrent, "search": searched, "tool": tooled}


def mem0(url: Any, records: list[str], queries: list[str]) -> dict[str, Any]:
    os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network calls
    from mem0 import Memory

    config = common.mem0_config(url, f"mem0_{uuid.uuid4().hex[:8]}")
    m = Memory.from_config(config)
    start = time.perf_counter()
    for text in records:
        m.add(text, user_id="bench", infer=False)
    ingest = len(records) / (time.perf_counter() - start)
    seconds = []
    for q in queries:
        t = time.perf_counter()
        m.search(q, filters={"user_id": "bench"}, limit=10)
        seconds.append(time.perf_counter() - t)
    return {"ingest": ingest, "search": common.Timings(seconds)}


def langgraph(url: Any, records: list[str], queries: list[str]) -> dict[str, Any]:
    from langgraph.store.base import IndexConfig
    from langgraph.store.postgres import PostgresStore
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(default_model_path(), device="cpu")

    def embed(batch: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in model.encode(batch)]

    namespace = ("bench", uuid.uuid4().hex[:8])
    index: IndexConfig = {"dims": 384, "embed": embed, "fields": ["text"]}
    with PostgresStore.from_conn_string(common.dsn(url), index=index) as store:
        store.setup()
        start = time.perf_counter()
        for i, text in enumerate(records):
            store.put(namespace, str(i), {"text": text})
        ingest = len(records) / (time.perf_counter() - start)
        seconds = []
        for q in queries:
            t = time.perf_counter()
            store.search(namespace, query=q, limit=10)
            seconds.append(time.perf_counter() - t)
    return {"ingest": ingest, "search": common.Timings(seconds)}


def run(quick: bool) -> dict[str, Any]:
    p = plan(quick)
    url, _ = common.database("bench_peers", fresh=True)
    records, queries = texts(p["records"]), query_texts(p["queries"])
    results: dict[str, dict[str, Any]] = {"agent-memory": asyncio.run(ours(url, records, queries))}
    problems: dict[str, str] = {}
    for name, peer in (("mem0", mem0), ("langgraph", langgraph)):
        try:
            results[name] = peer(url, records, queries)
        except ImportError as exc:
            problems[name] = f"not installed ({exc}); pip install -e '.[bench]'"
    base = results["agent-memory"]
    rows = [("agent-memory", base["ingest"], base["search"].p50, base["search"].p99, "", "")]
    rows.append(("agent-memory (tool)", "", base["tool"].p50, base["tool"].p99, "", ""))
    rows.append((f"agent-memory ({WRITERS} writers)", base["concurrent"], "", "", "", ""))
    figures: dict[str, Any] = {
        "records": p["records"],
        "queries": p["queries"],
        "agent_memory": {
            "ingest_per_s": base["ingest"],
            "ingest_per_s_concurrent": base["concurrent"],
            "search_p50_ms": base["search"].p50,
            "search_p99_ms": base["search"].p99,
            "tool_p50_ms": base["tool"].p50,
            "tool_p99_ms": base["tool"].p99,
        },
    }
    for name in ("mem0", "langgraph"):
        if name not in results:
            continue
        r = results[name]
        ingest_ratio = base["ingest"] / r["ingest"]
        search_ratio = r["search"].p50 / base["search"].p50
        rows.append(
            (name, r["ingest"], r["search"].p50, r["search"].p99, ingest_ratio, search_ratio)
        )
        figures[name] = {
            "ingest_per_s": r["ingest"],
            "search_p50_ms": r["search"].p50,
            "search_p99_ms": r["search"].p99,
            "ingest_ratio": ingest_ratio,
            "search_p50_ratio": search_ratio,
        }
    common.table(
        f"ingest and search, {p['records']} records, {p['queries']} queries (same PG, same model)",
        ["system", "ingest/s", "search p50 ms", "p99 ms", "ours x ingest", "ours x search"],
        rows,
    )
    if problems:
        figures["not_run"] = problems
        for name, why in problems.items():
            print(f"{name}: {why}")
    common.drop("bench_peers")
    return figures
