"""bench history-search: ``searchHistory`` over one session of ~20k parts (R62).

The five LoCoMo conversations (``../shared/data/locomo/``) are kept seven times over
as one session of an agent with ``harness.history.index = "messages"``: one committed
turn per LoCoMo session, one event per dialog turn, through the schema as a runtime
sends them (19,320 events; ``--quick``: one conversation, 4,830). The loaded session
is kept in its own database for the next run.

Then, from a new last turn, LoCoMo's questions (distinct texts, the embedder's cache
off) are asked four ways, each query of one next to the others':

- ``searchHistory`` through the schema, in process, as the agent asks it: the
  embedding of the query, the ranking in context, the execution and its RETRIEVED
  uses;
- the ranking alone (:func:`server.services.history_ranking.ranked_parts`: the
  keywords' counts and the one ranking statement, with its rows), the query's vector
  given;
- the floor: a plain pgvector top-10 over the same parts, the statement alone run
  directly with psycopg (``ORDER BY embedding <=> :q LIMIT 10`` over the session's
  parts), the query's vector given;
- the query's embedding alone.

Targets (issue 23): ``searchHistory`` p50 <= 25 ms and <= 2x the floor's p50. The
run also reports how often the ranking by bits keeps the top ten that exact ranking
finds (the same statement with the candidates by meaning ranked exactly).

Run as ``python -m bench history-search [--quick]``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg

from bench import common
from bench.locomo_history import (
    BEGIN,
    COMMIT,
    RECORD,
    SEARCH,
    SESSION,
    Conversation,
    Server,
    _bench_caller,
    event_text,
    load_conversations,
    new_agent,
)
from server.database import normalise_url

COPIES = 7
QUICK_FILES = ("26.json",)
TARGET_P50_MS = 25.0
TARGET_FLOOR_RATIO = 2.0
LIMIT = 10
FLOOR = (
    "SELECT id FROM history_parts WHERE session_id = %(s)s"
    " ORDER BY embedding <=> %(q)s::vector LIMIT 10"
)


def plan(quick: bool) -> dict[str, Any]:
    if quick:
        return {"name": "bench_history_search_quick_v1", "files": QUICK_FILES, "queries": 40}
    return {"name": "bench_history_search_v1", "files": None, "queries": 150}


@asynccontextmanager
async def kept_server(name: str) -> AsyncIterator[tuple[Server, bool]]:
    """The database ``name`` on the benchmarks' server (kept between runs), the model and
    the schema; and whether it existed."""
    from resolvers.schema import build_schema
    from server.embedding import Embedder

    url, existed = common.database(name)
    database = await common.connect(url)
    model = Embedder.from_settings(database.settings)
    await model.aload()
    try:
        schema = build_schema(settings=database.settings)
        yield Server(database, model, database.settings, schema, _bench_caller()), existed
    finally:
        model.close()
        await database.dispose()


async def _keep(srv: Server, conversations: list[Conversation]) -> tuple[str, str]:
    """Every conversation kept ``COPIES`` times as one session; (agent, session)."""
    agent = await new_agent(srv)
    session = (await srv.ok(SESSION, agent=agent))["createSession"]["session"]["id"]
    started = time.perf_counter()
    for copy in range(COPIES):
        for conv in conversations:
            for _, dialog in conv.sessions:
                turn = (await srv.ok(BEGIN, s=session))["beginTurn"]["turn"]["id"]
                for start in range(0, len(dialog), 100):
                    events = [
                        {
                            "type": "USER_MESSAGE"
                            if t["speaker"] == conv.speakers[0]
                            else "AGENT_MESSAGE",
                            "text": event_text(t),
                        }
                        for t in dialog[start : start + 100]
                    ]
                    await srv.ok(RECORD, t=turn, events=events)
                await srv.ok(COMMIT, t=turn)
        print(f"kept copy {copy + 1}/{COPIES} ({time.perf_counter() - started:.0f} s)", flush=True)
    return agent, session


async def _loaded(srv: Server, existed: bool, files: Any) -> tuple[str, str]:
    url = srv.database.settings.database_url
    assert url is not None
    dsn = common.dsn(normalise_url(url))
    with psycopg.connect(dsn, autocommit=True) as conn:
        if existed and common.scalar(conn, "SELECT to_regclass('bench_history_loaded')"):
            row = conn.execute("SELECT agent_id, session_id FROM bench_history_loaded").fetchone()
            assert row is not None
            return str(row[0]), str(row[1])
    agent, session = await _keep(srv, load_conversations(files=files))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE history_parts")
        conn.execute("VACUUM ANALYZE history_events")
        conn.execute("CREATE TABLE bench_history_loaded (agent_id uuid, session_id uuid)")
        conn.execute("INSERT INTO bench_history_loaded VALUES (%s, %s)", (agent, session))
    return agent, session


async def _run(quick: bool) -> dict[str, Any]:
    from server.domain.history import HistoryReader
    from server.services.history_ranking import ranked_parts

    p = plan(quick)
    async with kept_server(p["name"]) as (srv, existed):
        agent, session = await _loaded(srv, existed, p["files"])
        url = srv.database.settings.database_url
        assert url is not None
        conn = await psycopg.AsyncConnection.connect(
            common.dsn(normalise_url(url)), autocommit=True
        )
        parts = await (
            await conn.execute(
                "SELECT count(*) FROM history_parts WHERE session_id = %s", (session,)
            )
        ).fetchone()
        turn = (await srv.ok(BEGIN, s=session))["beginTurn"]["turn"]
        reader = HistoryReader(
            agent_id=uuid.UUID(agent),
            session_id=uuid.UUID(session),
            turn_number=turn["number"],
            preview=False,
        )
        questions = list(
            dict.fromkeys(q.text for c in load_conversations(files=p["files"]) for q in c.questions)
        )[: p["queries"]]
        srv.embedder.cache_size = 0  # every query embedded, as a new one would be
        vectors = [v for v, _ in srv.embedder.encode_now(questions)]

        def api(q: str) -> Any:
            async def call() -> None:
                await srv.ok(SEARCH, t=turn["id"], q=q, limit=LIMIT)

            return call

        def ranking(q: str, v: Any, path: Any = "bits") -> Any:
            async def call() -> list[uuid.UUID]:
                async with srv.database.session() as db:
                    found = await ranked_parts(
                        db, reader=reader, query=q, vector=v, limit=LIMIT, path=path
                    )
                    keys = [part.id for part, _, _ in found]
                    await db.commit()  # a read: COMMIT keeps the prepared statements
                    return keys

            return call

        def floor(v: Any) -> Any:
            text = "[" + ",".join(map(str, v)) + "]"

            async def call() -> None:
                cur = await conn.execute(FLOOR, {"s": session, "q": text}, prepare=False)
                assert await cur.fetchall()

            return call

        def embed(q: str) -> Any:
            async def call() -> None:
                await srv.embedder.embed_one(q + " ")  # not the text the search embedded

            return call

        through_api, floor_a = await common.timed_side_by_side(
            [api(q) for q in questions], [floor(v) for v in vectors]
        )
        ranked, floor_b = await common.timed_side_by_side(
            [ranking(q, v) for q, v in zip(questions, vectors, strict=True)],
            [floor(v) for v in vectors],
        )
        embedding = await common.timed([embed(q) for q in questions])
        baseline = _against_baseline(srv, turn["id"], questions)
        found = total = 0
        for q, v in list(zip(questions, vectors, strict=True))[:40]:
            want = set(await ranking(q, v, "exact")())
            got = set(await ranking(q, v)())
            found += len(want & got)
            total += len(want)
        await conn.close()
    floor_p50 = (floor_a.p50 + floor_b.p50) / 2
    common.table(
        f"searchHistory over one session of {parts[0] if parts else 0:,} parts (ms)",
        ["what", "p50", "p99", "x floor p50"],
        [
            (
                "searchHistory, through the schema",
                through_api.p50,
                through_api.p99,
                through_api.p50 / floor_a.p50,
            ),
            ("the ranking alone (vector given)", ranked.p50, ranked.p99, ranked.p50 / floor_b.p50),
            (
                "floor: pgvector top-10 (vector given)",
                floor_p50,
                max(floor_a.p99, floor_b.p99),
                1.0,
            ),
            (
                "the query's embedding alone",
                embedding.p50,
                embedding.p99,
                embedding.p50 / floor_p50,
            ),
        ],
    )
    if baseline is not None:
        common.table(
            f"searchHistory before ({common.baseline_tree()}) and after (this tree), same "
            "run, each in a process of its own (ms)",
            ["tree", "p50", "p99"],
            [("before", *baseline["before"]), ("after", *baseline["after"])],
        )
    recall = found / total if total else 0.0
    ratio = through_api.p50 / floor_a.p50
    print(
        f"searchHistory p50 {through_api.p50:.1f} ms (target <= {TARGET_P50_MS}), "
        f"{ratio:.2f} x the floor (target <= {TARGET_FLOOR_RATIO}); the ranking by bits "
        f"keeps {recall:.3f} of the exact ranking's top ten",
        flush=True,
    )
    return {
        "parts": parts[0] if parts else 0,
        "queries": len(questions),
        "search_history_p50_ms": through_api.p50,
        "search_history_p99_ms": through_api.p99,
        "ranking_p50_ms": ranked.p50,
        "floor_p50_ms": floor_p50,
        "embedding_p50_ms": embedding.p50,
        "search_history_over_floor_p50": ratio,
        "ranking_over_floor_p50": ranked.p50 / floor_b.p50,
        "bits_recall_at_10_vs_exact": recall,
        "meets_25_ms": through_api.p50 <= TARGET_P50_MS,
        "meets_2x_floor": ratio <= TARGET_FLOOR_RATIO,
        **({"baseline": baseline} if baseline is not None else {}),
    }


def _against_baseline(srv: Server, turn: str, questions: list[str]) -> dict[str, Any] | None:
    """searchHistory of the baseline checkout (``BENCH_BASELINE_TREE``) and of this one,
    each in a process of its own (:mod:`bench.tree_runner`), in alternating rounds: p50
    and p99 of each; None without a baseline."""
    tree = common.baseline_tree()
    if tree is None:
        return None
    url = srv.database.settings.database_url
    assert url is not None
    job = {"kind": "history", "url": url, "turn": turn, "questions": questions, "warmup": 3}
    seconds: dict[Any, list[float]] = {None: [], tree: []}
    for order in ((None, tree), (tree, None)):
        for which in order:
            seconds[which].extend(common.timed_in_tree(which, job)["search_history"])
    before, after = common.Timings(seconds[tree]), common.Timings(seconds[None])
    return {"before": (before.p50, before.p99), "after": (after.p50, after.p99)}


def run(quick: bool) -> dict[str, Any]:
    return dict(common.run_async(_run(quick)))
