"""``bench search`` (a): the memory ranking in process, per agent size, in one table.

For each measured agent (a ladder of sizes in the same table):

- the ranking (:func:`server.memory_search.ranking.ranked`: the one statement and
  its rows, without the query's embedding), hybrid and in ``vector`` mode, each next
  to its raw-SQL floor: the same statement
  (:func:`server.memory_search.ranking.ranking_statement`, its text and parameters)
  run directly with psycopg, prepared as the server's driver prepares it and on its
  generic plan as the server runs it (:mod:`server.memory_search.statement`),
  query by query in alternating order. A search's session ends with COMMIT, as the server's
  read-only transactions do (a ROLLBACK would make psycopg drop the connection's
  prepared statements);
- the path the search took (``bits`` or ``index``: :mod:`server.storage.nearest`,
  chosen by :func:`server.memory_search.ranking.path_of`), and the recall@10 of its ``vector``
  ranking against the exact one;
- the ``vector`` ranking with each path forced, side by side (where both paths cost
  what they cost: the figures the choice between them rests on).

The ratios a run reports: the ranking's p50 at 100k over 10k records per agent, and
the largest ratio between neighbouring sizes of the ladder (no cliff).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector_async
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

from bench import common
from server.domain.ranking import Mode
from server.memory_search import ranking as memory_ranking
from server.storage.nearest import Path

MIN_SCORE = 0.2  # the bench agents' harness.memory.search.min_score
# The index path forced on a smaller agent would walk most of a 1M-row graph: its cost is
# measured from this size on (a filter that keeps 0.5% of the rows).
INDEX_FROM = 5_000


def queries(bases: np.ndarray, n: int, seed: int) -> list[tuple[str, list[float]]]:
    """Query texts (five words of the records' vocabulary) with vectors near the data."""
    vocabulary = common.extra_words(20_000, seed=2)
    texts = common.zipf_texts(n, words=5, vocabulary=vocabulary, seed=seed)
    vectors, _ = common.blend(bases, n, seed=seed)
    return [(t, [float(x) for x in v]) for t, v in zip(texts, vectors, strict=True)]


def _query(text: str, vector: list[float], mode: Mode, path: Path | None = None) -> Any:
    return memory_ranking.MemoryQuery(text, vector, mode, MIN_SCORE, limit=10, path=path)


async def in_process(
    ctx: dict[str, Any], owner: common.Owner, owner_size: int, qs: list[Any], *, forced: int
) -> dict[str, Any]:
    db = ctx["db"]
    reader = owner.reader()

    def service(text: str, vector: list[float], mode: Mode, path: Path | None = None) -> Any:
        async def call() -> list[Any]:
            async with db.session() as s:
                found = await memory_ranking.ranked(s, reader, _query(text, vector, mode, path))
                assert found
                keys = [f.version.id for f in found]
                await s.commit()  # a read: COMMIT keeps the prepared statements
                return keys

        return call

    conn = await psycopg.AsyncConnection.connect(common.dsn(ctx["url"]), autocommit=True)
    await register_vector_async(conn)
    # the plan the server runs the statement on (server.memory_search.statement)
    await conn.execute("SET plan_cache_mode = force_generic_plan")

    memory_ranking.forget()
    async with db.session() as s:
        path = await memory_ranking.path_of(s, owner.agent_id)
        await s.commit()

    def raw(text: str, vector: list[float], mode: Mode) -> Any:
        stmt, values = memory_ranking.ranking_statement(
            reader, _query(text, vector, mode, path), with_rows=True
        )
        compiled = stmt.compile(dialect=PGDialect_psycopg())
        sql = str(compiled)
        params = compiled.construct_params(values)
        params["q"] = Vector(params["q"])

        async def call() -> None:
            # prepared, as the server's driver prepares a statement it runs often
            cur = await conn.execute(sql, params, prepare=True)
            assert await cur.fetchall()

        return call

    out: dict[str, Any] = {"path": path}
    for mode in ("hybrid", "vector"):
        ours, floor = await common.timed_side_by_side(
            [service(t, v, mode) for t, v in qs], [raw(t, v, mode) for t, v in qs]
        )
        out[mode] = {"ours": ours, "floor": floor}
    await conn.close()
    # recall@10 of the vector ranking (the path the search takes) against exact ranking
    found = total = 0
    for t, v in qs[:forced]:
        want = set(await service(t, v, "vector", "exact")())
        got = set(await service(t, v, "vector")())
        found += len(want & got)
        total += len(want)
    out["recall_at_10"] = found / total
    sample = qs[:forced]
    if len(qs) and owner_size >= INDEX_FROM:
        bits, index = await common.timed_side_by_side(
            [service(t, v, "vector", "bits") for t, v in sample],
            [service(t, v, "vector", "index") for t, v in sample],
            warmup=2,
        )
        out["forced"] = {"bits": bits.p50, "index": index.p50}
    else:
        bits = await common.timed([service(t, v, "vector", "bits") for t, v in sample], warmup=2)
        out["forced"] = {"bits": bits.p50, "index": None}
    return out


async def against_baseline(
    ctx: dict[str, Any], p: dict[str, Any], sizes: list[int], tree: Any
) -> dict[str, Any]:
    """The ranking of ``tree`` (the baseline checkout) and of this one, each in a process of
    its own through the same harness (:mod:`bench.tree_runner`), in alternating rounds on
    the same table and queries: before/after p50 per agent size and mode."""
    owners = dict(zip(p["agents"], ctx["owners"], strict=False))
    job = {
        "kind": "ranking",
        "url": ctx["url"].render_as_string(hide_password=False),
        "owners": {
            str(s): [str(owners[s].agent_id), str(owners[s].session_id), str(owners[s].turn_id)]
            for s in sizes
        },
        "queries": {str(s): queries(ctx["bases"], p["forced"], seed=s + 1) for s in sizes},
        "modes": ["hybrid", "vector"],
        "min_score": MIN_SCORE,
        "warmup": 3,
    }
    timings: dict[Any, dict[str, list[float]]] = {None: {}, tree: {}}
    for order in ((None, tree), (tree, None)):
        for which in order:
            for key, seconds in common.timed_in_tree(which, job).items():
                timings[which].setdefault(key, []).extend(seconds)
    rows, figures = [], {}
    for key in timings[None]:
        before = common.Timings(timings[tree][key]).p50
        after = common.Timings(timings[None][key]).p50
        size, mode = key.split("/")
        rows.append((f"{int(size):,}", mode, before, after, after / before))
        figures[key] = {"before_p50_ms": before, "after_p50_ms": after, "ratio": after / before}
    common.table(
        f"(a) the ranking before ({tree}) and after (this tree), same run, ms",
        ["records/agent", "mode", "before p50", "after p50", "after / before"],
        rows,
    )
    return figures


def _neighbours(p50s: list[float]) -> float:
    """The largest ratio between neighbouring sizes' p50 (either way round)."""
    pairs = itertools.pairwise(p50s)
    return max((max(a / b, b / a) for a, b in pairs), default=1.0)


async def measure(ctx: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """Table (a) and its figures, for every agent of the plan's ladder."""
    results = {}
    for size, owner in zip(p["agents"], ctx["owners"], strict=False):
        qs = queries(ctx["bases"], p["queries"], seed=size)
        results[size] = await in_process(ctx, owner, size, qs, forced=p["forced"])
        print(f"measured {size:,} records/agent", flush=True)
    rows = []
    figures: dict[str, Any] = {}
    for size, a in results.items():
        h, v, f = a["hybrid"], a["vector"], a["forced"]
        rows.append(
            (
                f"{size:,}",
                a["path"],
                h["floor"].p50,
                h["ours"].p50,
                h["ours"].p99,
                h["ours"].p50 / h["floor"].p50,
                v["floor"].p50,
                v["ours"].p50,
                v["ours"].p50 / v["floor"].p50,
                a["recall_at_10"],
                f["bits"],
                "-" if f["index"] is None else f["index"],
            )
        )
        figures[f"a_{size}"] = {
            "path": a["path"],
            "floor_p50_ms": h["floor"].p50,
            "p50_ms": h["ours"].p50,
            "p99_ms": h["ours"].p99,
            "ratio_p50": h["ours"].p50 / h["floor"].p50,
            "vector_floor_p50_ms": v["floor"].p50,
            "vector_p50_ms": v["ours"].p50,
            "vector_p99_ms": v["ours"].p99,
            "vector_ratio_p50": v["ours"].p50 / v["floor"].p50,
            "vector_recall_at_10": a["recall_at_10"],
            "forced_bits_p50_ms": f["bits"],
            "forced_index_p50_ms": f["index"],
        }
    common.table(
        "(a) the ranking in process, excluding embedding, vs the raw SQL floor (ms); "
        "vector mode with each path forced",
        [
            "records/agent",
            "path",
            "floor p50",
            "ours p50",
            "ours p99",
            "ratio",
            "vector floor",
            "vector p50",
            "ratio",
            "recall@10",
            "bits p50",
            "index p50",
        ],
        rows,
    )
    sizes = list(results)
    for mode, key in (("hybrid", "p50_ms"), ("vector", "vector_p50_ms")):
        p50s = [figures[f"a_{s}"][key] for s in sizes]
        ratios: dict[str, float] = {"max_neighbour_ratio": _neighbours(p50s)}
        if 10_000 in results and 100_000 in results:
            ratios["p50_100k_over_10k"] = figures["a_100000"][key] / figures["a_10000"][key]
        figures[f"ratios_{mode}"] = ratios
    tree = common.baseline_tree()
    if tree is not None:
        figures["baseline"] = await against_baseline(ctx, p, sizes, tree)
    return figures
