"""The data of ``bench peers`` and how each system holds it.

One agent's memory of ``n`` records (600, 10,000, 100,000), the same in every system:
each record a blend of two real sentence embeddings of the model (as ``bench search``
builds them, :func:`bench.common.blend`) and, as its text, the sentence its vector is
mostly made of with a few made-up words (so records are distinct and carry rarer
words too). The queries are questions about other sentences (``what did ... ?``) with
their embeddings by the model.

Each size is a database of its own, kept between runs, holding all three systems'
tables, loaded through each system's own storage code with the vectors given:

- this server: :func:`bench.common.bulk_records` (binary ``COPY`` of versions and
  records, as ``bench search`` loads them), then the search indexes built;
- Mem0: its pgvector store's ``insert`` with the payloads ``Memory.add(infer=False)``
  writes (``data``, ``hash``, ``created_at``, ``updated_at``, ``text_lemmatized``,
  ``user_id``), the collection's HNSW and GIN indexes in place;
- LangGraph: ``PostgresStore.batch`` of ``PutOp``s, its index's ``embed`` answering
  from the given vectors.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from bench import common

BASES = 600
USER = "bench"
NAMESPACE = ("bench", "memories")
LOADED = "bench_peers_loaded"


def texts_and_vectors(model: Any, n: int) -> tuple[list[str], np.ndarray]:
    """``n`` records: texts and vectors (module docstring)."""
    bases = common.sentences(BASES, seed=11)
    embedded = np.array([v for v, _ in model.encode_now(bases)], dtype=np.float32)
    vectors, main = common.blend(embedded, n, seed=n)
    words = common.extra_words(max(n, 1), seed=n)
    texts = [
        f"{bases[m]}, {words[i]} {words[(i * 7 + 3) % n]}" for i, m in enumerate(main.tolist())
    ]
    return texts, vectors


def queries(model: Any, n: int) -> tuple[list[str], list[list[float]]]:
    """``n`` questions about sentences none of the records is built on, and their vectors."""
    texts = [f"what did {s}?" for s in common.sentences(BASES + n + 3000, seed=11)[-n:]]
    return texts, [list(map(float, v)) for v, _ in model.encode_now(texts)]


def mem0_memory(url: Any, size: int, embed: Callable[[str], list[float]] | None) -> Any:
    """Mem0's ``Memory`` over this size's collection; ``embed`` (optional) answers its
    embedder's calls instead of the model."""
    from mem0 import Memory

    memory = Memory.from_config(common.mem0_config(url, f"mem0_{size}"))
    if embed is not None:
        memory.embedding_model.embed = lambda text, memory_action=None: embed(text)
    return memory


def langgraph_store(url: Any, embed: Callable[[list[str]], list[list[float]]]) -> Any:
    """LangGraph's ``PostgresStore`` (a context manager) with an index embedding by ``embed``."""
    from langgraph.store.base import IndexConfig
    from langgraph.store.postgres import PostgresStore

    index: IndexConfig = {"dims": 384, "embed": embed, "fields": ["text"]}
    return PostgresStore.from_conn_string(common.dsn(url), index=index)


async def load(size: int, model: Any) -> tuple[Any, common.Owner, bool]:
    """The database of ``size`` records in every system (loaded once, then kept): its URL,
    this server's agent, and whether it was loaded by this call."""
    url, existed = common.database(f"bench_peers_{size}_v1")
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        if existed and common.scalar(conn, f"SELECT to_regclass('{LOADED}')"):
            row = conn.execute(
                f"SELECT agent_id, version_id, session_id, turn_id, execution_id FROM {LOADED}"
            ).fetchone()
            assert row is not None
            return url, common.Owner(*row), False
    texts, vectors = texts_and_vectors(model, size)
    db = await common.connect(url)
    owner = await common.make_owner(db, namespace="peers", config=common.MEMORY_CONFIG)
    await db.dispose()
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        common.drop_search_indexes(conn)
        common.bulk_records(
            conn, owner, vectors=vectors, texts=texts, text_of=np.arange(size, dtype=np.int32)
        )
        common.build_search_indexes(conn)
    _load_mem0(url, size, texts, vectors)
    _load_langgraph(url, texts, vectors)
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute(
            f"CREATE TABLE {LOADED} (agent_id uuid, version_id uuid, session_id uuid,"
            " turn_id uuid, execution_id uuid)"
        )
        conn.execute(
            f"INSERT INTO {LOADED} VALUES (%s, %s, %s, %s, %s)",
            (owner.agent_id, owner.version_id, owner.session_id, owner.turn_id, owner.execution_id),
        )
    return url, owner, True


def _load_mem0(url: Any, size: int, texts: Sequence[str], vectors: np.ndarray) -> None:
    from mem0.utils.lemmatization import lemmatize_for_bm25

    memory = mem0_memory(url, size, None)
    now = datetime.now(UTC).isoformat()
    for start in range(0, len(texts), 1000):
        chunk = range(start, min(start + 1000, len(texts)))
        payloads = [
            {
                "user_id": USER,
                "data": texts[i],
                "hash": hashlib.md5(texts[i].encode()).hexdigest(),
                "created_at": now,
                "updated_at": now,
                "text_lemmatized": lemmatize_for_bm25(texts[i]),
            }
            for i in chunk
        ]
        memory.vector_store.insert(
            vectors=[vectors[i].tolist() for i in chunk],
            payloads=payloads,
            ids=[str(uuid.uuid4()) for _ in chunk],
        )


def _load_langgraph(url: Any, texts: Sequence[str], vectors: np.ndarray) -> None:
    from langgraph.store.base import PutOp

    given = {t: vectors[i].tolist() for i, t in enumerate(texts)}
    with langgraph_store(url, lambda batch: [given[t] for t in batch]) as store:
        store.setup()
        for start in range(0, len(texts), 1000):
            store.batch(
                [
                    PutOp(NAMESPACE, str(i), {"text": texts[i]})
                    for i in range(start, min(start + 1000, len(texts)))
                ]
            )
