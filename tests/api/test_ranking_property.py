"""The ranking read from the postings is the exhaustive one (R41, R62): on generated
documents, a search whose keyword candidates come from one read of the BM25 postings
returns the same rows, in the same order, with the same scores, as the search that
reads every full-text match, and as the pure reference ``rank()``, whenever the query's
terms hold no more postings than the budget (every posting is read). Beyond the budget
the rows it returns still carry their exact signals.

The documents are drawn from a vocabulary of a few words, so that most of them share
the query's words (a term's postings far outnumber the pool), words repeat in a
document (impacts differ), and times repeat (ties are settled by the key); the pools
are as small as the limit, so that the cut of each candidate list falls among ties.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
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
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import BIT, DOUBLE_PRECISION, TSVECTOR

from server.database import Database
from server.domain import bm25
from server.domain.bm25 import BM25
from server.domain.ranking import Candidate, Mode, rank
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.storage.bm25 import Postings
from server.storage.hybrid_run import hybrid_search
from server.storage.source import SearchSource
from tests import bm25_reference as by_hand

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
WORDS = ("walrus", "kelp", "beach", "tide", "gull", "shell", "storm")
AGENT = uuid.UUID(int=11)

_meta = MetaData()
DOCS = Table(
    "ranking_property_docs",
    _meta,
    Column("id", Uuid, primary_key=True),
    Column("body", Text, nullable=False),
    Column("embedding", Vector(384), nullable=False),
    Column("search_tsv", TSVECTOR),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("embedding_bits", BIT(384)),
)
POSTINGS = Table(
    "ranking_property_postings",
    _meta,
    Column("agent_id", Uuid, nullable=False),
    Column("doc_id", Uuid, nullable=False),
    Column("term", Text, nullable=False),
    Column("impact", DOUBLE_PRECISION, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
STATS = Table(
    "ranking_property_stats",
    _meta,
    Column("agent_id", Uuid, nullable=False),
    Column("term", Text, nullable=False),
    Column("docs", Integer, nullable=False),
)
_DDL = [
    "DROP TABLE IF EXISTS ranking_property_docs, ranking_property_postings, ranking_property_stats",
    "CREATE TABLE ranking_property_docs (id uuid PRIMARY KEY, body text NOT NULL,"
    " embedding vector(384) NOT NULL,"
    " search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,"
    " created_at timestamptz NOT NULL, embedding_bits bit(384)"
    " GENERATED ALWAYS AS (binary_quantize(embedding)::bit(384)) STORED)",
    "CREATE INDEX ON ranking_property_docs USING gin (search_tsv)",
    "CREATE TABLE ranking_property_postings (agent_id uuid NOT NULL, doc_id uuid NOT NULL,"
    " term text NOT NULL, impact float8 NOT NULL, created_at timestamptz NOT NULL,"
    " PRIMARY KEY (agent_id, doc_id, term) INCLUDE (impact))",
    "CREATE INDEX ON ranking_property_postings"
    " (agent_id, term, impact DESC, created_at DESC, doc_id)",
    "CREATE TABLE ranking_property_stats (agent_id uuid NOT NULL, term text NOT NULL,"
    " docs integer NOT NULL)",
]
# the postings and statistics as migration 0011 builds them
_INDEX = [
    "TRUNCATE ranking_property_postings, ranking_property_stats",
    "INSERT INTO ranking_property_postings SELECT :agent, id, t.term, t.impact, created_at"
    f" FROM ranking_property_docs, bm25_terms(search_tsv, {BM25.k1}, {BM25.b}, {BM25.avgdl}) t",
    "INSERT INTO ranking_property_stats SELECT :agent, t.term, count(*)"
    " FROM ranking_property_docs,"
    " LATERAL (SELECT '' UNION ALL SELECT unnest(tsvector_to_array(search_tsv))) t(term)"
    " GROUP BY 1, 2",
]


@pytest.fixture(scope="module")
async def tables(database: Database) -> AsyncIterator[None]:
    async with database.session() as db:
        for ddl in _DDL:
            await db.execute(text(ddl))
        await db.commit()
    yield
    async with database.session() as db:
        await db.execute(text(_DDL[0].replace("IF EXISTS ", "")))
        await db.commit()


def _source(*, bounded: bool) -> SearchSource:
    keywords = Postings(
        table=POSTINGS,
        key="doc_id",
        agent=literal_column(f"'{AGENT}'::uuid"),
        ranges=(POSTINGS.c.agent_id == AGENT,),
        few=None,
        stats=STATS,
        stats_where=STATS.c.agent_id == AGENT,
    )
    return SearchSource(
        from_=DOCS,
        key=DOCS.c.id,
        embedding=DOCS.c.embedding,
        tsv=DOCS.c.search_tsv,
        created_at=DOCS.c.created_at,
        where=and_(literal_column("true")),
        bits=DOCS.c.embedding_bits,
        keywords=keywords,
        bounded=bounded,
    )


def _unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(384)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


async def _load(database: Database, rows: list[dict[str, Any]]) -> None:
    async with database.session() as db:
        await db.execute(text("TRUNCATE ranking_property_docs"))
        if rows:
            await db.execute(DOCS.insert(), rows)
        for stmt in _INDEX:
            await db.execute(text(stmt), {"agent": AGENT})
        await db.commit()


async def _reference(database: Database, query: str | None, vector: list[float]) -> list[Candidate]:
    """Every document with its cosine (by PostgreSQL) and BM25 score (by hand)."""
    q = bindparam("q", vector, type_=Vector(384))
    cosine = literal_column("1") - DOCS.c.embedding.op("<=>", return_type=DOUBLE_PRECISION)(q)
    async with database.session() as db:
        rows = (await db.execute(select(DOCS.c.id, DOCS.c.created_at, cosine))).all()
        lexical: dict[str, float | None] = {}
        if query is not None:
            terms = await by_hand.query_terms(db, query)
            docs = await by_hand.documents(
                db, table="ranking_property_docs", key="id", where="true", params={}
            )
            lexical = by_hand.scores(docs, docs, terms)
    return [Candidate(str(r[0]), r[1], r[2], lexical.get(str(r[0]))) for r in rows]


async def _search(database: Database, *, bounded: bool, **kw: Any) -> list[Any]:
    async with database.session() as db:
        hits = await hybrid_search(db, source=_source(bounded=bounded), **kw)
    return [(str(h.key), h.score, h.cosine, h.lexical) for h in hits]


documents = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),  # words, repeats allowed
        st.integers(0, 5),  # one of six times: many ties
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)
# the one document holding both words is the oldest: a read of each word's newest
# postings alone would rank a document holding one of them first
@example(
    docs=[(["walrus"], 0)] * 12 + [(["kelp"], 0)] * 12 + [(["walrus", "kelp"], 5)],
    query=["walrus", "kelp"],
    mode="lexical",
    limit=1,
    budget=None,
    seed=0,
)
@given(
    docs=documents,
    query=st.lists(st.sampled_from((*WORDS, "lighthouse")), min_size=1, max_size=3),
    mode=st.sampled_from(["hybrid", "lexical"]),
    limit=st.integers(1, 6),
    budget=st.sampled_from([None, 1, 2]),  # None: the preset's own
    seed=st.integers(0, 2**16),
)
async def test_r41_the_postings_ranking_is_the_exhaustive_one(
    database: Database,
    tables: None,
    docs: list[tuple[list[str], int]],
    query: list[str],
    mode: Mode,
    limit: int,
    budget: int | None,
    seed: int,
) -> None:
    """R41: the ranking read from the postings equals the one that reads every match and
    the reference ``rank()``, rows, order, scores and signals, whenever every posting is
    read; beyond the budget, each row it returns carries its exact BM25 score."""
    rng = random.Random(seed)
    rows = [
        {
            "id": uuid.UUID(int=rng.getrandbits(128)),
            "body": " ".join(words),
            "embedding": _unit(rng),
            "created_at": NOW - timedelta(days=10 * when),
        }
        for words, when in docs
    ]
    await _load(database, rows)
    preset: FusionPreset = replace(
        DEFAULT_PRESET,
        name="tight",
        candidate_pool=1,
        pool_factor=1,
        seeking=replace(
            DEFAULT_PRESET.seeking,
            budget=DEFAULT_PRESET.seeking.budget if budget is None else budget,
        ),
    )
    text_ = " ".join(query)
    vector = _unit(rng)
    args: dict[str, Any] = {
        "text": text_,
        "vector": vector,
        "mode": mode,
        "min_score": -1.0,
        "limit": limit,
        "now": NOW,
        "preset": preset,
    }
    cands = await _reference(database, text_, vector)
    want = [
        (r.key, r.score, r.cosine, r.lexical)
        for r in rank(cands, mode=mode, min_score=-1.0, limit=limit, now=NOW, preset=preset)
    ]
    assert await _search(database, bounded=False, **args) == want
    fast = await _search(database, bounded=True, **args)
    async with database.session() as db:
        terms = await by_hand.query_terms(db, text_)
    held = {t: sum(t in words for words, _ in docs) for t in terms}
    reading = bm25.reading(held, len(docs), preset.seeking, preset.pool_size(limit))
    if reading.whole:
        assert fast == want
    else:
        exact = {c.key: c.lexical for c in cands}
        assert all(h[3] == exact[h[0]] for h in fast if h[3] is not None)
