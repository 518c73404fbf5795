"""``bench locomo --cv``: the memory ranking's constants chosen by nested
leave-one-conversation-out over the LoCoMo conversations (R41).

The conversations are kept once, as ``bench locomo`` keeps them (one agent each, one
record per dialog turn, stamped with its session's date). Then each question's
signals are read once from the database: every version's cosine to the question
(pgvector's own), every version's lexemes with their counts (its ``search_tsv``,
PostgreSQL's own), the question's terms, and, for a question in web-search syntax,
the versions it matches. A ranking is then replayed in numpy (:class:`Signals`: BM25
by :mod:`server.domain.bm25` for any ``k1`` and ``b``, the keyword candidates as
:func:`server.storage.bm25.bounded` reads them, the fusion of
:func:`server.domain.ranking.rank`), so a grid of constant sets costs seconds; the
replay is checked against the server's statement (``ranked``) on a sample of
questions in the three modes before anything is scored.

Nested leave-one-conversation-out: for each conversation (the outer fold), every
constant set of the grid is scored on the four others (recall@10 over their
questions pooled: the inner choice), the best is taken and scored on the held-out
one, which took no part in choosing it. Printed and returned: per fold the chosen
constants and the held-out conversation's hybrid, vector and lexical recall@10 (the
single modes under the fold's BM25 constants); the folds' mean and worst; each
conversation under the server's own constants; each constant's sensitivity (the
nested mean with it held at half and one and a half times its value, the others
chosen as usual); and the fusions measured against the server's, each under the
same nested procedure.

The questions are asked a day after each conversation's last session (``ASKED``),
so that recency counts as it would for an agent asked then.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from bench import common
from bench.locomo import DATA, embed, keep, load
from server.domain import bm25
from server.domain.ranking_presets import DEFAULT_PRESET

K = 10
# An agent is asked about its memory a day after the conversation's last session.
ASKED = timedelta(days=1)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Constants:
    """One point of the grid: every constant of the memory ranking (hybrid mode)."""

    cosine_share: float = DEFAULT_PRESET.cosine_share
    bm25_k1: float = bm25.BM25.k1
    bm25_b: float = bm25.BM25.b
    pool: int = DEFAULT_PRESET.pool_size(K)
    recency_weight: float = DEFAULT_PRESET.recency_weight
    half_life_days: float = DEFAULT_PRESET.recency_half_life_days
    # the seeking of keyword candidates (server.domain.bm25.depths): cost bounds
    seeking_most: int = DEFAULT_PRESET.seeking.most
    seeking_budget: int = DEFAULT_PRESET.seeking.budget
    # the fusions measured against the server's (FUSIONS); 0 where unused
    rrf_k: float = 60.0
    vector_weight: float = 1.0
    vector_pool: int = 0  # the candidates by meaning, when not ``pool``

    def short(self) -> str:
        base = Constants()
        changed = {f.name: getattr(self, f.name) for f in fields(self)}
        return " ".join(
            f"{k}={v:g}" for k, v in changed.items() if k in SHOWN or v != getattr(base, k)
        )


SERVER = Constants()
SHOWN = ("cosine_share", "bm25_k1", "bm25_b", "recency_weight")

# The constants nested cross-validation chooses, and the values it chooses among.
GRID: dict[str, tuple[float, ...]] = {
    "cosine_share": (0.3, 0.4, 0.5, 0.6, 0.7),
    "bm25_b": (0.0, 0.25, 0.5, 0.75),
    "recency_weight": (0.0, 0.025, 0.05, 0.1),
}


def grid(axes: dict[str, tuple[float, ...]], base: Constants = SERVER) -> list[Constants]:
    return common.grid(axes, base)


# -- the signals of one question, read once ---------------------------------------------


@dataclass
class Memory:
    """One conversation kept as one agent's memory: its versions, in the order read."""

    name: str
    agent_id: uuid.UUID
    versions: list[uuid.UUID]
    record_of: dict[uuid.UUID, uuid.UUID]
    dia: list[str]
    created: np.ndarray  # epoch seconds
    tiebreak: np.ndarray  # position in (created_at DESC, key ASC) order
    terms: list[dict[str, int]]  # each version's lexemes and how often it holds each
    asked: float  # when the questions are asked (epoch seconds)
    df: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for held in self.terms:
            for t in held:
                self.df[t] = self.df.get(t, 0) + 1
        self.lengths = [sum(t.values()) for t in self.terms]

    @property
    def n(self) -> int:
        return len(self.versions)

    def recency(self, half_life_days: float) -> np.ndarray:
        age = np.maximum(self.asked - self.created, 0.0) / 86_400.0
        return np.asarray(0.5 ** (age / half_life_days))


@dataclass
class Signals:
    """One question over one memory: what the SQL gives, and the replayed rankings."""

    memory: Memory
    category: int
    evidence: frozenset[str]
    query: str
    vector: list[float]
    cosine: np.ndarray
    terms: list[str]
    web: np.ndarray | None  # web-search syntax: the versions the query matches
    _scored: dict[tuple[float, float], tuple[np.ndarray, dict[str, np.ndarray]]] = field(
        default_factory=dict
    )
    _lists: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        m = self.memory
        self.dfs = {t: m.df.get(t, 0) for t in self.terms}
        self.weights = {t: bm25.idf(df, m.n) for t, df in self.dfs.items()}
        self.by_cosine = np.lexsort((m.tiebreak, -self.cosine))

    def keywords(self, c: Constants) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each version's BM25 under ``c`` (0: no term of the query, or no match of its
        web-search syntax), and each term's postings best first (impact, newer, key)."""
        key = (c.bm25_k1, c.bm25_b)
        if key not in self._scored:
            m = self.memory
            p = bm25.Bm25(k1=c.bm25_k1, b=c.bm25_b, avgdl=bm25.BM25.avgdl)
            scored = [
                bm25.score(t, dl, self.weights, p) for t, dl in zip(m.terms, m.lengths, strict=True)
            ]
            weight = np.array([0.0 if s is None else s for s in scored])
            if self.web is not None:
                matched = np.zeros(m.n, dtype=bool)
                matched[self.web] = True
                weight = np.where(matched, weight, 0.0)
            postings = {}
            for term in self.weights:
                holding = [i for i, t in enumerate(m.terms) if term in t]
                holding.sort(
                    key=lambda i, term=term: (
                        -bm25.impact(m.terms[i][term], m.lengths[i], p),
                        m.tiebreak[i],
                    )
                )
                postings[term] = np.array(holding, dtype=np.int64)
            self._scored[key] = (weight, postings)
        return self._scored[key]

    def vector_list(self, pool: int) -> np.ndarray:
        """The first ``pool`` by cosine (the bench's least cosine is -1: all qualify)."""
        return self.by_cosine[:pool]

    def lexical_list(self, c: Constants, pool: int | None = None) -> np.ndarray:
        """The keyword candidates best first, as the SQL reads them: each finding term's
        first postings (:func:`server.domain.bm25.depths`; web-search syntax: every
        version the query matches), by BM25, newer, key; the first ``pool``."""
        pool = c.pool if pool is None else pool
        key = (pool, c.bm25_k1, c.bm25_b, c.seeking_most, c.seeking_budget)
        if key not in self._lists:
            weight, postings = self.keywords(c)
            if self.web is not None:
                found = self.web
            else:
                seeking = bm25.Seeking(most=c.seeking_most, budget=c.seeking_budget)
                reads = bm25.depths(self.dfs, self.memory.n, seeking, pool)
                lists = [postings[t][:depth] for t, depth in reads.items()]
                found = np.unique(np.concatenate(lists)) if lists else np.array([], dtype=int)
            found = found[weight[found] > 0]
            order = np.lexsort((self.memory.tiebreak[found], -weight[found]))
            self._lists[key] = found[order][:pool]
        return self._lists[key]

    def candidates(self, c: Constants) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        v = self.vector_list(int(c.vector_pool or c.pool))
        lex = self.lexical_list(c)
        return v, lex, np.union1d(v, lex)

    def best_first(self, score: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        order = np.lexsort((self.memory.tiebreak[candidates], -score))
        return candidates[order][:K]

    def recall(self, found: np.ndarray) -> float:
        got = {self.memory.dia[i] for i in found[:K]}
        return len(self.evidence & got) / len(self.evidence)


# -- the fusions ------------------------------------------------------------------------


def _scaled(x: np.ndarray, *, low: bool) -> np.ndarray:
    """``x`` over its maximum, or from its minimum to its maximum (``low``); 0/0 is 0."""
    floor = x.min() if low else 0.0
    spread = x.max() - floor
    return (x - floor) / spread if spread > 0 else np.zeros(len(x))


def score_fusion(s: Signals, c: Constants) -> np.ndarray:
    """The server's (:func:`server.domain.ranking.rank`): every candidate's cosine from
    the candidates' least to their greatest, its BM25 over their greatest, blended by
    ``cosine_share``, plus what its age adds; in the reference's order of operations."""
    _, _, cand = s.candidates(c)
    if not len(cand):
        return cand
    weight, _ = s.keywords(c)
    meaning = c.cosine_share * _scaled(s.cosine[cand], low=True)
    words = (1.0 - c.cosine_share) * _scaled(weight[cand], low=False)
    gain = c.recency_weight * max(c.cosine_share, 1.0 - c.cosine_share)
    return s.best_first(meaning + words + gain * s.memory.recency(c.half_life_days)[cand], cand)


def rank_fusion(s: Signals, c: Constants) -> np.ndarray:
    """Reciprocal rank fusion (the ranking before): ``w / (k + rank)`` of each list."""
    v, lex, cand = s.candidates(c)
    score = np.zeros(s.memory.n)
    score[v] += c.vector_weight / (c.rrf_k + np.arange(1, len(v) + 1))
    score[lex] += 1.0 / (c.rrf_k + np.arange(1, len(lex) + 1))
    fresh = c.recency_weight * s.memory.recency(c.half_life_days) / (c.rrf_k + 1)
    return s.best_first((score + fresh)[cand], cand)


def raw_cosine(s: Signals, c: Constants) -> np.ndarray:
    """Score fusion with the cosine as it is (not scaled over the candidates)."""
    _, _, cand = s.candidates(c)
    if not len(cand):
        return cand
    weight, _ = s.keywords(c)
    blend = c.cosine_share * s.cosine[cand] + (1.0 - c.cosine_share) * _scaled(
        weight[cand], low=False
    )
    return s.best_first(blend, cand)


def z_scores(s: Signals, c: Constants) -> np.ndarray:
    """Score fusion of each signal's z-score over the candidates."""
    _, _, cand = s.candidates(c)
    if not len(cand):
        return cand
    weight, _ = s.keywords(c)

    def z(x: np.ndarray) -> np.ndarray:
        sd = x.std()
        return (x - x.mean()) / sd if sd > 0 else np.zeros(len(x))

    blend = c.cosine_share * z(s.cosine[cand]) + (1.0 - c.cosine_share) * z(weight[cand])
    return s.best_first(blend, cand)


def confidence_weighted(s: Signals, c: Constants) -> np.ndarray:
    """Score fusion with per-query weights: each signal's share scaled by how far its
    best candidate stands above the others (its z-score among them)."""
    _, _, cand = s.candidates(c)
    if not len(cand):
        return cand
    weight, _ = s.keywords(c)

    def lead(x: np.ndarray) -> float:
        sd = float(x.std())
        return float(x.max() - x.mean()) / sd if sd > 0 else 0.0

    wv = c.cosine_share * lead(s.cosine[cand])
    wl = (1.0 - c.cosine_share) * lead(weight[cand])
    share = wv / (wv + wl) if wv + wl > 0 else c.cosine_share
    blend = share * _scaled(s.cosine[cand], low=True) + (1.0 - share) * _scaled(
        weight[cand], low=False
    )
    return s.best_first(blend, cand)


Fusion = Callable[[Signals, Constants], np.ndarray]

# Each fusion measured, with the grid its own constants are chosen from (nested, as
# the server's); BM25's b is chosen by each as well.
FUSIONS: dict[str, tuple[Fusion, dict[str, tuple[float, ...]]]] = {
    "score fusion (server)": (score_fusion, GRID),
    "reciprocal rank fusion, k 60, equal weights (before)": (
        rank_fusion,
        {"bm25_k1": (3.0,), "recency_weight": (0.05,)},
    ),
    "reciprocal rank fusion, k and the meaning weight chosen": (
        rank_fusion,
        {
            "rrf_k": (10.0, 30.0, 60.0),
            "vector_weight": (0.25, 0.5, 0.75, 1.0),
            "bm25_b": (0.0, 0.25, 0.75),
        },
    ),
    "reciprocal rank fusion, fewer candidates by meaning": (
        rank_fusion,
        {"vector_pool": (10.0, 20.0, 40.0), "rrf_k": (10.0, 60.0), "bm25_b": (0.0, 0.25, 0.75)},
    ),
    "score fusion, fewer candidates by meaning": (
        score_fusion,
        GRID | {"vector_pool": (10.0, 20.0, 40.0), "recency_weight": (0.0,)},
    ),
    "score fusion, raw cosine": (raw_cosine, GRID | {"recency_weight": (0.0,)}),
    "score fusion, z-scores": (z_scores, GRID | {"recency_weight": (0.0,)}),
    "score fusion, per-query weights": (confidence_weighted, GRID | {"recency_weight": (0.0,)}),
}


def replay(s: Signals, c: Constants, mode: str) -> np.ndarray:
    if mode == "vector":
        return s.vector_list(c.pool)[:K]
    if mode == "lexical":
        return s.lexical_list(c)[:K]
    return score_fusion(s, c)


# -- keeping the conversations and reading the signals ----------------------------------


@dataclass
class Kept:
    memory: Memory
    reader: Any
    signals: list[Signals]


def _memory(
    conn: psycopg.Connection[Any], name: str, owner: common.Owner, dia: dict[uuid.UUID, str]
) -> Memory:
    rows = conn.execute(
        "SELECT id, record_id, extract(epoch FROM created_at)::float8 FROM memory_versions"
        " WHERE agent_id = %s ORDER BY id",
        (owner.agent_id,),
    ).fetchall()
    held: dict[uuid.UUID, dict[str, int]] = {}
    for version, lexeme, tf in conn.execute(
        "SELECT v.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)"
        " FROM memory_versions v, unnest(v.search_tsv) u WHERE v.agent_id = %s",
        (owner.agent_id,),
    ):
        held.setdefault(version, {})[lexeme] = tf
    created = np.array([r[2] for r in rows])
    by_tie = sorted(range(len(rows)), key=lambda i: (-created[i], rows[i][0].bytes))
    tiebreak = np.empty(len(rows), dtype=np.int64)
    tiebreak[by_tie] = np.arange(len(rows))
    return Memory(
        name=name,
        agent_id=owner.agent_id,
        versions=[r[0] for r in rows],
        record_of={r[0]: r[1] for r in rows},
        dia=[dia[r[1]] for r in rows],
        created=created,
        tiebreak=tiebreak,
        terms=[held.get(r[0], {}) for r in rows],
        asked=float(created.max()) + ASKED.total_seconds(),
    )


async def _signals(db: Any, memory: Memory, asked: list[dict[str, Any]]) -> list[Signals]:
    from sqlalchemy import literal_column, select
    from sqlmodel import col

    from server.models import MemoryVersion
    from server.storage.bm25 import query_terms
    from server.storage.search_terms import cosine, tsquery, uses_web_syntax

    position = {v: i for i, v in enumerate(memory.versions)}
    mine = col(MemoryVersion.agent_id) == memory.agent_id
    out = []
    async with db.session() as s:
        for q in asked:
            rows = await s.execute(
                select(col(MemoryVersion.id), cosine(col(MemoryVersion.embedding), q["vector"]))
                .where(mine)
                .order_by(literal_column("1"))
            )
            similarity = np.zeros(memory.n)
            for version, value in rows:
                similarity[position[version]] = value
            web = None
            if uses_web_syntax(q["question"]):
                matched = await s.scalars(
                    select(col(MemoryVersion.id)).where(
                        mine, MemoryVersion.search_tsv.op("@@")(tsquery(q["question"]))
                    )
                )
                web = np.array(sorted(position[v] for v in matched), dtype=np.int64)
            out.append(
                Signals(
                    memory=memory,
                    category=q["category"],
                    evidence=frozenset(q["evidence"]),
                    query=q["question"],
                    vector=q["vector"],
                    cosine=similarity,
                    terms=await query_terms(s, q["question"]),
                    web=web,
                )
            )
    return out


async def keep_all(url: Any, convs: list[dict[str, Any]]) -> list[Kept]:
    """Each conversation as one agent's memory (as ``bench locomo`` keeps it), and each
    question's signals."""
    vec = embed(convs)
    db = await common.connect(url)
    kept = []
    owners = await keep(url, db, convs, vec)
    with psycopg.connect(common.dsn(url), autocommit=True) as conn:
        for c, (owner, dia) in zip(convs, owners, strict=True):
            memory = _memory(conn, c["name"], owner, dia)
            asked = [q | {"vector": vec[q["question"]]} for q in c["questions"]]
            kept.append(Kept(memory, owner.reader(), await _signals(db, memory, asked)))
            print(f"kept {c['name']}: {memory.n} records, {len(asked)} questions", flush=True)
    await db.dispose()
    return kept


async def check_replay(url: Any, kept: Sequence[Kept], every: int = 4) -> tuple[int, int]:
    """The replay against the server's own statement, every ``every``-th question, in
    the three modes, at the moment the bench asks: how many rankings agreed, of how many."""
    from server.memory_search.ranking import MemoryQuery, ranked

    db = await common.connect(url)
    agree = total = 0
    for k in kept:
        at = {r: i for i, r in enumerate(k.memory.versions)}
        now = datetime.fromtimestamp(k.memory.asked, UTC)
        for s in k.signals[::every]:
            for mode in ("hybrid", "vector", "lexical"):
                query = MemoryQuery(
                    s.query,
                    None if mode == "lexical" else s.vector,
                    mode=mode,  # type: ignore[arg-type]
                    min_score=-1.0,
                    limit=K,
                )
                async with db.session() as session:
                    found = await ranked(session, k.reader, query, now=now)
                want = [at[f.version.id] for f in found]
                total += 1
                if [int(i) for i in replay(s, SERVER, mode)] == want:
                    agree += 1
                else:
                    print(f"  replay differs ({mode}) on {s.query!r}", flush=True)
    await db.dispose()
    return agree, total


# -- nested leave-one-conversation-out ---------------------------------------------------


def scores(signals: Sequence[Signals], configs: Sequence[Constants], fusion: Fusion) -> np.ndarray:
    """recall@10 of each config (rows) on each question (columns)."""
    return np.array([[s.recall(fusion(s, c)) for s in signals] for c in configs])


@dataclass
class Fold:
    held_out: str
    chosen: Constants
    train: float
    hybrid: float
    vector: float
    lexical: float


def cross_validate(
    signals: Sequence[Signals], configs: Sequence[Constants], table: np.ndarray
) -> list[Fold]:
    """For each conversation: the config best on the four others (their questions
    pooled), scored on it."""
    which = np.array([s.memory.name for s in signals])
    folds = []
    for held in sorted(set(which)):
        train, test = which != held, which == held
        best = int(np.argmax(table[:, train].mean(axis=1)))
        chosen = configs[best]
        out = [s for s in signals if s.memory.name == held]
        folds.append(
            Fold(
                held,
                chosen,
                float(table[best, train].mean()),
                float(table[best, test].mean()),
                statistics.fmean(s.recall(replay(s, chosen, "vector")) for s in out),
                statistics.fmean(s.recall(replay(s, chosen, "lexical")) for s in out),
            )
        )
    return folds


def nested_mean(folds: Sequence[Fold]) -> float:
    return 100 * statistics.fmean(f.hybrid for f in folds)


def per_conversation(signals: Sequence[Signals], c: Constants) -> dict[str, dict[str, float]]:
    """Each conversation's recall@10 (%) under ``c``, in the three modes."""
    out: dict[str, dict[str, list[float]]] = {}
    for s in signals:
        row = out.setdefault(s.memory.name, {m: [] for m in ("hybrid", "vector", "lexical")})
        for mode, found in row.items():
            found.append(s.recall(replay(s, c, mode)))
    return {
        name: {m: round(100 * statistics.fmean(v), 2) for m, v in modes.items()}
        for name, modes in out.items()
    }


# The constants whose sensitivity is reported: the nested mean with each held at half
# and one and a half times the server's value (b and a weight of 0 at the values named).
SENSITIVITY: dict[str, tuple[float, float] | None] = {
    "cosine_share": None,
    "bm25_k1": None,
    "bm25_b": (0.25, 0.75),
    "pool": None,
    "recency_weight": (0.025, 0.05),
    "half_life_days": None,
    "seeking_most": None,
    "seeking_budget": None,
}


def sensitivity(signals: Sequence[Signals]) -> dict[str, dict[str, float]]:
    out = {}
    for name, values in SENSITIVITY.items():
        value = getattr(SERVER, name)
        low, high = values if values is not None else (value * 0.5, value * 1.5)
        if isinstance(value, int):
            low, high = int(low), int(high)
        row = {}
        for at in (low, value, high):
            axes = {k: v for k, v in GRID.items() if k != name}
            configs = grid(axes, replace(SERVER, **{name: at}))
            table = scores(signals, configs, score_fusion)
            row[f"{at:g}"] = round(nested_mean(cross_validate(signals, configs, table)), 2)
        out[name] = row
        print(f"sensitivity {name}: {row}", flush=True)
    return out


def report(title: str, folds: Sequence[Fold]) -> dict[str, Any]:
    common.table(
        f"{title}: nested leave-one-conversation-out recall@10 (%)",
        ["held out", "train", "hybrid", "vector", "lexical", "chosen"],
        [
            [
                f.held_out,
                f"{100 * f.train:.2f}",
                f"{100 * f.hybrid:.2f}",
                f"{100 * f.vector:.2f}",
                f"{100 * f.lexical:.2f}",
                f.chosen.short(),
            ]
            for f in folds
        ],
    )
    mean, worst = nested_mean(folds), 100 * min(f.hybrid for f in folds)
    above = all(f.hybrid >= max(f.vector, f.lexical) + 0.02 for f in folds)
    print(
        f"{title}: nested mean {mean:.2f}, worst fold {worst:.2f}; hybrid >= best single"
        f" mode + 2 on every fold: {above}",
        flush=True,
    )
    return {
        "cv_mean": round(mean, 2),
        "cv_worst": round(worst, 2),
        "folds": {
            f.held_out: {
                "hybrid": round(100 * f.hybrid, 2),
                "vector": round(100 * f.vector, 2),
                "lexical": round(100 * f.lexical, 2),
                "chosen": f.chosen.short(),
            }
            for f in folds
        },
        "hybrid_ge_single_plus_2_every_fold": above,
    }


async def _run(quick: bool, data: Path) -> dict[str, Any]:
    convs = load(quick, data, quick_files=3)
    if len(convs) < 3:
        raise SystemExit(f"nested leave-one-out needs at least 3 conversations in {data}")
    url, _ = common.database("bench_locomo_cv", fresh=True)
    kept = await keep_all(url, convs)
    agree, total = await check_replay(url, kept)
    common.drop("bench_locomo_cv")
    print(f"replay agrees with the server's statement on {agree} of {total} rankings")
    signals = [s for k in kept for s in k.signals]
    figures: dict[str, Any] = {"replay_agrees": f"{agree}/{total}", "questions": len(signals)}
    configs = grid(GRID)
    table = scores(signals, configs, score_fusion)
    figures["server"] = report("score fusion (server)", cross_validate(signals, configs, table))
    chosen = configs[int(np.argmax(table.mean(axis=1)))]
    print(f"chosen on every conversation: {chosen.short()}; the server's: {SERVER.short()}")
    figures["chosen_on_all"] = chosen.short()
    conv = per_conversation(signals, SERVER)
    common.table(
        "each conversation under the server's constants: recall@10 (%)",
        ["conversation", "hybrid", "vector", "lexical", "hybrid - best single"],
        [
            [
                n,
                r["hybrid"],
                r["vector"],
                r["lexical"],
                r["hybrid"] - max(r["vector"], r["lexical"]),
            ]
            for n, r in conv.items()
        ],
    )
    figures["per_conversation"] = conv
    figures["hybrid_ge_single_plus_2_every_conversation"] = all(
        r["hybrid"] >= max(r["vector"], r["lexical"]) + 2 for r in conv.values()
    )
    if quick:
        return figures
    figures["fusions"] = {}
    for title, (fusion, axes) in FUSIONS.items():
        if fusion is score_fusion and axes is GRID:
            continue
        configs = grid(axes)
        folds = cross_validate(signals, configs, scores(signals, configs, fusion))
        figures["fusions"][title] = report(title, folds)
    figures["sensitivity"] = sensitivity(signals)
    return figures


def run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    return dict(common.run_async(_run(quick, data)))
