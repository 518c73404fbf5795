"""``bench locomo``: retrieval recall on the LoCoMo conversations.

Each conversation in ``../shared/data/locomo/`` (next to the repository) becomes
one agent whose memory holds one record per dialog turn (``speaker: text``, and the
image caption when there is one), stamped with its session's date. Each
question of categories 1-4 that has evidence is searched in its conversation;
recall@k = |evidence turns in the top k| / |evidence turns|, averaged over the
questions (LoCoMo's own definition; the folder's README). Malformed evidence ids
are split on ``[;\\s]+`` and normalised, and ids that name no turn are dropped.

Compared: this server's search in ``hybrid``, ``vector`` and ``lexical`` mode
(min_score -1, so every mode may fill its ten places), Mem0 OSS (pgvector,
``infer=False``) and LangGraph's PostgresStore (index), all with the same model
and the same vectors (computed once and handed to each). The server searches as
the agent does (its own turn: the keyword candidates come from the BM25 postings,
bounded by the pool); ``hybrid_every`` and ``lexical_every`` search as a dashboard
does (an API reader: every keyword match is scored), which shows what the bound
costs in recall.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench import common
from server.domain.visibility import Reader
from server.memory_search import ranking as memory_ranking

DATA = common.LOCOMO
MODES = ("hybrid", "vector", "lexical")
# the same searches by an API reader, whose keyword leg scores every match
EVERY = ("hybrid_every", "lexical_every")
KS = (5, 10)


# --quick: one conversation (--cv: three, the fewest leave-one-out can choose on)
QUICK_FILES = 1


def conversations(quick: bool, data: Path = DATA, *, quick_files: int = QUICK_FILES) -> list[Path]:
    files = sorted(data.glob("*.json"))
    return files[:quick_files] if quick else files


def turns_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Every dialog turn with its text and time (the session's date, a second a turn)."""
    out = []
    n = 1
    while f"session_{n}" in conv:
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            out.append(
                {
                    "dia_id": turn["dia_id"],
                    "text": text,
                    "at": when.replace(tzinfo=UTC).timestamp() + i,
                }
            )
        n += 1
    return out


def _normal(dia_id: str) -> str:
    m = re.fullmatch(r"D:?(\d+):0*(\d+)", dia_id.strip())
    return f"D{m.group(1)}:{m.group(2)}" if m else dia_id.strip()


def questions(conv: dict[str, Any], known: set[str]) -> list[dict[str, Any]]:
    out = []
    for qa in conv["qa"]:
        if qa.get("category") not in (1, 2, 3, 4):
            continue
        evidence = {
            _normal(e) for raw in qa.get("evidence", []) for e in re.split(r"[;\s]+", raw) if e
        }
        evidence &= known
        if evidence:
            out.append(
                {"question": qa["question"], "evidence": evidence, "category": qa["category"]}
            )
    return out


def recall(found: list[list[str]], qs: list[dict[str, Any]], k: int) -> float:
    scores = [
        len(q["evidence"] & set(f[:k])) / len(q["evidence"]) for f, q in zip(found, qs, strict=True)
    ]
    return 100 * sum(scores) / len(scores)


def embed(convs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Every dialog turn's and question's vector, computed once and handed to each system:
    the turns as the server stores them, the questions as it embeds a memory search's
    query."""
    texts = sorted({t["text"] for c in convs for t in c["turns"]})
    asked = sorted({q["question"] for c in convs for q in c["questions"]})
    model = common.embedder()
    vec = {t: v for t, (v, _) in zip(texts, model.encode_now(texts), strict=True)}
    vec |= {q: v for q, (v, _) in zip(asked, model.encode_now(asked, query=True), strict=True)}
    model.close()
    return vec


async def keep(
    url: Any, db: Any, convs: list[dict[str, Any]], vec: dict[str, list[float]]
) -> list[tuple[common.Owner, dict[uuid.UUID, str]]]:
    """Each conversation as one agent's memory, a record per dialog turn stamped with its
    session's date: each agent, and the dia_id of each record."""
    pg_epoch = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
    owners = []
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        for c in convs:
            owner = await common.make_owner(
                db, namespace=f"locomo{uuid.uuid4().hex[:6]}", config=common.MEMORY_CONFIG
            )
            texts = [t["text"] for t in c["turns"]]
            ids = common.bulk_records(
                conn,
                owner,
                vectors=np.array([vec[t] for t in texts], dtype=np.float32),
                texts=texts,
                text_of=np.arange(len(texts)),
                created_at=np.array(
                    [(t["at"] - pg_epoch) * 1e6 for t in c["turns"]], dtype=np.int64
                ),
            )
            owners.append((owner, {r: t["dia_id"] for r, t in zip(ids, c["turns"], strict=True)}))
        conn.execute("VACUUM ANALYZE memory_versions")
    return owners


async def ours(
    url: Any, convs: list[dict[str, Any]], vec: dict[str, list[float]]
) -> dict[str, list[list[str]]]:
    db = await common.connect(url)
    found: dict[str, list[list[str]]] = {m: [] for m in (*MODES, *EVERY)}
    owners = await keep(url, db, convs, vec)
    for c, (owner, dia) in zip(convs, owners, strict=True):
        agent, api = owner.reader(), Reader.for_api(agent_id=owner.agent_id)
        for q in c["questions"]:
            for name in (*MODES, *EVERY):
                mode = name.removesuffix("_every")
                async with db.session() as s:
                    items = await memory_ranking.ranked(
                        s,
                        api if name in EVERY else agent,
                        memory_ranking.MemoryQuery(
                            q["question"],
                            None if mode == "lexical" else vec[q["question"]],
                            mode=mode,  # type: ignore[arg-type]
                            min_score=-1.0,
                            limit=max(KS),
                        ),
                    )
                found[name].append([dia[i.record.id] for i in items])
    await db.dispose()
    return found


def mem0(url: Any, convs: list[dict[str, Any]], vec: dict[str, list[float]]) -> list[list[str]]:
    os.environ.setdefault("MEM0_TELEMETRY", "False")  # no network calls
    from mem0 import Memory

    m = Memory.from_config(common.mem0_config(url, "locomo_mem0"))
    compute = m.embedding_model.embed
    m.embedding_model.embed = lambda text, action=None: vec.get(text) or compute(text, action)
    found = []
    for n, c in enumerate(convs):
        for t in c["turns"]:
            m.add(t["text"], user_id=f"conv{n}", infer=False, metadata={"dia_id": t["dia_id"]})
        for q in c["questions"]:
            hits = m.search(q["question"], filters={"user_id": f"conv{n}"}, limit=max(KS))
            found.append([h.get("metadata", {}).get("dia_id") for h in hits["results"]])
    return found


def langgraph(
    url: Any, convs: list[dict[str, Any]], vec: dict[str, list[float]]
) -> list[list[str]]:
    from langgraph.store.base import IndexConfig
    from langgraph.store.postgres import PostgresStore

    def embed(batch: list[str]) -> list[list[float]]:
        return [vec[t] for t in batch]

    found = []
    index: IndexConfig = {"dims": 384, "embed": embed, "fields": ["text"]}
    with PostgresStore.from_conn_string(common.dsn(url), index=index) as store:
        store.setup()
        for n, c in enumerate(convs):
            ns = ("locomo", f"conv{n}")
            for t in c["turns"]:
                store.put(ns, t["dia_id"], {"text": t["text"]})
            for q in c["questions"]:
                found.append([h.key for h in store.search(ns, query=q["question"], limit=max(KS))])
    return found


def load(quick: bool, data: Path = DATA, *, quick_files: int = QUICK_FILES) -> list[dict[str, Any]]:
    """The conversations in ``data``: each one's name, dialog turns and questions."""
    convs = []
    for path in conversations(quick, data, quick_files=quick_files):
        conv = json.loads(path.read_text())
        turns = turns_of(conv)
        known = {t["dia_id"] for t in turns}
        convs.append({"name": path.stem, "turns": turns, "questions": questions(conv, known)})
    if not convs:
        raise SystemExit(f"no LoCoMo conversations in {data}")
    return convs


def per_conversation(
    convs: list[dict[str, Any]], results: dict[str, list[list[str]]]
) -> dict[str, dict[str, float]]:
    """recall@10 of each conversation on its own, in each of the server's modes, and the
    hybrid's lead over its better single mode."""
    out = {}
    start = 0
    for c in convs:
        qs = c["questions"]
        end = start + len(qs)
        row = {m: round(recall(results[m][start:end], qs, 10), 2) for m in MODES}
        row["hybrid_minus_best_single"] = round(
            row["hybrid"] - max(row["vector"], row["lexical"]), 2
        )
        out[c["name"]] = row
        start = end
    return out


def run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    convs = load(quick, data)
    vec = embed(convs)
    url, _ = common.database("bench_locomo", fresh=True)
    qs = [q for c in convs for q in c["questions"]]
    results: dict[str, list[list[str]]] = asyncio.run(ours(url, convs, vec))
    not_run = {}
    for name, peer in (("mem0", mem0), ("langgraph", langgraph)):
        try:
            results[name] = peer(url, convs, vec)
        except ImportError as exc:
            not_run[name] = f"not installed ({exc}); pip install -e '.[bench]'"
    rows = []
    records = sum(len(c["turns"]) for c in convs)
    figures: dict[str, Any] = {
        "conversations": len(convs),
        "records": records,
        "questions": len(qs),
    }
    for name, found in results.items():
        r = {f"recall@{k}": recall(found, qs, k) for k in KS}
        figures[name] = r
        label = f"agent-memory {name}" if name in (*MODES, *EVERY) else name
        rows.append((label, r["recall@5"], r["recall@10"]))
    common.table(
        f"LoCoMo retrieval, {len(convs)} conversations, {len(qs)} questions (recall, %)",
        ["system / mode", "recall@5", "recall@10"],
        rows,
    )
    conv = per_conversation(convs, results)
    common.table(
        "each conversation on its own: recall@10 (%)",
        ["conversation", *MODES, "hybrid - best single mode"],
        [[n, *r.values()] for n, r in conv.items()],
    )
    figures["per_conversation"] = conv
    figures["hybrid_ge_single_plus_2_every_conversation"] = all(
        r["hybrid_minus_best_single"] >= 2 for r in conv.values()
    )
    best_peer = max(
        (figures[p]["recall@10"] for p in ("mem0", "langgraph") if p in figures), default=None
    )
    figures["hybrid_minus_best_single_mode_at10"] = figures["hybrid"]["recall@10"] - max(
        figures["vector"]["recall@10"], figures["lexical"]["recall@10"]
    )
    if best_peer is not None:
        figures["hybrid_minus_best_peer_at10"] = figures["hybrid"]["recall@10"] - best_peer
    if not_run:
        figures["not_run"] = not_run
    common.drop("bench_locomo")
    return figures
