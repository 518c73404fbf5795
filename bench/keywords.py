"""``bench keywords``: the keyword leg of memory search, by how many records share a
word with the query.

On ``bench search``'s data set (the same database: 10k and 100k records per agent in
a table of 1M, the quick run 10k in 50k), three sets of five-word queries:

- ``common``: five of the thirty words the most records hold (each in about 3% of
  them: a query shares a word with about one record in six);
- ``rare``: five of the words the fewest records hold;
- ``zipf``: drawn as the records' words are, as ``bench search`` asks.

For each agent size and set: how many of the agent's versions share a word with a
query (p50), the search's p50 in ``lexical`` mode (the keyword leg alone, through
:func:`server.memory_search.ranking.ranked`) and in ``hybrid`` mode (no embedding:
the query vector is given), and the buffers the lexical statement touches
(``EXPLAIN (ANALYZE, BUFFERS)``, p50): the work, free of the machine's load. The
figures to read are ratios of the same run: 100k over 10k, common over rare.

``lexical_all``: the same lexical search filtered by kind ``fact``, which every
record is: the same records, read as a filtered search reads them (every
full-text match, scored), so its top ten is the exhaustive ranking's;
``overlap10`` is the share of it the unfiltered search's top ten holds (how much
the bounded candidates miss).
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
from collections import Counter
from typing import Any

import psycopg
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

from bench import common, search, search_ranking
from server.memory_search import ranking as memory_ranking

SETS = ("common", "rare", "zipf")
COMMON_WORDS = 30
MODES = ("lexical", "lexical_all", "hybrid")
EVERY = memory_ranking.Filters(kind="fact")  # every bench record is a fact


def query_sets(n: int, seed: int) -> dict[str, list[str]]:
    """``n`` queries of each set, from the records' own vocabulary."""
    vocabulary = common.extra_words(20_000, seed=2)
    bodies = common.zipf_texts(20_000, words=15, vocabulary=vocabulary, seed=3)
    held = Counter(w for body in bodies for w in set(body.split()))
    by_count = [w for w, _ in held.most_common()]
    rng = random.Random(seed)
    frequent, scarce = by_count[:COMMON_WORDS], by_count[-200:]
    return {
        "common": [" ".join(rng.sample(frequent, 5)) for _ in range(n)],
        "rare": [" ".join(rng.sample(scarce, 5)) for _ in range(n)],
        "zipf": common.zipf_texts(n, words=5, vocabulary=vocabulary, seed=seed),
    }


def _compiled(stmt: Any, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    compiled = stmt.compile(dialect=PGDialect_psycopg())
    params = {
        k: "[" + ",".join(map(str, v)) + "]" if k == "q" else v
        for k, v in compiled.construct_params(values).items()
    }
    return str(compiled), params


async def measure(
    ctx: dict[str, Any], owner: common.Owner, texts: list[str], vectors: list[list[float]]
) -> dict[str, Any]:
    """One agent, one query set: matches, p50 per mode, buffers of the lexical statement."""
    db = ctx["db"]
    reader = owner.reader()
    out: dict[str, Any] = {}
    conn = await psycopg.AsyncConnection.connect(common.dsn(ctx["url"]), autocommit=True)
    try:
        matches, buffers = [], []
        for text in texts:
            cur = await conn.execute(
                "SELECT count(*) FROM memory_versions WHERE agent_id = %s AND search_tsv @@"
                " replace(plainto_tsquery('english', %s)::text, '&', '|')::tsquery",
                (owner.agent_id, text),
            )
            matches.append((await cur.fetchone() or (0,))[0])
            stmt, values = memory_ranking.ranking_statement(
                reader, memory_ranking.MemoryQuery(text, None, "lexical", 0.2, limit=10)
            )
            sql, params = _compiled(stmt, values)
            cur = await conn.execute(
                f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", params, prepare=False
            )
            found = await cur.fetchone()
            assert found is not None
            plan = found[0]
            plan = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]
            buffers.append(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])
        overlap = []
        for text in texts:
            tops = []
            for filters in (memory_ranking.NO_FILTERS, EVERY):
                async with ctx["db"].session() as s:
                    found = await memory_ranking.ranked(
                        s,
                        reader,
                        memory_ranking.MemoryQuery(text, None, "lexical", 0.2, 10, filters),
                    )
                tops.append({f.version.id for f in found})
            overlap.append(len(tops[0] & tops[1]) / max(len(tops[1]), 1))
        out["overlap10"] = statistics.fmean(overlap)
        out["matches_p50"] = statistics.median(matches)
        out["buffers_p50"] = statistics.median(buffers)
        out["buffers_max"] = max(buffers)
    finally:
        await conn.close()
    for mode in MODES:

        def call(text: str, vector: list[float], mode: str = mode) -> Any:
            async def run() -> None:
                async with db.session() as s:
                    await memory_ranking.ranked(
                        s,
                        reader,
                        memory_ranking.MemoryQuery(
                            text,
                            vector if mode == "hybrid" else None,
                            "hybrid" if mode == "hybrid" else "lexical",
                            0.2,
                            10,
                            EVERY if mode == "lexical_all" else memory_ranking.NO_FILTERS,
                        ),
                    )
                    await s.rollback()

            return run

        timings = await common.timed(
            [call(t, v) for t, v in zip(texts, vectors, strict=True)], warmup=5
        )
        out[f"{mode}_p50_ms"] = timings.p50
        out[f"{mode}_p99_ms"] = timings.p99
    return out


async def _run(quick: bool) -> dict[str, Any]:
    p = search.plan(quick)
    ctx = await search.load(p)
    n = 40 if quick else 100
    figures: dict[str, Any] = {"table_records": p["total"]}
    rows = []
    for size, owner in zip(p["agents"], ctx["owners"], strict=False):
        sets = query_sets(n, seed=size)
        vectors = [v for _, v in search_ranking.queries(ctx["bases"], n, seed=size)]
        for name in SETS:
            got = await measure(ctx, owner, sets[name], vectors)
            figures[f"{name}_{size}"] = got
            rows.append(
                (
                    f"{size:,}",
                    name,
                    got["matches_p50"],
                    got["buffers_p50"],
                    got["lexical_p50_ms"],
                    got["lexical_p99_ms"],
                    got["lexical_all_p50_ms"],
                    got["overlap10"],
                    got["hybrid_p50_ms"],
                )
            )
    common.table(
        "the keyword leg: versions sharing a word, buffers and p50 (ms) by query set",
        [
            "records/agent",
            "queries",
            "matches",
            "buffers",
            "lexical p50",
            "p99",
            "every match p50",
            "overlap@10",
            "hybrid p50",
        ],
        rows,
    )
    sizes = p["agents"]
    ratios: dict[str, float] = {}
    for mode in MODES:
        key = f"{mode}_p50_ms"
        ratios[f"{mode}_common_over_rare_{sizes[-1]}"] = (
            figures[f"common_{sizes[-1]}"][key] / figures[f"rare_{sizes[-1]}"][key]
        )
        if len(sizes) > 1:
            ratios[f"{mode}_zipf_{sizes[-1]}_over_{sizes[0]}"] = (
                figures[f"zipf_{sizes[-1]}"][key] / figures[f"zipf_{sizes[0]}"][key]
            )
    ratios[f"buffers_common_over_rare_{sizes[-1]}"] = (
        figures[f"common_{sizes[-1]}"]["buffers_p50"] / figures[f"rare_{sizes[-1]}"]["buffers_p50"]
    )
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    figures["ratios"] = ratios
    await ctx["db"].dispose()
    return figures


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))
