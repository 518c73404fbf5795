"""``bench review``: the turn-end memory review (R50) on LoCoMo's session events.

LoCoMo's per-session event summaries (``events_session_N`` of each conversation in
``../shared/data/locomo``) are real candidate facts: one short line each, about one
of the two speakers.

1. The restatement threshold. Each fact is embedded as a record is (its summary).
   - wrongly taken as a restatement: a fact whose cosine with an earlier, distinct
     fact of its conversation reaches the threshold (target at most 1%);
   - caught: the same fact offered again lightly edited (lower case, its punctuation
     changed, one word changed) reaches the threshold with its original (target at
     least 99%); an exact restatement has cosine 1.
   The table gives both rates for each threshold; the chosen one is
   ``server.domain.review.RESTATEMENT_MIN_COSINE``. Every conversation, even with
   ``--quick``: it only embeds the facts.
2. Through the schema: each conversation is replayed as one session, a turn per
   LoCoMo session (its dialog recorded), reviewed with that session's events as
   candidates, all decided ADD. A last turn offers every fact again, lightly edited:
   the lookup's rate of finding the original in the top 5, and how many of those ADDs
   were applied as SKIP (the restatements that did not pile up). With ``--quick``:
   the first eight sessions of one conversation.
3. Cost: each review mutation's p50 through the schema, and the time a committed turn
   takes with its review against the same turn of an agent without one; and reviews of
   50 candidates each (``many``): compare's and apply's p50 and the statements each sends.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import event

from bench import common
from bench.locomo_history import BEGIN, COMMIT, CREATE_AGENT, PUBLISH, RECORD, SESSION, server
from server.domain import review as rules

DATA = common.LOCOMO
THRESHOLDS = [round(0.80 + 0.01 * i, 2) for i in range(19)]
BATCH = 50  # candidates per compare / apply call

# One word changed: a function word swapped for a near one (the fact stays the same).
_SWAP = {
    "the": "a",
    "a": "the",
    "an": "the",
    "in": "at",
    "at": "in",
    "on": "at",
    "is": "was",
    "was": "is",
    "has": "had",
    "had": "has",
    "with": "along with",
}


def facts(path: Path) -> list[list[str]]:
    """The conversation's events, one list per LoCoMo session, in order."""
    raw = json.loads(path.read_text())
    out = []
    n = 1
    while f"session_{n}" in raw:
        events = raw.get(f"events_session_{n}") or {}
        out.append([e for who, es in events.items() if who != "date" for e in es if e.strip()])
        n += 1
    return out


def dialog(path: Path, n: int) -> list[dict[str, Any]]:
    raw = json.loads(path.read_text())
    return [
        {
            "type": "USER_MESSAGE" if i % 2 == 0 else "AGENT_MESSAGE",
            "text": f"{t['speaker']}: {t['text']}",
        }
        for i, t in enumerate(raw[f"session_{n}"])
    ]


def edited(fact: str) -> str:
    """The fact restated: lower case, punctuation changed, one word changed."""
    words = fact.rstrip(".!").split()
    for i, w in enumerate(words):
        if w.lower() in _SWAP:
            words[i] = _SWAP[w.lower()]
            break
    else:
        words.insert(0, "also")
    text = " ".join(words).lower().replace(",", "")
    return text + ("!" if fact.endswith(".") else ".")


def _unit(vectors: Any) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


async def threshold(paths: list[Path], model: Any) -> dict[str, Any]:
    nearest_distinct: list[float] = []  # per fact: its best cosine with an earlier distinct fact
    restated: list[float] = []  # per fact: cosine of its edited restatement with it
    wrongly = caught = 0  # by the rule in force (cosine and words)
    for path in paths:
        flat = list(dict.fromkeys(f for session in facts(path) for f in session))
        vec = _unit((await model.embed(flat, bulk=True)).vectors)
        ed = _unit((await model.embed([edited(f) for f in flat], bulk=True)).vectors)
        sims = vec @ vec.T
        nearest_distinct.extend(float(sims[i, :i].max()) for i in range(1, len(flat)))
        restated.extend(float(x) for x in np.sum(vec * ed, axis=1))
        wrongly += sum(
            any(rules.restates(float(sims[i, k]), flat[i], flat[k]) for k in range(i))
            for i in range(1, len(flat))
        )
        caught += sum(
            rules.restates(float(vec[i] @ ed[i]), edited(f), f) for i, f in enumerate(flat)
        )
    rows = []
    for t in THRESHOLDS:
        false = sum(s >= t for s in nearest_distinct) / len(nearest_distinct)
        hit = sum(s >= t for s in restated) / len(restated)
        rows.append((t, f"{false:.2%}", f"{hit:.2%}"))
    common.table(
        f"restatement by cosine alone ({len(restated)} facts)",
        ["cosine ≥", "distinct taken as restated", "edited restatement caught"],
        rows,
    )
    figures = {
        "facts": len(restated),
        "threshold": rules.RESTATEMENT_MIN_COSINE,
        "edited_min_cosine": rules.EDITED_MIN_COSINE,
        "edited_min_words": rules.EDITED_MIN_WORDS,
        "false_restatement": wrongly / len(nearest_distinct),
        "restatement_caught": caught / len(restated),
        "restated_cosine_p1": float(np.percentile(restated, 1)),
        "distinct_cosine_p99": float(np.percentile(nearest_distinct, 99)),
    }
    common.table(
        "restatement by the rule in force (server.domain.review.restates)",
        ["distinct taken as restated", "edited restatement caught"],
        [(f"{figures['false_restatement']:.2%}", f"{figures['restatement_caught']:.2%}")],
    )
    return figures


BEGIN_REVIEW = """mutation($t: ID!) { beginMemoryReview(input: {turnId: $t}) {
  due review { id execution { id } } } }"""
COMPARE = """mutation($r: ID!, $c: [MemoryCandidateInput!]!) {
  compareMemoryCandidates(input: {reviewId: $r, candidates: $c}) {
    candidates { restates { similarity } similar { version { recordId summary } } } } }"""
INVOKE = """mutation($e: ID!) { recordInvocation(input: {executionId: $e, purpose: MEMORY,
  model: "scripted"}) { invocation { id } } }"""
APPLY = """mutation($r: ID!, $d: [MemoryDecisionInput!]!) {
  applyMemoryReview(input: {reviewId: $r, decisions: $d}) {
    decisions { summary applied memories { recordId } } } }"""
# Without history: a turn's commit then costs the same with and without the review.
CONFIG = {"harness": {"memory": {"enabled": True}}}
PLAIN: dict[str, Any] = {"harness": {}}


async def replay(srv: Any, paths: list[Path], sessions: int | None = None) -> dict[str, Any]:
    calls: dict[str, list[float]] = {"begin": [], "compare": [], "apply": []}
    with_review: list[float] = []
    without: list[float] = []
    found = skipped = offered = 0
    skipped_while_adding = added = 0

    async def timed(name: str, query: str, **variables: Any) -> dict[str, Any]:
        start = time.perf_counter()
        data = await srv.ok(query, **variables)
        calls[name].append(time.perf_counter() - start)
        return data

    async def agent(config: dict[str, Any]) -> str:
        a = (await srv.ok(CREATE_AGENT, ns=f"bench{uuid.uuid4().hex[:10]}"))["createAgent"][
            "agent"
        ]["id"]
        await srv.ok(PUBLISH, agent=a, config=config)
        return str((await srv.ok(SESSION, agent=a))["createSession"]["session"]["id"])

    async def review(turn: str, candidates: list[str]) -> list[dict[str, Any]]:
        begun = (await timed("begin", BEGIN_REVIEW, t=turn))["beginMemoryReview"]
        rid, execution = begun["review"]["id"], begun["review"]["execution"]["id"]
        await srv.ok(INVOKE, e=execution)
        compared: list[dict[str, Any]] = []
        for i in range(0, len(candidates), BATCH):
            c = [{"summary": s, "kind": "event"} for s in candidates[i : i + BATCH]]
            compared += (await timed("compare", COMPARE, r=rid, c=c))["compareMemoryCandidates"][
                "candidates"
            ]
        d = [{"candidate": {"summary": s, "kind": "event"}, "action": "ADD"} for s in candidates]
        applied = (await timed("apply", APPLY, r=rid, d=d))["applyMemoryReview"]["decisions"]
        return [{**c, **a} for c, a in zip(compared, applied, strict=True)]

    for path in paths:
        reviewed, plain = await agent(CONFIG), await agent(PLAIN)
        record_of: dict[str, str] = {}
        for n, session in enumerate(facts(path)[:sessions], start=1):
            events = dialog(path, n)
            order = ((plain, False), (reviewed, True))
            for session_id, reviews in order if n % 2 else order[::-1]:
                start = time.perf_counter()
                turn = (await srv.ok(BEGIN, s=session_id))["beginTurn"]["turn"]["id"]
                await srv.ok(RECORD, t=turn, events=events)
                if reviews and session:
                    for o in await review(turn, session):
                        added += 1
                        if o["applied"] == "SKIP":
                            skipped_while_adding += 1
                        else:
                            record_of[o["summary"]] = o["memories"][0]["recordId"]
                await srv.ok(COMMIT, t=turn)
                (with_review if reviews else without).append(time.perf_counter() - start)
        turn = (await srv.ok(BEGIN, s=reviewed))["beginTurn"]["turn"]["id"]
        originals = list(record_of)
        outcomes = await review(turn, [edited(f) for f in originals])
        for original, o in zip(originals, outcomes, strict=True):
            offered += 1
            top = [s["version"]["recordId"] for s in o["similar"][:5]]
            found += record_of[original] in top
            skipped += o["applied"] == "SKIP"
        await srv.ok(COMMIT, t=turn)
    ms = {name: statistics.median(s) * 1000 for name, s in calls.items()}
    common.table(
        "through the schema",
        ["figure", "value"],
        [
            ("facts added while replaying", added - skipped_while_adding),
            ("ADDs applied as SKIP while replaying", skipped_while_adding),
            ("restatements offered", offered),
            ("original in the top 5", f"{found / offered:.2%}"),
            ("restatements skipped (no new record)", f"{skipped / offered:.2%}"),
            *((f"{name} p50 ms", f"{v:.1f}") for name, v in ms.items()),
            ("turn p50 ms, with review", f"{statistics.median(with_review) * 1000:.1f}"),
            ("turn p50 ms, without", f"{statistics.median(without) * 1000:.1f}"),
        ],
    )
    return {
        "added": added - skipped_while_adding,
        "skipped_while_adding": skipped_while_adding,
        "restatements": offered,
        "top5_rate": found / offered,
        "restatements_skipped": skipped / offered,
        **{f"{name}_p50_ms": v for name, v in ms.items()},
        "turn_p50_ms_with_review": statistics.median(with_review) * 1000,
        "turn_p50_ms_without": statistics.median(without) * 1000,
        "added_ms_per_turn": (statistics.median(with_review) - statistics.median(without)) * 1000,
    }


async def many(srv: Any, paths: list[Path], rounds: int) -> dict[str, Any]:
    """Reviews of 50 candidates each (compare, then apply 50 ADDs, half of them edited
    restatements of known records): each call's p50 and the statements it sends."""
    facts_ = list(dict.fromkeys(f for p in paths[:3] for s in facts(p) for f in s))[:100]
    known, offered = facts_[:50], facts_[50:]
    a = (await srv.ok(CREATE_AGENT, ns=f"bench{uuid.uuid4().hex[:10]}"))["createAgent"]["agent"]
    await srv.ok(PUBLISH, agent=a["id"], config=CONFIG)
    session = (await srv.ok(SESSION, agent=a["id"]))["createSession"]["session"]["id"]
    sent = [0]

    def count(*_: Any) -> None:
        sent[0] += 1

    async def one(candidates: list[str]) -> tuple[float, int, float, int]:
        turn = (await srv.ok(BEGIN, s=session))["beginTurn"]["turn"]["id"]
        await srv.ok(RECORD, t=turn, events=[{"type": "USER_MESSAGE", "text": "about me"}])
        begun = (await srv.ok(BEGIN_REVIEW, t=turn))["beginMemoryReview"]
        await srv.ok(INVOKE, e=begun["review"]["execution"]["id"])
        c = [{"summary": f, "kind": "event"} for f in candidates]
        decisions = [{"candidate": x, "action": "ADD"} for x in c]
        seconds: list[float] = []
        statements: list[int] = []
        for query, values in ((COMPARE, {"c": c}), (APPLY, {"d": decisions})):
            sent[0] = 0
            start = time.perf_counter()
            await srv.ok(query, r=begun["review"]["id"], **values)
            seconds.append(time.perf_counter() - start)
            statements.append(sent[0])
        await srv.ok(COMMIT, t=turn)
        return seconds[0], statements[0], seconds[1], statements[1]

    engine = srv.database.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        await one(known)
        done = []
        for i in range(rounds):  # a different half of each kind every round
            restated = [edited(f) for f in known[i * 5 : i * 5 + 25]]
            done.append(await one(restated + [f"{f} ({i})" for f in offered[i * 5 : i * 5 + 25]]))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    figures = {
        "many_compare_p50_ms": statistics.median(d[0] for d in done) * 1000,
        "many_compare_statements": done[-1][1],
        "many_apply_p50_ms": statistics.median(d[2] for d in done) * 1000,
        "many_apply_statements": done[-1][3],
    }
    common.table(
        "a review of 50 candidates (compare, then apply 50 ADDs)",
        ["figure", "value"],
        [(k, f"{v:.1f}" if isinstance(v, float) else v) for k, v in figures.items()],
    )
    return figures


async def _run(quick: bool) -> dict[str, Any]:
    paths = sorted(DATA.glob("*.json"))
    async with server(f"bench_review_{uuid.uuid4().hex[:6]}") as srv:
        # the replay first: its facts reach the model before its cache holds them
        figures = await (replay(srv, paths[:1], 8) if quick else replay(srv, paths))
        figures.update(await many(srv, paths, 3 if quick else 5))
        figures.update(await threshold(paths, srv.embedder))  # every fact: it is cheap
    return figures


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(_run(quick))
