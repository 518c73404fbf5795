"""bench locomo-history: LoCoMo retrieval through session history (R62).

Each LoCoMo conversation (``../shared/data/locomo/``) is one session of an
agent with ``harness.history.index = "messages"``; each of its sessions is one
committed turn, and each dialog turn one event (the first speaker's as user
messages, the second's as agent replies), kept as ``"<speaker>: <text>"`` with
a shared image's caption appended, and dated as its LoCoMo session was (the kept
parts' and events' ``created_at``: the sessions happened then, and a question
naming a date is read against them). Then every question of categories 1-4 with
evidence is asked from a new last turn: by ``searchHistory`` through the schema
(hybrid, as the agent asks it: candidates by meaning and keywords, then their
turns ranked in context) and, for comparison, by one signal alone in vector and
lexical mode (``server.services.history_ranking.rank_parts``, whose keyword half
leaves out the words too common in the session, as the hybrid's does).

recall@k = |evidence ∩ top k| / |evidence| (LoCoMo's own definition), averaged
over the questions; an event's id maps back to its dia_id by (turn, sequence).
Targets: hybrid recall@10 >= 0.75 and >= max(vector, lexical); a BM25 baseline
on all ten conversations scores 0.519 at k = 10.

Run as ``python -m bench locomo-history [--quick]`` (``--quick``: one conversation).
"""

from __future__ import annotations

import json
import re
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import common

DATA = common.LOCOMO
QUICK_FILES = ("30.json",)
KS = (5, 10)
MODES = ("hybrid", "vector", "lexical")
TARGET_RECALL_10 = 0.75
BM25_BASELINE_10 = 0.519
# LoCoMo's question categories (5, adversarial, has no evidence to find).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

# -- LoCoMo -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: list[tuple[str, list[dict[str, Any]]]]  # (date, dialog turns)
    questions: list[Question]

    @property
    def turns(self) -> int:
        return sum(len(d) for _, d in self.sessions)


def event_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares an image: {turn['blip_caption']}]"
    return text


def _normalise(raw: str) -> str | None:
    m = re.fullmatch(r"D:?(\d+):0*(\d+)", raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def load_conversations(data: Path = DATA, files: Sequence[str] | None = None) -> list[Conversation]:
    """The conversations, with the evidence ids cleaned as the data's README says."""
    out = []
    for path in sorted(data.glob("*.json")):
        if files is not None and path.name not in files:
            continue
        raw = json.loads(path.read_text())
        numbers = sorted(
            int(m.group(1)) for k in raw if (m := re.fullmatch(r"session_(\d+)", k)) and raw[k]
        )
        sessions = [(raw[f"session_{n}_date_time"], raw[f"session_{n}"]) for n in numbers]
        known = {t["dia_id"] for _, turns in sessions for t in turns}
        questions = []
        for q in raw["qa"]:
            if q.get("category") == 5:
                continue
            ids = {_normalise(p) for e in q.get("evidence", []) for p in re.split(r"[;\s]+", e)}
            evidence = frozenset(i for i in ids if i in known)
            if evidence:
                questions.append(Question(q["question"], evidence, q["category"]))
        out.append(
            Conversation(path.stem, (raw["speaker_a"], raw["speaker_b"]), sessions, questions)
        )
    return out


# -- a server in this process -----------------------------------------------------------


@dataclass
class Server:
    """An embedded PostgreSQL (fresh, migrated), the embedder and the schema, driven
    through ``schema.execute`` as the agent itself."""

    database: Any
    embedder: Any
    settings: Any
    schema: Any
    identity: Any

    async def ok(self, query: str, **variables: Any) -> dict[str, Any]:
        from resolvers.context import make_context

        context = make_context(
            database=self.database,
            embedder=self.embedder,
            settings=self.settings,
            identity=self.identity,
        )
        result = await self.schema.execute(query, variable_values=variables, context_value=context)
        if result.errors:
            raise RuntimeError([(e.message, e.extensions) for e in result.errors])
        return dict(result.data)


def _bench_caller() -> Any:
    """The agent's runtime (and an admin, to create agents): a bench tests the search,
    not the grants."""
    from server.domain.grants import PRIVILEGES, Chain, Link, Policy
    from server.services.chain import Caller, RuntimeBinding

    everything = Policy.parse("everything", [(p, "*") for p in PRIVILEGES])
    return Caller(
        name="bench",
        chain=Chain((Link("client", "bench", (everything,)),)),
        kind="admin",
        admin=True,
        runtime=RuntimeBinding(every_agent=True),
    )


@asynccontextmanager
async def server(name: str) -> AsyncIterator[Server]:
    """A fresh database ``name`` on the benchmarks' server, the model and the schema."""
    from resolvers.schema import build_schema
    from server.embedding import Embedder

    url, _ = common.database(name, fresh=True)
    database = await common.connect(url)
    # the model as the server builds it (server/app.py), with its batch size setting
    model = Embedder.from_settings(database.settings)
    await model.aload()
    try:
        schema = build_schema(settings=database.settings)  # the server's own, limits included
        yield Server(database, model, database.settings, schema, _bench_caller())
    finally:
        model.close()
        await database.dispose()
        common.drop(name)


CREATE_AGENT = """mutation($ns: String!) {
  createAgent(input: {namespace: $ns, name: "locomo"}) { agent { id } } }"""
PUBLISH = """mutation($agent: ID!, $config: JSON!) {
  publishAgentVersion(input: {agentId: $agent, config: $config}) { agentVersion { id } } }"""
SESSION = "mutation($agent: ID!) { createSession(input: {agentId: $agent}) { session { id } } }"
BEGIN = "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id number } } }"
RECORD = """mutation($t: ID!, $events: [ConversationEventInput!]!) {
  recordEvents(input: {turnId: $t, events: $events}) { events { sequence } } }"""
COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { id } } }"
SEARCH = """mutation($t: ID!, $q: String!, $limit: Int!) {
  searchHistory(input: {turnId: $t, query: $q, limit: $limit}) {
    results { eventId turn sequence } } }"""


@dataclass
class Loaded:
    """A conversation kept as one session: where each dialog turn landed."""

    agent_id: uuid.UUID
    session_id: uuid.UUID
    dia_of: dict[tuple[int, int], str]  # (turn number, sequence) -> dia_id
    events: int
    seconds: float


async def new_agent(srv: Server, index: str = "messages") -> str:
    agent = (await srv.ok(CREATE_AGENT, ns=f"bench{uuid.uuid4().hex[:10]}"))["createAgent"][
        "agent"
    ]["id"]
    await srv.ok(PUBLISH, agent=agent, config={"harness": {"history": {"index": index}}})
    return str(agent)


async def keep_conversation(srv: Server, conv: Conversation, agent: str) -> Loaded:
    """One committed turn per LoCoMo session, one event per dialog turn (timed)."""
    session = (await srv.ok(SESSION, agent=agent))["createSession"]["session"]["id"]
    dia_of: dict[tuple[int, int], str] = {}
    events = 0
    started = time.perf_counter()
    for _, dialog in conv.sessions:
        begun = (await srv.ok(BEGIN, s=session))["beginTurn"]["turn"]
        for start in range(0, len(dialog), 100):
            chunk = dialog[start : start + 100]
            recorded = await srv.ok(
                RECORD,
                t=begun["id"],
                events=[
                    {
                        "type": "USER_MESSAGE"
                        if t["speaker"] == conv.speakers[0]
                        else "AGENT_MESSAGE",
                        "text": event_text(t),
                    }
                    for t in chunk
                ],
            )
            for t, e in zip(chunk, recorded["recordEvents"]["events"], strict=True):
                dia_of[(begun["number"], e["sequence"])] = t["dia_id"]
        await srv.ok(COMMIT, t=begun["id"])
        events += len(dialog)
    seconds = time.perf_counter() - started
    return Loaded(uuid.UUID(agent), uuid.UUID(session), dia_of, events, seconds)


async def backdate(srv: Server, conv: Conversation, loaded: Loaded) -> None:
    """Date each kept turn as its LoCoMo session was (the turns happened then)."""
    from sqlalchemy import text

    async with srv.database.session() as db:
        for number, (when, _) in enumerate(conv.sessions, start=1):
            at = session_time(when)
            for table in ("history_parts", "history_events"):
                await db.execute(
                    text(
                        f"UPDATE {table} SET created_at = :at "
                        "WHERE session_id = :s AND turn_number = :n"
                    ),
                    {"at": at, "s": loaded.session_id, "n": number},
                )
        await db.commit()


def session_time(raw: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC datetime."""
    return datetime.strptime(raw.replace(",", ""), "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)


def recall_at(found: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence & set(found[:k])) / len(evidence)


async def _ranked_dia(
    srv: Server, reader: Any, loaded: Loaded, query: str, mode: str, limit: int
) -> list[str]:
    from sqlalchemy import select
    from sqlmodel import col

    from server.models import HistoryEvent, HistoryPart
    from server.services.history_ranking import rank_parts

    vector = None if mode == "lexical" else (await srv.embedder.embed_one(query))[0]
    async with srv.database.session() as db:
        hits = await rank_parts(
            db, reader=reader, query=query, vector=vector, limit=limit, mode=mode
        )
        keys = [h.key for h in hits]
        rows = (
            await db.execute(
                select(HistoryPart.id, HistoryEvent.turn_number, HistoryEvent.sequence)
                .join(HistoryEvent, HistoryEvent.id == HistoryPart.event_id)
                .where(col(HistoryPart.id).in_(keys))
            )
        ).all()
    where = {pid: (turn, seq) for pid, turn, seq in rows}
    return [loaded.dia_of.get(where[k], "?") for k in keys]


async def evaluate(srv: Server, conv: Conversation, loaded: Loaded) -> dict[str, Any]:
    """Every question from a new last turn: recall@k per mode, and the API's latency."""
    from server.domain.history import HistoryReader

    begun = (await srv.ok(BEGIN, s=str(loaded.session_id)))["beginTurn"]["turn"]
    reader = HistoryReader(
        agent_id=loaded.agent_id,
        session_id=loaded.session_id,
        turn_number=begun["number"],
        preview=False,
    )
    scores: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in MODES}
    latencies = []
    for q in conv.questions:
        started = time.perf_counter()
        data = await srv.ok(SEARCH, t=begun["id"], q=q.text, limit=max(KS))
        latencies.append(time.perf_counter() - started)
        found = {
            "hybrid": [
                loaded.dia_of.get((r["turn"], r["sequence"]), "?")
                for r in data["searchHistory"]["results"]
            ]
        }
        for mode in ("vector", "lexical"):
            found[mode] = await _ranked_dia(srv, reader, loaded, q.text, mode, max(KS))
        for mode in MODES:
            for k in KS:
                scores[mode][k].append(recall_at(found[mode], q.evidence, k))
    categories = [q.category for q in conv.questions]
    return {"scores": scores, "latencies": latencies, "categories": categories}


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


async def _run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    conversations = load_conversations(data, QUICK_FILES if quick else None)
    if not conversations:
        raise SystemExit(f"no LoCoMo conversations in {data}")
    totals: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in MODES}
    latencies: list[float] = []
    categories: list[int] = []
    rows = []
    async with server("bench_locomo_history") as srv:
        for conv in conversations:
            agent = await new_agent(srv)
            loaded = await keep_conversation(srv, conv, agent)
            await backdate(srv, conv, loaded)
            result = await evaluate(srv, conv, loaded)
            latencies.extend(result["latencies"])
            categories.extend(result["categories"])
            row: list[Any] = [conv.name, len(conv.questions), loaded.events]
            for mode in MODES:
                for k in KS:
                    totals[mode][k].extend(result["scores"][mode][k])
                    row.append(_mean(result["scores"][mode][k]))
            rows.append(row)
    recall = {f"{m}@{k}": round(_mean(totals[m][k]), 4) for m in MODES for k in KS}
    columns = [f"{m}@{k}" for m in MODES for k in KS]
    per_conversation = {
        r[0]: {c: round(v, 4) for c, v in zip(columns, r[3:], strict=True)} for r in rows
    }
    rows.append(
        [
            "all",
            len(totals["hybrid"][10]),
            sum(r[2] for r in rows),
            *(recall[f"{m}@{k}"] for m in MODES for k in KS),
        ]
    )
    common.table(
        "LoCoMo through session history: recall@k of the evidence turns",
        ["conversation", "questions", "events", *(f"{m}@{k}" for m in MODES for k in KS)],
        [[c if not isinstance(c, float) else f"{c:.3f}" for c in r] for r in rows],
    )
    by_category = {
        f"{CATEGORIES[c]}@10": {
            m: round(
                _mean([r for r, qc in zip(totals[m][10], categories, strict=True) if qc == c]), 4
            )
            for m in MODES
        }
        for c in sorted(set(categories))
    }
    common.table(
        "recall@10 by LoCoMo question category",
        ["category", "questions", *MODES],
        [
            [CATEGORIES[c], categories.count(c), *by_category[f"{CATEGORIES[c]}@10"].values()]
            for c in sorted(set(categories))
        ],
    )
    best_single = max(recall["vector@10"], recall["lexical@10"])
    p50 = round(1000 * statistics.median(latencies), 2)
    print(
        f"searchHistory p50 {p50} ms through the schema; target hybrid@10 >= "
        f"{TARGET_RECALL_10}: {recall['hybrid@10'] >= TARGET_RECALL_10}; >= max(vector, "
        f"lexical): {recall['hybrid@10'] >= best_single}; BM25 on ten conversations: "
        f"{BM25_BASELINE_10}",
        flush=True,
    )
    return {
        "conversations": len(conversations),
        "questions": len(totals["hybrid"][10]),
        "recall": recall,
        "recall_by_category": by_category,
        "per_conversation": per_conversation,
        "search_p50_ms": p50,
        "hybrid10_meets_0_75": recall["hybrid@10"] >= TARGET_RECALL_10,
        "hybrid10_ge_single_modes": recall["hybrid@10"] >= best_single,
        "bm25_baseline_10": BM25_BASELINE_10,
    }


def run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    return dict(common.run_async(_run(quick, data)))
