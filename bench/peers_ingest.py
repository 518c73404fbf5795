"""``bench peers`` (ingest): records saved one call at a time, this server against Mem0
OSS and LangGraph's PostgresStore, in a fresh database on the same server, each system
embedding its records with the bundled model in its own runtime (this server in ONNX
Runtime, the peers in PyTorch through sentence-transformers).

- this server: ``add_memory`` (the native tool, in a turn: embeds the text, writes the
  record, its version and the execution), one caller, and 8 concurrent callers whose
  embeddings the server batches into shared forward passes;
- Mem0: ``Memory.add(..., infer=False)`` (the text stored as given, no LLM);
- LangGraph: ``PostgresStore.put`` with an index (``dims=384``, the model as ``embed``).

Records/s, one caller at a time; ratio ours / peer (> 1: ours is faster).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

from bench import common
from server.embedding import default_model_path
from server.services import memory, tools, turns

WRITERS = 8  # concurrent add_memory callers: their embeddings share forward passes


def texts(n: int) -> list[str]:
    return common.sentences(n, seed=11)


async def ours(url: Any, records: list[str]) -> dict[str, float]:
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
    await db.dispose()
    model.close()
    return {"ingest": ingest, "concurrent": concurrent}


def mem0(url: Any, records: list[str]) -> float:
    os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network calls
    from mem0 import Memory

    m = Memory.from_config(common.mem0_config(url, f"mem0_{uuid.uuid4().hex[:8]}"))
    start = time.perf_counter()
    for text in records:
        m.add(text, user_id="bench", infer=False)
    return len(records) / (time.perf_counter() - start)


def langgraph(url: Any, records: list[str]) -> float:
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
        return len(records) / (time.perf_counter() - start)


def run(n: int) -> dict[str, Any]:
    """Ingest of ``n`` records by each system; figures and the table's rows."""
    url, _ = common.database("bench_peers", fresh=True)
    records = texts(n)
    base = asyncio.run(ours(url, records))
    figures: dict[str, Any] = {
        "records": n,
        "agent_memory": {
            "ingest_per_s": base["ingest"],
            "ingest_per_s_concurrent": base["concurrent"],
        },
    }
    rows: list[tuple[Any, ...]] = [
        ("agent-memory", base["ingest"], ""),
        (f"agent-memory ({WRITERS} writers)", base["concurrent"], ""),
    ]
    for name, peer in (("mem0", mem0), ("langgraph", langgraph)):
        try:
            rate = peer(url, records)
        except ImportError as exc:
            figures.setdefault("not_run", {})[name] = f"not installed ({exc})"
            continue
        figures[name] = {"ingest_per_s": rate, "ingest_ratio": base["ingest"] / rate}
        rows.append((name, rate, base["ingest"] / rate))
    common.table(
        f"ingest, {n} records one call at a time (same PG, same model)",
        ["system", "records/s", "ours x"],
        rows,
    )
    common.drop("bench_peers")
    return figures
