"""The repeat check of recall costs the same at every recall of a conversation (R42).

A recall is not recorded when it found exactly the versions an earlier recall of the
same conversation put before the model. Deciding that used to read every earlier
recall of the conversation and its uses, so the hundredth recall read a hundred
times what the first did. Now a recorded recall keeps the digest of its version set,
and a recall probes its conversation's digests by one index lookup: over a
100-recall conversation each recall sends the same statements and gets the same
number of rows back, whether it is the 2nd or the 100th.
"""

from __future__ import annotations

import importlib
import uuid
from collections import defaultdict

from sqlalchemy import select, text
from sqlmodel import col

from bench.anatomy import counted
from server.memory_search import ranking as memory_ranking
from server.memory_search.recall import version_set_digest
from server.models import Execution
from tests.api.plans import names, node_plan
from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api

RECALL = """
mutation($turn: ID!, $work: String!) {
  recall(input: {turnId: $turn, query: $work}) {
    recorded execution { id } repeatOf { id } results { version { id } }
  }
}"""

TOPICS = ["peanuts", "school", "stand-up", "invoices", "garden", "flights", "dentist"]


async def test_r42_a_hundred_recalls_of_one_conversation_cost_the_same_each(api: Api) -> None:
    """100 recalls in one turn, half of them repeating the one before: every recorded
    recall sends the same statements (counted on the wire) and gets the same rows back,
    every repeat likewise, from the second to the last (the first also reads the turn's
    scope, new to the process); the repeat's lookup reads one row of the conversation's
    50-odd recalls."""
    s = Scenario(api)
    cfg = memory_config(read=["session", "agent"], write=["session", "agent"])
    cfg["harness"]["memory"]["search"] = {"max_results": 3, "min_score": -1}
    await s.agent(cfg)
    session = await s.session()
    turn = await s.turn(session)
    for topic in TOPICS:
        for n in range(3):
            await s.add(turn, f"Note {n} about {topic}: {uuid.uuid4().hex[:6]}", scope="AGENT")
    await s.commit(turn)
    turn = await s.turn(session)
    async with api.database.session() as db:  # the agent's search path, asked once a minute
        await memory_ranking.path_of(db, uuid.UUID(s.agent_id))

    costs: dict[bool, list[tuple[tuple[str, ...], int]]] = defaultdict(list)
    seen: set[frozenset[str]] = set()
    work = ""
    for i in range(100):
        if i % 2 == 0:  # a new piece of work; the next recall repeats it
            work = f"what about {TOPICS[(i // 2) % len(TOPICS)]} {i} {uuid.uuid4().hex[:4]}"
        with counted(api.database) as wire:
            got = (await api.ok(RECALL, turn=turn, work=work))["recall"]
        found = frozenset(r["version"]["id"] for r in got["results"])
        assert len(found) == 3
        # R42: recorded exactly when this set was not put before the conversation yet
        assert got["recorded"] is (found not in seen), i
        assert (got["repeatOf"] is None) is got["recorded"]
        seen.add(found)
        if i > 0:  # the first also reads the turn's scope, new to this process
            costs[got["recorded"]].append((tuple(wire.statements), wire.rows))
    recorded, repeated = costs[True], costs[False]
    assert len(recorded) >= 6 and len(repeated) >= 50
    for outcome in (recorded, repeated):
        assert len(set(outcome)) == 1, [(len(st), rows) for st, rows in outcome]

    # the repeat check itself reads one row, however many recalls the conversation holds
    async with api.database.session() as db:
        caller = await db.scalar(
            select(col(Execution.id)).where(
                col(Execution.turn_id) == uuid.UUID(turn), col(Execution.kind) == "turn"
            )
        )
        recalls = await db.scalar(
            text(
                "SELECT count(*) FROM executions WHERE parent_id = :c AND recall_digest IS NOT NULL"
            ),
            {"c": caller},
        )
        assert recalls == len(recorded) + 1  # the first
        digest = await db.scalar(
            text("SELECT recall_digest FROM executions WHERE parent_id = :c LIMIT 1"), {"c": caller}
        )
        plan = await db.scalar(
            text(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM executions"
                " WHERE agent_id = :a AND parent_id = :c AND recall_digest = :d"
            ),
            {"a": uuid.UUID(s.agent_id), "c": caller, "d": digest},
        )
    scan = node_plan(plan[0]["Plan"])
    assert names(scan["Index Name"], "ix_executions_recall_digest"), scan
    assert scan["Actual Rows"] == 1 and scan.get("Rows Removed by Filter", 0) == 0, scan


async def test_r42_a_recalls_digest_is_the_one_migration_0009_computes(api: Api) -> None:
    """The digest a recorded recall keeps is the one migration 0010 gives the recalls of
    turns open when it runs: both hash the sorted version ids."""
    s = Scenario(api)
    await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    turn = await s.turn(session)
    for topic in TOPICS[:3]:
        await s.add(turn, f"A note about {topic}", scope="AGENT")
    await s.commit(turn)
    turn = await s.turn(session)
    got = (await api.ok(RECALL, turn=turn, work="a note about the garden"))["recall"]
    assert got["recorded"]
    versions = [uuid.UUID(r["version"]["id"]) for r in got["results"]]
    migration = importlib.import_module("migrations.versions.0010_request_path")
    async with api.database.session() as db:
        execution = uuid.UUID(got["execution"]["id"])
        kept = await db.scalar(
            text("SELECT recall_digest FROM executions WHERE id = :e"), {"e": execution}
        )
        await db.execute(
            text("UPDATE executions SET recall_digest = NULL WHERE id = :e"), {"e": execution}
        )
        await db.execute(text(migration.BACKFILL))
        filled = await db.scalar(
            text("SELECT recall_digest FROM executions WHERE id = :e"), {"e": execution}
        )
        await db.rollback()
    assert kept == filled == version_set_digest(versions)
