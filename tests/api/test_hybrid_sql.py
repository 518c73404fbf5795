"""The search SQL against the pure ranking reference (R41, R62), and filtered recall.

``server.storage.hybrid`` must rank exactly as ``server.domain.ranking.rank``
does on the same candidates, with the keyword score BM25 as
``server.domain.bm25`` computes it, and a filtered search through the HNSW index
must return what exact search returns.

The tests use their own searchable tables (the shape memory versions and
history parts share, with BM25 postings and statistics built by migration
0011's functions), so the generic builder is checked without the memory gate;
the memory and history tests check the gate on top.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    MetaData,
    Table,
    Text,
    Uuid,
    and_,
    bindparam,
    cast,
    func,
    literal_column,
    null,
    select,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import BIT, DOUBLE_PRECISION, TSVECTOR

from server.database import Database
from server.domain.bm25 import BM25
from server.domain.ranking import Candidate, Mode, rank
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.embedding import Embedder
from server.storage.bm25 import Postings
from server.storage.hybrid import build_search
from server.storage.hybrid_run import hybrid_search
from server.storage.nearest import SHARE_K, bits_below
from server.storage.search_terms import tsquery, uses_web_syntax
from server.storage.source import SearchSource
from tests import bm25_reference as by_hand

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
TINY_POOL = replace(DEFAULT_PRESET, name="tiny", candidate_pool=1, pool_factor=1)
# a preset whose newest records matter most: a new record gains half a first place
RECENCY_HEAVY = replace(
    DEFAULT_PRESET, name="recency_heavy", recency_weight=0.5, recency_half_life_days=7.0
)
MODES: tuple[Mode, ...] = ("hybrid", "lexical", "vector")

_meta = MetaData()
PROBE = Table(
    "hybrid_probe",
    _meta,
    Column("id", Uuid, primary_key=True),
    Column("grp", Integer, nullable=False),
    Column("body", Text, nullable=False),
    Column("embedding", Vector(384), nullable=False),
    Column("search_tsv", TSVECTOR),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("embedding_bits", BIT(384)),
)
RECALL = Table(
    "hybrid_recall_probe",
    _meta,
    Column("id", Uuid, primary_key=True),
    Column("grp", Integer, nullable=False),
    Column("embedding", Vector(384), nullable=False),
    Column("search_tsv", TSVECTOR),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("embedding_bits", BIT(384)),
)

# the probe's BM25 index, built as migration 0011 builds memory's: one group a range
PROBE_AGENT = uuid.UUID(int=7)
PROBE_POSTINGS = Table(
    "hybrid_probe_postings",
    _meta,
    Column("agent_id", Uuid, nullable=False),
    Column("grp", Integer, nullable=False),
    Column("doc_id", Uuid, nullable=False),
    Column("term", Text, nullable=False),
    Column("impact", DOUBLE_PRECISION, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
PROBE_STATS = Table(
    "hybrid_probe_stats",
    _meta,
    Column("agent_id", Uuid, nullable=False),
    Column("grp", Integer, nullable=False),
    Column("term", Text, nullable=False),
    Column("docs", Integer, nullable=False),
)
_POSTINGS_DDL = [
    "DROP TABLE IF EXISTS hybrid_probe_postings, hybrid_probe_stats",
    "CREATE TABLE hybrid_probe_postings (agent_id uuid NOT NULL, grp integer NOT NULL,"
    " doc_id uuid NOT NULL, term text NOT NULL, impact float8 NOT NULL,"
    " created_at timestamptz NOT NULL, PRIMARY KEY (agent_id, doc_id, term) INCLUDE (impact))",
    "CREATE INDEX ON hybrid_probe_postings"
    " (agent_id, grp, term, impact DESC, created_at DESC, doc_id)",
    "CREATE TABLE hybrid_probe_stats (agent_id uuid NOT NULL, grp integer NOT NULL,"
    " term text NOT NULL, docs integer NOT NULL)",
    "INSERT INTO hybrid_probe_postings SELECT :agent, grp, id, t.term, t.impact, created_at"
    f" FROM hybrid_probe, bm25_terms(search_tsv, {BM25.k1}, {BM25.b}, {BM25.avgdl}) t",
    "INSERT INTO hybrid_probe_stats SELECT :agent, grp, t.term, count(*) FROM hybrid_probe,"
    " LATERAL (SELECT '' UNION ALL SELECT unnest(tsvector_to_array(search_tsv))) t(term)"
    " GROUP BY 1, 2, 3",
]

WORDS = [
    "garden",
    "tomato",
    "harvest",
    "rain",
    "hiking",
    "mountain",
    "trail",
    "coffee",
    "morning",
    "meeting",
    "budget",
    "report",
    "deadline",
    "piano",
    "concert",
    "violin",
    "dog",
    "walk",
    "park",
    "birthday",
    "cake",
    "sister",
    "flight",
    "paris",
    "museum",
]

_DDL = """
CREATE TABLE {name} (
    id uuid PRIMARY KEY,
    grp integer NOT NULL,
    {body}
    embedding vector(384) NOT NULL,
    search_tsv tsvector {tsv},
    created_at timestamptz NOT NULL,
    embedding_bits bit(384) GENERATED ALWAYS AS (binary_quantize(embedding)::bit(384)) STORED
)"""


def source(table: Table, grp: int, *, bounded: bool = False) -> SearchSource:
    """The rows of group ``grp``; keywords from the probe's postings, the first of each
    term (``bounded``) or every full-text match."""
    p, s = PROBE_POSTINGS.c, PROBE_STATS.c
    keywords = Postings(
        table=PROBE_POSTINGS,
        key="doc_id",
        agent=literal_column(f"'{PROBE_AGENT}'::uuid"),
        ranges=(and_(p.agent_id == PROBE_AGENT, p.grp == grp),),
        few=None,
        stats=PROBE_STATS,
        stats_where=and_(s.agent_id == PROBE_AGENT, s.grp == grp),
    )
    return SearchSource(
        from_=table,
        key=table.c.id,
        embedding=table.c.embedding,
        tsv=table.c.search_tsv,
        created_at=table.c.created_at,
        where=table.c.grp == grp,
        bits=table.c.embedding_bits,
        keywords=keywords if table is PROBE else None,
        bounded=bounded,
    )


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(384)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


# -- a small table: every row's signals are known, so rank() can be run on them --


@pytest.fixture(scope="module")
async def probe(database: Database, embedder: Embedder) -> AsyncIterator[dict[str, Any]]:
    rng = random.Random(7)
    bodies: list[str] = []
    for _ in range(70):
        bodies.append(" ".join(rng.sample(WORDS, rng.randint(1, 5))))
    bodies += [bodies[3]] * 3 + [bodies[10]] * 2  # equal texts: equal cosines and ranks
    vectors = [v for v, _ in embedder.encode_now(bodies)]
    base = NOW - timedelta(days=400)
    times = [base + timedelta(days=rng.uniform(0, 420)) for _ in bodies]
    times[71] = times[72] = times[3]  # equal text and time: only the key settles it
    times[5] = NOW + timedelta(days=3)  # stamped in the future: counts as new
    rows = [
        {"id": uuid.uuid4(), "grp": 1 if i % 4 else 2, "body": b, "embedding": v, "created_at": t}
        for i, (b, v, t) in enumerate(zip(bodies, vectors, times, strict=True))
    ]
    async with database.session() as db:
        await db.execute(text("DROP TABLE IF EXISTS hybrid_probe"))
        await db.execute(
            text(
                _DDL.format(
                    name="hybrid_probe",
                    body="body text NOT NULL,",
                    tsv="GENERATED ALWAYS AS (to_tsvector('english', body)) STORED",
                )
            )
        )
        await db.execute(
            text("CREATE INDEX ON hybrid_probe USING hnsw (embedding vector_cosine_ops)")
        )
        await db.execute(text("CREATE INDEX ON hybrid_probe USING gin (search_tsv)"))
        await db.execute(PROBE.insert(), rows)
        for ddl in _POSTINGS_DDL:
            await db.execute(text(ddl), {"agent": PROBE_AGENT})
        await db.commit()
    yield {"rows": rows, "vectors": vectors}
    async with database.session() as db:
        await db.execute(text("DROP TABLE hybrid_probe, hybrid_probe_postings, hybrid_probe_stats"))
        await db.commit()


async def reference(
    database: Database, grp: int, query: str | None, vector: list[float] | None
) -> list[Candidate]:
    """Every row of the group with the signals computed for it: the cosine by
    PostgreSQL, the BM25 score by hand (``tests.bm25_reference``) for a row the query
    matches (web-search syntax: ``@@``; else: it holds a query term)."""
    nothing = cast(null(), DOUBLE_PRECISION)
    cosine: Any = nothing
    matched: Any = nothing
    if vector is not None:
        q = bindparam("q", vector, type_=Vector(384))
        distance = PROBE.c.embedding.op("<=>", return_type=DOUBLE_PRECISION)(q)
        cosine = literal_column("1") - distance
    if query is not None:
        matched = PROBE.c.search_tsv.op("@@")(tsquery(query))
    stmt = select(PROBE.c.id, PROBE.c.created_at, cosine, matched).where(PROBE.c.grp == grp)
    lexical: dict[str, float | None] = {}
    async with database.session() as db:
        rows = (await db.execute(stmt)).all()
        if query is not None:
            terms = await by_hand.query_terms(db, query)
            docs = await by_hand.documents(
                db, table="hybrid_probe", key="id", where="grp = :g", params={"g": grp}
            )
            lexical = by_hand.scores(docs, docs, terms)
    return [
        Candidate(str(r[0]), r[1], r[2], lexical.get(str(r[0])) if r[3] else None) for r in rows
    ]


async def search(
    database: Database, grp: int, *, bounded: bool = False, **kw: Any
) -> list[tuple[str, float, float | None, float | None]]:
    async with database.session() as db:
        hits = await hybrid_search(db, source=source(PROBE, grp, bounded=bounded), **kw)
    return [(str(h.key), h.score, h.cosine, h.lexical) for h in hits]


def expected(
    cands: list[Candidate], **kw: Any
) -> list[tuple[str, float, float | None, float | None]]:
    return [(r.key, r.score, r.cosine, r.lexical) for r in rank(cands, **kw)]


def random_query(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.randint(1, 3))
    shape = rng.random()
    if shape < 0.15:
        return f'"{words[0]} {rng.choice(WORDS)}"'
    if shape < 0.3:
        return f"{words[0]} -{rng.choice(WORDS)}"
    if shape < 0.4:
        return f"{words[0]} OR {rng.choice(WORDS)}"
    if shape < 0.45:
        return "the and of"  # stop words only: no keyword matches at all
    return " ".join(words)


async def test_r41_sql_ranks_as_the_reference_on_the_same_candidates(
    database: Database, embedder: Embedder, probe: dict[str, Any]
) -> None:
    """R41: for random queries, modes, thresholds, limits and presets, the one-statement
    search returns the keys, scores and signals ``rank()`` computes on the same rows, the
    keyword score BM25 by hand; from the postings (bounded) too: the query's terms hold
    fewer postings than the budget, so every match is read and scored."""
    rng = random.Random(11)
    presets: list[FusionPreset] = [DEFAULT_PRESET, RECENCY_HEAVY, TINY_POOL]
    checked = exact_bounded = 0
    for case_no in range(120):
        query = random_query(rng)
        vector = (
            probe["vectors"][rng.randrange(len(probe["vectors"]))]
            if rng.random() < 0.3
            else (await embedder.embed_one(query))[0]
            if rng.random() < 0.8
            else unit(rng)
        )
        mode = MODES[case_no % 3]
        args: dict[str, Any] = {
            "mode": mode,
            "min_score": rng.choice([-1.0, 0.0, 0.1, 0.2, 0.35, 0.5, 0.9]),
            "limit": rng.choice([0, 1, 2, 5, 10, 30]),
            "now": NOW,
            "preset": rng.choice(presets),
        }
        words = None if mode == "vector" else query  # vector mode reads no text
        cands = await reference(database, 1, words, vector)
        got = await search(database, 1, text=words, vector=vector, **args)
        want = expected(cands, **args)
        assert got == want, (query, args)
        checked += bool(want)
        if words is not None:
            bounded = await search(database, 1, bounded=True, text=words, vector=vector, **args)
            assert bounded == want, (query, args)
            exact_bounded += bool(want)
    assert checked > 60  # most cases found something: the comparison is not vacuous
    assert exact_bounded > 30


async def test_r41_other_rows_never_appear_and_ties_go_newest_then_key(
    database: Database, probe: dict[str, Any]
) -> None:
    """R41: the filter decides the candidates; equal cosines order newer first, then by key."""
    rows = probe["rows"]
    twin = probe["vectors"][3]  # rows 3, 71, 72, 73 share the text; 71 and 72 the time too
    hits = await search(
        database, 1, text=None, vector=twin, mode="vector", min_score=0.99, limit=10, now=NOW
    )
    group1 = {str(r["id"]) for r in rows if r["grp"] == 1}
    assert hits and {k for k, *_ in hits} <= group1
    same = [r for r in rows if r["body"] == rows[3]["body"] and r["grp"] == 1]
    order = sorted(same, key=lambda r: (NOW - r["created_at"], str(r["id"])))
    assert [k for k, *_ in hits] == [str(r["id"]) for r in order]
    other = await search(
        database, 2, text=None, vector=twin, mode="vector", min_score=-1, limit=100, now=NOW
    )
    assert {k for k, *_ in other} == {str(r["id"]) for r in rows if r["grp"] == 2}


async def test_r41_keywords_match_any_word_or_web_syntax(
    database: Database, probe: dict[str, Any]
) -> None:
    """R41: plain words match records sharing any of them (more shared words rank
    higher); quotes, ``or`` and ``-word`` are read as web-search syntax."""
    rows = [r for r in probe["rows"] if r["grp"] == 1]

    async def lexical(q: str) -> set[str]:
        hits = await search(
            database, 1, text=q, vector=None, mode="lexical", min_score=0.0, limit=100, now=NOW
        )
        assert all(c is None for _, _, c, _ in hits)  # no vector: no cosine
        return {k for k, *_ in hits}

    def having(pred: Any) -> set[str]:
        return {str(r["id"]) for r in rows if pred(set(r["body"].split()))}

    a, b = next(r["body"].split()[:2] for r in rows if len(r["body"].split()) >= 2)
    assert await lexical(f"{a} {b}") == having(lambda w: {a, b} & w)
    assert await lexical(f"the {a}s and {b}s") == having(lambda w: {a, b} & w)
    assert await lexical(f"{a} -{b}") == having(lambda w: a in w and b not in w)
    assert await lexical(f"{a} OR {b}") == having(lambda w: {a, b} & w)
    assert await lexical(f'"{b} {a}"') <= having(lambda w: {a, b} <= w)
    assert await lexical("the of and") == set()
    ranked = await search(
        database, 1, text=f"{a} {b}", vector=None, mode="lexical", min_score=0.0, limit=100, now=NOW
    )
    with_both = having(lambda w: {a, b} <= w)
    assert with_both and {k for k, *_ in ranked[: len(with_both)]} == with_both
    assert [uses_web_syntax(q) for q in ('"a b"', "a -b", "a OR b", "a or b", "e-mail")] == [
        True,
        True,
        True,
        False,
        False,
    ]


async def test_r41_bad_arguments_are_refused(database: Database) -> None:
    """R41: a mode without its input, an unknown mode, a negative limit are errors."""
    src = source(PROBE, 1)
    bad: list[dict[str, Any]] = [
        {"mode": "hybrid", "text": None, "vector": [0.0] * 384},
        {"mode": "vector", "text": "x", "vector": None},
        {"mode": "lexical", "text": None, "vector": None},
        {"mode": "semantic", "text": "x", "vector": [0.0] * 384},
        {"mode": "vector", "text": None, "vector": [0.0] * 384, "limit": -1},
        {"mode": "vector", "text": None, "vector": [0.0] * 384, "min_score": 1.5},
    ]
    for kw in bad:
        args = {"min_score": 0.0, "limit": 5, "now": NOW} | kw
        with pytest.raises(ValueError):
            build_search(source=src, **args)
    assert (
        await search(database, 1, text="x", vector=[0.1] * 384, mode="hybrid", min_score=0, limit=0)
        == []
    )


# -- filtered recall: 5k rows of one group in a table of 100k --

RECALL_ROWS = 100_000
SMALL, LARGE = 3, 1  # group 3: every 20th row (5,000); group 1: every other row (50,000)
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
]


def groups(n: int) -> np.ndarray:
    i = np.arange(n)
    return np.where(i % 20 == SMALL, SMALL, np.where(i % 2 == 0, LARGE, 2))


def _copy_payload(grps: np.ndarray, vectors: np.ndarray, times: np.ndarray) -> bytes:
    """A binary COPY stream of (id, grp, embedding, created_at) rows, built with numpy."""
    n, dim = vectors.shape
    row = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", "V16"),
            ("grp_len", ">i4"),
            ("grp", ">i4"),
            ("vec_len", ">i4"),
            ("dim", ">i2"),
            ("unused", ">i2"),
            ("vec", ">f4", (dim,)),
            ("ts_len", ">i4"),
            ("ts", ">i8"),
        ]
    )
    out = np.zeros(n, dtype=row)
    out["fields"] = 4
    out["id_len"], out["grp_len"], out["vec_len"], out["ts_len"] = 16, 4, 4 + 4 * dim, 8
    out["id"] = np.frombuffer(np.random.default_rng(5).bytes(16 * n), dtype="V16")
    out["grp"] = grps
    out["dim"] = dim
    out["vec"] = vectors
    out["ts"] = times
    header = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
    return header + out.tobytes() + struct.pack(">h", -1)


@dataclass
class RecallData:
    bases: np.ndarray  # real sentence embeddings the rows are blended from


@pytest.fixture(scope="module")
async def recall_table(database: Database, embedder: Embedder) -> AsyncIterator[RecallData]:
    """100k rows, each a blend of two real sentence embeddings of the model (so the
    vectors have the structure real memories have); groups of 5k and 50k rows.

    The index is built with m=8, ef_construction=16 (the schema's indexes use 16
    and 64) so that it builds in seconds; a sparser graph makes recall harder, not
    easier.
    """
    sentences = [f"{a} {b} {c}" for a in SUBJECTS for b in ACTS for c in THINGS][::2]
    bases = np.array([v for v, _ in embedder.encode_now(sentences)], dtype=np.float32)
    rng = np.random.default_rng(1)
    i, j = rng.integers(0, len(bases), (2, RECALL_ROWS))
    weight = rng.uniform(0.5, 1.0, (RECALL_ROWS, 1)).astype(np.float32)
    vectors = weight * bases[i] + (1 - weight) * bases[j]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pg_epoch = datetime(2000, 1, 1, tzinfo=UTC)
    start = int((NOW - timedelta(days=365) - pg_epoch).total_seconds() * 1e6)
    times = start + rng.integers(0, 365 * 86_400 * 10**6, RECALL_ROWS)
    payload = _copy_payload(groups(RECALL_ROWS), vectors, times)
    async with database.session() as db:
        await db.execute(text("DROP TABLE IF EXISTS hybrid_recall_probe"))
        await db.execute(text(_DDL.format(name="hybrid_recall_probe", body="", tsv="")))
        raw = await (await db.connection()).get_raw_connection()
        cur = raw.driver_connection.cursor()  # type: ignore[union-attr]
        columns = "hybrid_recall_probe (id, grp, embedding, created_at)"
        async with cur.copy(f"COPY {columns} FROM STDIN WITH (FORMAT BINARY)") as copy:
            await copy.write(payload)
        await db.execute(
            text("CREATE INDEX ON hybrid_recall_probe (grp) INCLUDE (id, embedding_bits)")
        )
        await db.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
        await db.execute(text("SET LOCAL statement_timeout = 0"))  # a 100k-row index build
        await db.execute(
            text(
                "CREATE INDEX hybrid_recall_probe_hnsw ON hybrid_recall_probe"
                " USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 16)"
            )
        )
        await db.commit()
    async with database.engine.connect() as conn:  # type: ignore[union-attr]
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE hybrid_recall_probe"))
    yield RecallData(bases=bases)
    async with database.session() as db:
        await db.execute(text("DROP TABLE hybrid_recall_probe"))
        await db.commit()


def recall_source(grp: int) -> SearchSource:
    return replace(
        source(RECALL, grp), probe=select(literal_column("1")).where(RECALL.c.grp == grp)
    )


def recall_queries(data: RecallData, n: int) -> list[list[float]]:
    """Real sentence embeddings, slightly off any stored row, as queries."""
    rng = np.random.default_rng(3)
    picks = data.bases[rng.integers(0, len(data.bases), n)]
    picks = picks + 0.02 * rng.standard_normal(picks.shape).astype(np.float32)
    return [[float(x) for x in q / np.linalg.norm(q)] for q in picks]


async def ran_index(database: Database, src: SearchSource, q: list[float]) -> bool:
    """Whether the search's statement ran the HNSW index (EXPLAIN ANALYZE)."""
    stmt = build_search(
        source=src, text=None, vector=q, mode="vector", min_score=-1.0, limit=10, now=NOW
    )
    compiled = stmt.compile(dialect=postgresql.psycopg.dialect())  # type: ignore[attr-defined]
    params = {
        k: "[" + ",".join(map(str, v)) + "]" if isinstance(v, list) else v
        for k, v in compiled.construct_params().items()
    }
    async with database.session() as db:
        raw = await (await db.connection()).get_raw_connection()
        cur = raw.driver_connection.cursor()  # type: ignore[union-attr]
        await cur.execute("EXPLAIN (ANALYZE, COSTS OFF) " + str(compiled), params)
        plan = [r[0] for r in await cur.fetchall()]
    scans = [line for line in plan if "hybrid_recall_probe_hnsw" in line]
    assert scans, "\n".join(plan)
    return not all("never executed" in line for line in scans)


async def top10(database: Database, src: SearchSource, q: list[float], **kw: Any) -> list[Any]:
    async with database.session() as db:
        hits = await hybrid_search(
            db,
            source=src,
            text=None,
            vector=q,
            mode="vector",
            min_score=-1.0,
            limit=10,
            now=NOW,
            **kw,
        )
    return [(h.key, h.score) for h in hits]


async def recall_at_10(
    database: Database, src: SearchSource, queries: list[list[float]], **kw: Any
) -> float:
    """The share of exact ranking's top ten that the search's top ten holds."""
    found = total = 0
    for q in queries:
        want = {k for k, _ in await top10(database, src, q, path="exact")}
        got = {k for k, _ in await top10(database, src, q, **kw)}
        found += len(want & got)
        total += len(want)
    return found / total


async def test_r41_an_agent_with_5k_of_100k_rows_is_ranked_by_its_bits(
    database: Database, recall_table: RecallData
) -> None:
    """R41: a group of 5k rows in a table of 100k is ranked by its embeddings' bits, the
    best of them exactly (the probe picks bits: sqrt(900 x 100k) = 9,486 rows or fewer;
    the index is never executed). Its top ten holds at least 99% of exact ranking's, no
    less than the index path forced on the same group keeps, and the scores it returns
    are the exact cosines."""
    src = recall_source(SMALL)
    queries = recall_queries(recall_table, 40)
    assert not await ran_index(database, src, queries[0])
    by_bits = await recall_at_10(database, src, queries)
    by_index = await recall_at_10(database, src, queries, path="index")
    assert by_bits >= 0.99 and by_bits >= by_index, (by_bits, by_index)
    exact = dict(await top10(database, src, queries[0], path="exact"))
    for key, score in await top10(database, src, queries[0]):
        assert key not in exact or exact[key] == score
    async with database.session() as db:
        below = await db.scalar(select(bits_below(RECALL)))
    assert below == int((SHARE_K * RECALL_ROWS) ** 0.5 + 0.5)


async def test_r41_a_source_no_larger_than_the_oversample_is_ranked_exactly(
    database: Database, recall_table: RecallData
) -> None:
    """R41: ranking by bits reranks the first 8 x (pool + slack) rows by their exact
    cosine: a source that holds no more rows than that is ranked exactly, always."""
    tiny = replace(
        source(RECALL, SMALL),
        where=and_(RECALL.c.grp == SMALL, RECALL.c.created_at < NOW - timedelta(days=364)),
    )
    async with database.session() as db:
        rows = await db.scalar(select(func.count()).where(tiny.where))
    assert rows is not None and 0 < rows <= 8 * 48
    for q in recall_queries(recall_table, 10):
        assert await top10(database, tiny, q, path="bits") == await top10(
            database, tiny, q, path="exact"
        )


async def test_r41_the_statement_plans_the_same_prepared_or_not(
    database: Database, recall_table: RecallData
) -> None:
    """R41: the search needs no setting before it and its plan does not depend on the
    values: the generic plan of a prepared statement (EXPLAIN GENERIC_PLAN) reads the
    bits from the covering index only and the HNSW index in distance order, the HNSW
    settings set by the statement itself when that branch runs."""
    stmt = build_search(
        source=recall_source(SMALL),
        text=None,
        vector=recall_queries(recall_table, 1)[0],
        mode="vector",
        min_score=-1.0,
        limit=10,
        now=NOW,
    )
    dialect = postgresql.psycopg.dialect(paramstyle="numeric_dollar")  # type: ignore[attr-defined]
    async with database.session() as db:
        raw = await (await db.connection()).get_raw_connection()
        cur = raw.driver_connection.cursor()  # type: ignore[union-attr]
        await cur.execute("EXPLAIN (GENERIC_PLAN, COSTS OFF) " + str(stmt.compile(dialect=dialect)))
        plan = "\n".join(r[0] for r in await cur.fetchall())
    assert "Index Only Scan using hybrid_recall_probe_grp_id_embedding_bits_idx" in plan, plan
    assert "Index Scan using hybrid_recall_probe_hnsw" in plan, plan
    assert "set_config" not in plan.split("Index Scan using hybrid_recall_probe_hnsw")[1]
    assert "One-Time Filter" in plan


async def test_r41_a_large_agent_uses_the_index_and_keeps_its_recall(
    database: Database, recall_table: RecallData
) -> None:
    """R41: a group of 50k rows (half the table) goes through the HNSW index with
    iterative scans; its top-10 agrees with exact search for at least 95% of the
    results. Forced onto the index, the 5k group keeps that recall too."""
    queries = recall_queries(recall_table, 30)
    for grp in (LARGE, SMALL):
        src = recall_source(grp)
        forced = {} if grp == LARGE else {"path": "index"}
        if grp == LARGE:
            assert await ran_index(database, src, queries[0])
        recall = await recall_at_10(database, src, queries, **forced)
        assert recall >= 0.95, (grp, recall)


async def test_r41_without_iterative_scans_the_filtered_index_loses_rows(
    database: Database, recall_table: RecallData
) -> None:
    """R41: why the settings matter: a plain HNSW scan stops after ef_search rows, most of
    other groups, and the filter leaves fewer than the limit."""
    q = recall_queries(recall_table, 1)[0]
    async with database.session() as db:
        await db.execute(text("SET LOCAL hnsw.iterative_scan = off"))
        await db.execute(text("SET LOCAL hnsw.ef_search = 40"))
        rows = (
            await db.execute(
                text(
                    "SELECT id FROM hybrid_recall_probe WHERE grp = :g"
                    " ORDER BY embedding <=> CAST(:q AS vector) LIMIT 40"
                ),
                {"g": SMALL, "q": "[" + ",".join(map(str, q)) + "]"},
            )
        ).all()
    assert len(rows) < 10
