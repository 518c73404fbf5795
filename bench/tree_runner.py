"""Times the memory ranking or ``searchHistory`` of the checkout on ``PYTHONPATH``, so that
a bench can measure another tree (``BENCH_BASELINE_TREE``: ``git archive <commit> | tar
-x -C <dir>``) and this one in the same run, on the same database, through the same
harness: ``python bench/tree_runner.py`` with a job on stdin (JSON), timings on stdout.

It uses only what both trees have: the database, the reader, the ranking service, the
schema. It runs no migration: the database is the caller's.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from typing import Any


async def _ranking(job: dict[str, Any]) -> dict[str, Any]:
    from server.database import Database
    from server.domain.visibility import Reader

    try:
        from server.memory_search import ranking as memory_ranking
    except ImportError:  # a tree from before the memory_search package
        from server.services import memory_ranking  # type: ignore[no-redef]
    from server.settings import Settings

    db = Database(Settings(database_url=job["url"]))
    await db.connect()
    out: dict[str, Any] = {}
    for size, owner in job["owners"].items():
        agent, session, turn = (uuid.UUID(x) for x in owner)
        reader = Reader.for_turn(
            agent_id=agent,
            session_id=session,
            turn_id=turn,
            preview=False,
            read_scopes=("session", "agent"),
            write_scopes=("session", "agent"),
        )
        for mode in job["modes"]:
            seconds = []
            for i, (text, vector) in enumerate(job["queries"][size]):
                start = time.perf_counter()
                async with db.session() as s:
                    query = memory_ranking.MemoryQuery(text, vector, mode, job["min_score"], 10)
                    found = await memory_ranking.ranked(s, reader, query)
                    assert found
                    await s.commit()  # a read: COMMIT keeps the prepared statements
                if i >= job["warmup"]:
                    seconds.append(time.perf_counter() - start)
            out[f"{size}/{mode}"] = seconds
    await db.dispose()
    return out


async def _history(job: dict[str, Any]) -> dict[str, Any]:
    from bench.locomo_history import SEARCH, Server, _bench_caller
    from resolvers.schema import build_schema
    from server.database import Database
    from server.embedding import Embedder
    from server.settings import Settings

    database = Database(Settings(database_url=job["url"]))
    await database.connect()
    model = Embedder(cache_size=0)
    await model.aload()
    srv = Server(
        database,
        model,
        database.settings,
        build_schema(settings=database.settings),
        _bench_caller(),
    )
    seconds = []
    for i, q in enumerate(job["questions"]):
        start = time.perf_counter()
        await srv.ok(SEARCH, t=job["turn"], q=q, limit=10)
        if i >= job["warmup"]:
            seconds.append(time.perf_counter() - start)
    model.close()
    await database.dispose()
    return {"search_history": seconds}


def main() -> None:
    job = json.load(sys.stdin)
    run = {"ranking": _ranking, "history": _history}[job["kind"]]
    print(json.dumps(asyncio.run(run(job))))


if __name__ == "__main__":
    main()
