"""What the benchmarks share: a database, the model, data, bulk loading, timing, tables.

The database is the server's own: ``DATABASE_URL`` if set, otherwise the embedded
PostgreSQL in the data directory (``AGENT_MEMORY_DATA_DIR``, default ``.data``).
Each benchmark works in databases of its own, named ``bench_*``; a loaded data set
is kept between runs (its database name says what it holds), so a second full run
does not load a million rows again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
from sqlalchemy.engine import URL

from server import migrate
from server.database import Database, normalise_url
from server.domain.visibility import Reader
from server.embedded import EmbeddedPostgres
from server.embedding import Embedder, default_model_path
from server.services import agents, turns
from server.settings import Settings

_server: EmbeddedPostgres | None = None
Grid = TypeVar("Grid")


def _locomo() -> Path:
    """The LoCoMo conversations: ``shared/data/locomo`` beside the checkout (or beside a
    folder that holds it, as a worktree's)."""
    checkout = Path(__file__).resolve().parents[1]
    for folder in checkout.parents:
        if (folder / "shared" / "data" / "locomo").is_dir():
            return folder / "shared" / "data" / "locomo"
    return checkout.parent / "shared" / "data" / "locomo"


LOCOMO = _locomo()


def settings() -> Settings:
    return Settings()


def admin_url() -> URL:
    """The server's admin URL: DATABASE_URL's server, or the embedded one (started once)."""
    global _server
    s = settings()
    if s.database_url:
        return normalise_url(s.database_url)
    if _server is None:
        _server = EmbeddedPostgres(s.data_dir, database="postgres")
        return _server.start()
    return _server.start()


def scalar(conn: psycopg.Connection[Any], sql: str, params: Sequence[Any] = ()) -> Any:
    """The first column of the first row ``sql`` returns, ``None`` for no row."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def mem0_config(url: URL, collection: str) -> dict[str, Any]:
    """Mem0 OSS as the peers run it: pgvector in this database, our model through its
    HuggingFace embedder, and an LLM that is never called (``add(infer=False)`` and
    ``search`` make no LLM call)."""
    return {
        "vector_store": {
            "provider": "pgvector",
            "config": {
                "connection_string": dsn(url),
                "collection_name": collection,
                "embedding_model_dims": 384,
                "hnsw": True,
            },
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": default_model_path(), "embedding_dims": 384},
        },
        "llm": {"provider": "openai", "config": {"api_key": "unused", "model": "unused"}},
        "history_db_path": f"/tmp/bench-mem0-{uuid.uuid4().hex[:8]}.db",
    }


def dsn(url: URL) -> str:
    """A psycopg connection string for a SQLAlchemy URL."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def database(name: str, *, fresh: bool = False) -> tuple[URL, bool]:
    """The URL of database ``name`` (created and migrated if missing); and whether it existed."""
    admin = admin_url()
    with psycopg.connect(dsn(admin.set(database="postgres")), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and fresh:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name)
    migrate.upgrade(url)
    return url, exists is not None


def drop(name: str) -> None:
    admin = admin_url()
    with psycopg.connect(dsn(admin.set(database="postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def embedder(*, cache: bool = True) -> Embedder:
    """The model as the server builds it from the settings (``AGENT_MEMORY_EMBEDDING_*``)."""
    model = Embedder.from_settings(
        settings().model_copy(update={"embedding_cache_size": 4096 if cache else 0})
    )
    model.load()
    return model


async def connect(url: URL) -> Database:
    db = Database(Settings(database_url=url.render_as_string(hide_password=False)))
    await db.connect()
    return db


# -- timing and tables --------------------------------------------------------------------


@dataclass
class Timings:
    seconds: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p99(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000


async def timed(calls: Iterable[Callable[[], Any]], *, warmup: int = 5) -> Timings:
    calls = list(calls)
    for call in calls[:warmup]:
        await call()
    out = []
    for call in calls:
        start = time.perf_counter()
        await call()
        out.append(time.perf_counter() - start)
    return Timings(out)


async def timed_side_by_side(
    first: Iterable[Callable[[], Any]], second: Iterable[Callable[[], Any]], *, warmup: int = 5
) -> tuple[Timings, Timings]:
    """Two paths over the same inputs, the i-th call of each timed next to the other's, in
    alternating order: whichever runs a query first warms the pages for the other, so
    neither path is always the one to pay for a cold cache."""
    pairs = list(zip(first, second, strict=True))
    for a, b in pairs[:warmup]:
        await a()
        await b()
    out: tuple[list[float], list[float]] = ([], [])
    for i, pair in enumerate(pairs):
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            await pair[which]()
            out[which].append(time.perf_counter() - start)
    return Timings(out[0]), Timings(out[1])


def table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    print(flush=True)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


# -- data -----------------------------------------------------------------------------------

SUBJECTS = [
    "my sister",
    "the landlord",
    "our team",
    "grandpa",
    "the vet",
    "a colleague",
    "my neighbour",
    "the coach",
    "doctor Patel",
    "the kids",
    "Maria",
    "the client",
    "my brother",
    "the accountant",
    "our manager",
    "the plumber",
]
ACTS = [
    "booked",
    "cancelled",
    "recommended",
    "complained about",
    "paid for",
    "forgot",
    "planned",
    "moved",
    "asked about",
    "loved",
    "postponed",
    "reviewed",
]
THINGS = [
    "the dentist appointment",
    "a trip to Lisbon",
    "the quarterly budget",
    "piano lessons",
    "the broken heater",
    "a birthday party",
    "the garden shed",
    "a marathon",
    "the car insurance",
    "a vegan restaurant",
    "the school play",
    "a new laptop",
    "the tax return",
    "a hiking weekend",
    "the kitchen renovation",
    "a job interview",
]
WHEN = [
    "last Monday",
    "in March",
    "next weekend",
    "yesterday",
    "two years ago",
    "this morning",
    "before Christmas",
    "after the storm",
]
_SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "nax", "ber", "quo"]


def sentences(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct memory-like sentences."""
    all_ = [f"{a} {b} {c} {d}" for a, b, c, d in itertools.product(SUBJECTS, ACTS, THINGS, WHEN)]
    random.Random(seed).shuffle(all_)
    return all_[:n]


def extra_words(count: int, seed: int = 0) -> list[str]:
    """Made-up words, so that records also carry rarer keywords."""
    rng = random.Random(seed)
    return ["".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in range(count)]


def zipf_texts(n: int, *, words: int, vocabulary: list[str], seed: int) -> list[str]:
    """``n`` texts of ``words`` words drawn Zipf-like from ``vocabulary`` (its head, the
    words as common as stop words, left out), so keyword matches are as selective as in
    natural text: a content word is in a few percent of records at most."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(100, len(vocabulary) + 100, dtype=np.float64)
    p = 1 / ranks
    p /= p.sum()
    picks = rng.choice(len(vocabulary), size=(n, words), p=p)
    return [" ".join(vocabulary[i] for i in row) for row in picks]


def blend(bases: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` vectors, each a blend of two base embeddings (normalised); the main base."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(bases), (2, n))
    w = rng.uniform(0.6, 1.0, (n, 1)).astype(np.float32)
    out = w * bases[i] + (1 - w) * bases[j]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32), i


# -- bulk loading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """An agent with a committed turn and its execution, to hang bulk records on."""

    agent_id: uuid.UUID
    version_id: uuid.UUID
    session_id: uuid.UUID
    turn_id: uuid.UUID
    execution_id: uuid.UUID

    def reader(self) -> Reader:
        """The owner's committed turn reading memory of both scopes."""
        return Reader.for_turn(
            agent_id=self.agent_id,
            session_id=self.session_id,
            turn_id=self.turn_id,
            preview=False,
            read_scopes=("session", "agent"),
            write_scopes=("session", "agent"),
        )


async def make_owner(db: Database, *, namespace: str, config: dict[str, Any]) -> Owner:
    async with db.session() as s:
        agent = await agents.create_agent(s, namespace=namespace, name="bench")
        version = await agents.publish_version(s, agent_id=agent.id, config=config)
        session = await agents.create_session(s, agent_id=agent.id)
        begun = await turns.begin_turn(s, session_id=session.id)
        await turns.commit_turn(s, turn_id=begun.turn.id)
        await s.commit()
        return Owner(agent.id, version.id, session.id, begun.turn.id, begun.execution.id)


MEMORY_CONFIG = {
    "harness": {
        "memory": {
            "enabled": True,
            "scope": {"read": ["session", "agent"], "write": ["session", "agent"]},
            "tools": ["add_memory", "read_memory", "delete_memory"],
            "search": {"mode": "hybrid", "max_results": 10, "min_score": 0.2},
        }
    }
}

_INDEXES = {
    "ix_memory_versions_embedding": "CREATE INDEX ix_memory_versions_embedding ON memory_versions"
    " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)",
    "ix_memory_versions_agent_tsv": "CREATE INDEX ix_memory_versions_agent_tsv"
    " ON memory_versions USING gin (agent_id, search_tsv)",
    "ix_memory_versions_agent_bits": "CREATE INDEX ix_memory_versions_agent_bits"
    " ON memory_versions (agent_id)"
    " INCLUDE (id, record_id, search_scope, session_id, kind, embedding_bits)",
}


# Index builds of a bulk load: memory and workers for the session that builds them.
BUILD_MEMORY = "4GB"
BUILD_WORKERS = max(1, min(4, (os.cpu_count() or 2) - 1))


def drop_search_indexes(conn: psycopg.Connection[Any]) -> None:
    """Bulk loads go faster without the search indexes; :func:`build_search_indexes` after."""
    for name in _INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def build_search_indexes(
    conn: psycopg.Connection[Any], *, memory: str = BUILD_MEMORY, workers: int = BUILD_WORKERS
) -> float:
    """Rebuild the schema's search indexes (as the migration defines them); seconds taken.
    ``memory`` and ``workers``: each build's ``maintenance_work_mem`` and parallel workers
    (on Citus each shard's build takes them, several shards at once)."""
    start = time.perf_counter()
    # An HNSW graph built in memory is several times faster than one that spills: 1M
    # vectors of 384 dimensions take about 2 GB (pgvector reports when the graph no longer
    # fits). For this session only; a parallel build shares it with its workers.
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
    for name, ddl in _INDEXES.items():
        if not scalar(conn, "SELECT to_regclass(%s)", (name,)):
            conn.execute(ddl)
    conn.execute("VACUUM ANALYZE memory_records")
    conn.execute("VACUUM ANALYZE memory_versions")
    conn.execute("VACUUM ANALYZE memory_postings")
    return time.perf_counter() - start


def bulk_records(
    conn: psycopg.Connection[Any],
    owner: Owner,
    *,
    vectors: np.ndarray,
    texts: Sequence[str],
    text_of: np.ndarray,
    created_at: np.ndarray | None = None,
) -> list[uuid.UUID]:
    """Insert ACTIVE, committed AGENT-scope records with one version each, fast: vectors by
    binary COPY, texts by index (row ``i`` has ``texts[text_of[i]]``). ``created_at`` is
    microseconds since 2000-01-01 UTC per row (default: now). Returns the record ids."""
    n = len(vectors)
    records = [uuid.uuid4() for _ in range(n)]
    versions = [uuid.uuid4() for _ in range(n)]
    if created_at is None:
        now = datetime.now(UTC) - datetime(2000, 1, 1, tzinfo=UTC)
        created_at = np.full(n, int(now.total_seconds() * 1e6) - n, dtype=np.int64) + np.arange(n)
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bench_stage (version uuid, record uuid, text_of int,"
        " created_at timestamptz, embedding vector(384))"
    )
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS bench_text (i int PRIMARY KEY, text text)")
    conn.execute("TRUNCATE bench_stage, bench_text")
    with conn.cursor().copy("COPY bench_text (i, text) FROM STDIN") as copy:
        for i, t in enumerate(texts):
            copy.write_row((i, t))
    row = np.dtype(
        [
            ("fields", ">i2"),
            ("v_len", ">i4"),
            ("v", "V16"),
            ("r_len", ">i4"),
            ("r", "V16"),
            ("t_len", ">i4"),
            ("t", ">i4"),
            ("c_len", ">i4"),
            ("c", ">i8"),
            ("e_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("e", ">f4", (384,)),
        ]
    )
    out = np.zeros(n, dtype=row)
    out["fields"] = 5
    out["v_len"] = out["r_len"] = 16
    out["t_len"] = 4
    out["c_len"] = 8
    out["e_len"] = 4 + 4 * 384
    out["v"] = np.frombuffer(b"".join(v.bytes for v in versions), dtype="V16")
    out["r"] = np.frombuffer(b"".join(r.bytes for r in records), dtype="V16")
    out["t"] = text_of
    out["c"] = created_at
    out["dim"] = 384
    out["e"] = vectors
    payload = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + out.tobytes()
    payload += struct.pack(">h", -1)
    with conn.cursor().copy(
        "COPY bench_stage (version, record, text_of, created_at, embedding)"
        " FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.write(payload)
    params = {
        "agent": owner.agent_id,
        "session": owner.session_id,
        "turn": owner.turn_id,
        "execution": owner.execution_id,
        "agent_version": owner.version_id,
    }
    conn.execute(
        "INSERT INTO memory_records (id, agent_id, session_id, scope, status, preview, pinned,"
        " current_version_id, turn_id, committed, created_at)"
        " SELECT record, %(agent)s, %(session)s, 'AGENT', 'ACTIVE', false, false, version,"
        " %(turn)s, true, created_at FROM bench_stage ORDER BY created_at",
        params,
    )
    conn.execute(
        "INSERT INTO memory_versions (id, record_id, agent_id, number, status, summary, kind,"
        " labels, embedding, execution_id, agent_version_id, session_id, turn_id, created_at)"
        " SELECT s.version, s.record, %(agent)s, 1, 'ACTIVE', t.text, 'fact', '{}'::jsonb,"
        " s.embedding, %(execution)s, %(agent_version)s, %(session)s, %(turn)s, s.created_at"
        " FROM bench_stage s JOIN bench_text t ON t.i = s.text_of",
        params,
    )
    return records


def grid(axes: dict[str, tuple[Any, ...]], base: Grid) -> list[Grid]:
    """Every combination of ``axes``' values (constant name -> values) over ``base``, a
    dataclass of constants: the grid a cross-validation chooses from."""
    names = list(axes)
    return [
        dataclasses.replace(base, **dict(zip(names, values, strict=True)))
        for values in itertools.product(*(axes[n] for n in names))
    ]


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


# -- another checkout, measured in the same run ---------------------------------------------

BASELINE_TREE = "BENCH_BASELINE_TREE"
_RUNNER = Path(__file__).with_name("tree_runner.py")


def baseline_tree() -> Path | None:
    """The checkout named by ``BENCH_BASELINE_TREE`` (``git archive <commit> | tar -x -C
    <dir>``), measured beside this one; None when unset."""
    value = os.environ.get(BASELINE_TREE)
    return Path(value) if value else None


def timed_in_tree(tree: Path | None, job: dict[str, Any]) -> dict[str, list[float]]:
    """Run :mod:`bench.tree_runner`'s ``job`` with the code of ``tree`` (None: this
    checkout) in a process of its own; its timings (seconds) by name."""
    root = tree or Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER.read_text()],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{root}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))
