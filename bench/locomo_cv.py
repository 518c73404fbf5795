"""bench locomo-history --cv: the history ranking's constants chosen by
leave-one-conversation-out over the LoCoMo conversations (R62).

The conversations are kept once, as ``bench locomo-history`` keeps them (one
session each, one turn per LoCoMo session, dated as that session was: the
parts' and events' ``created_at`` are set to the session's date and time). Then
each question's signals are read once from the database: every part's cosine
(pgvector's own) and every part's lexemes with their counts (its ``search_tsv``,
PostgreSQL's own), and the query's lexemes. A ranking is then replayed in Python
(:class:`Signals`: BM25 by :mod:`server.domain.bm25`, each part's score and each
term's postings best first, the keyword candidates as
:func:`server.storage.bm25.bounded` finds them for each common-word cut and pool
the grid tries, and the formula of :func:`server.domain.ranking.rank_in_context`
over numpy arrays), so a grid of thousands of constant sets costs seconds; the
replay is checked against the server's SQL (``rank_parts``) on a sample of
questions before anything is scored.

For each fold, every constant set of :data:`GRID` is scored on four
conversations (recall@10 over their questions pooled), the best is taken, and
it is scored on the fifth. Printed: per fold the chosen constants and the held
out conversation's hybrid, vector and lexical recall@10; the folds' mean and
worst; per category. The production path is untouched: the figures are of the
SQL's ranking, replayed.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench import common
from bench.locomo_history import (
    BEGIN,
    CATEGORIES,
    DATA,
    Conversation,
    Loaded,
    Server,
    backdate,
    keep_conversation,
    load_conversations,
    new_agent,
    server,
)
from server.domain import bm25
from server.domain import history as rules
from server.domain.ranking import Mode

K = 10
# --quick: two conversations (one fold each way), the base and accepted grids cut short.
QUICK_CV_FILES = ("26.json", "30.json")


@dataclass(frozen=True)
class Constants:
    """One point of the grid: every constant of the history ranking."""

    pool: int = 40  # candidates each signal contributes (limit 10: max(4 * 10, pool))
    common_share: float | None = 0.05  # the common-word cut (None: every word finds)
    min_score: float = 0.3  # least cosine of a candidate found by meaning alone
    cosine_share: float = 0.6
    context_share: float = 0.3  # of the lead the part before has
    next_share: float = 0.0  # of the lead the part after has
    turn_share: float = 0.5
    date_share: float = 0.0  # what a part dated in a period the query names gains
    date_slack_days: float = 0.0  # a period reaches this much further after its end
    date_turns: bool = False  # the turns of date-matched parts join the candidates
    repeat_cost: float = 0.0  # the n-th part of a turn in the ranking loses n - 1 times this
    reach_share: float = 0.0  # of the lead the parts two before and two after have
    bm25_k1: float = bm25.BM25.k1  # BM25's saturation and length normalisation
    bm25_b: float = bm25.BM25.b  # (replayed: the server's are in the postings)

    def short(self) -> str:
        return " ".join(f"{k}={v if v is None else format(v, 'g')}" for k, v in vars(self).items())


# The constants before leave-one-out chose them (issue 17), each chosen on all five.
BASELINE = Constants()


def server_constants() -> Constants:
    """The server's own constants (server.domain.history), at limit 10."""
    c = rules.CONTEXT
    return Constants(
        pool=rules.PRESET.pool_size(K),
        common_share=rules.PRESET.seeking.common_share,
        min_score=rules.MIN_SCORE,
        cosine_share=c.cosine_share,
        context_share=c.context_share,
        next_share=c.next_share,
        turn_share=c.turn_share,
        date_share=c.date_share,
    )


SERVER = server_constants()

GRID: dict[str, tuple[float | None, ...]] = {
    "pool": (20, 40, 60),
    "common_share": (0.03, 0.05, 0.08),
    "cosine_share": (0.4, 0.5, 0.6, 0.7, 0.8),
    "context_share": (0.0, 0.15, 0.3, 0.45),
    "turn_share": (0.0, 0.25, 0.5, 0.75, 1.0),
}


def grid(axes: dict[str, tuple[float | None, ...]], base: Constants = BASELINE) -> list[Constants]:
    return common.grid(axes, base)


# -- the signals of one question, read once ---------------------------------------------


@dataclass
class Parts:
    """A kept conversation's parts in (turn, sequence, part) order."""

    keys: list[uuid.UUID]
    turn: np.ndarray
    created: np.ndarray  # epoch seconds
    dia: list[str]
    tiebreak: np.ndarray  # position in (created_at DESC, key ASC) order
    prev: np.ndarray  # index of the part before in its turn, -1 for none
    next: np.ndarray
    starts: np.ndarray  # index where each turn begins
    embedding: np.ndarray  # unit vectors, one row a part
    terms: list[dict[str, int]]  # each part's lexemes and how often it holds each

    @property
    def lengths(self) -> list[int]:
        return [sum(t.values()) for t in self.terms]

    @property
    def n(self) -> int:
        return len(self.keys)


@dataclass
class Signals:
    """One question over one conversation: what the SQL gives, and the replayed ranking."""

    conv: str
    category: int
    evidence: frozenset[str]
    query: str
    parts: Parts
    cosine: np.ndarray
    weights: dict[str, float]  # the query's terms and their idf among the session's parts
    dfs: dict[str, int]  # the query's terms: how many parts hold each
    web: np.ndarray | None = None  # web-search syntax: the parts the query matches
    periods: list[tuple[float, float]] = field(default_factory=list)  # epoch [start, end)
    vector: np.ndarray | None = None
    _lists: dict[tuple[Any, ...], np.ndarray] = field(default_factory=dict)
    _scored: dict[tuple[float, float], tuple[np.ndarray, dict[str, np.ndarray]]] = field(
        default_factory=dict
    )

    def keywords(self, c: Constants) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each part's BM25 score under ``c``'s constants (0: it holds no query term), and
        each term's postings best first (impact, then newer, then key)."""
        key = (c.bm25_k1, c.bm25_b)
        if key not in self._scored:
            p = bm25.Bm25(k1=c.bm25_k1, b=c.bm25_b, avgdl=bm25.BM25.avgdl)
            lengths = self.parts.lengths
            held = zip(self.parts.terms, lengths, strict=True)
            scored = [bm25.score(t, dl, self.weights, p) for t, dl in held]
            weight = np.array([0.0 if x is None else x for x in scored])
            postings = {}
            for term in self.weights:
                holding = [i for i, t in enumerate(self.parts.terms) if term in t]
                holding.sort(
                    key=lambda i, term=term: (
                        -bm25.impact(self.parts.terms[i][term], lengths[i], p),
                        self.parts.tiebreak[i],
                    )
                )
                postings[term] = np.array(holding, dtype=np.int64)
            self._scored[key] = (weight, postings)
        return self._scored[key]

    def vector_list(self, c: Constants, limit: int) -> np.ndarray:
        order = np.lexsort((self.parts.tiebreak, -self.cosine))[:limit]
        return order[self.cosine[order] >= c.min_score]

    def lexical_list(self, c: Constants, limit: int) -> np.ndarray:
        """The keyword candidates best first, as the SQL finds them with pool ``c.pool``
        (:func:`server.domain.bm25.reading`: every part holding a finding term when the
        terms hold at most the budget; else each finding term's first postings, the first
        ``2 * pool`` by the sum over what was read; for web-search syntax, every part the
        query matches), by score, newer, key; the first ``limit``."""
        key = (c.common_share, c.pool, c.bm25_k1, c.bm25_b)
        if key not in self._lists:
            weight, postings = self.keywords(c)
            if self.web is not None:
                found = self.web[weight[self.web] > 0]
            else:
                seeking = replace(rules.PRESET.seeking, common_share=c.common_share)
                finding = bm25.seekers(self.dfs, self.parts.n, seeking)
                reading = bm25.reading(self.dfs, self.parts.n, seeking, c.pool)
                if reading.whole:
                    lists = [postings[t] for t in finding]
                else:
                    lists = [postings[t][:depth] for t, depth in reading.depths.items()]
                found = np.unique(np.concatenate(lists)) if lists else np.array([], dtype=int)
                if not reading.whole:
                    read = self._partial(c, reading.depths)[found]
                    first = np.lexsort((self.parts.tiebreak[found], -read))[: 2 * c.pool]
                    found = found[first]
            order = np.lexsort((self.parts.tiebreak[found], -weight[found]))
            self._lists[key] = found[order][: c.pool]
        return self._lists[key][:limit]

    def _partial(self, c: Constants, depths: dict[str, int]) -> np.ndarray:
        """Each part's sum, in term order, of its terms' weights over the postings read."""
        p = bm25.Bm25(k1=c.bm25_k1, b=c.bm25_b, avgdl=bm25.BM25.avgdl)
        _, postings = self.keywords(c)
        read = {t: set(postings[t][:depth].tolist()) for t, depth in depths.items()}
        out = np.zeros(self.parts.n)
        for i, (terms, dl) in enumerate(zip(self.parts.terms, self.parts.lengths, strict=True)):
            total = 0.0
            for t in sorted(t for t in read if i in read[t]):
                total += self.weights[t] * bm25.impact(terms[t], dl, p)
            out[i] = total
        return out

    def candidates(self, c: Constants) -> np.ndarray:
        """Indices of the parts of the candidates' turns (and of date-matched parts)."""
        seeds = np.concatenate([self.vector_list(c, c.pool), self.lexical_list(c, c.pool)])
        mask = np.isin(self.parts.turn, np.unique(self.parts.turn[seeds]))
        if c.date_share > 0 and c.date_turns and self.periods:
            mask |= self.dated(c) > 0
        return np.flatnonzero(mask)

    def dated(self, c: Constants) -> np.ndarray:
        hit = np.zeros(self.parts.n)
        slack = c.date_slack_days * 86_400
        for start, end in self.periods:
            hit = np.maximum(
                hit, (self.parts.created >= start) & (self.parts.created < end + slack)
            )
        return hit

    def hybrid(self, c: Constants, limit: int = K) -> np.ndarray:
        return self.hybrid_many([c], limit)[0]

    def hybrid_many(self, configs: Sequence[Constants], limit: int = K) -> list[np.ndarray]:
        """The top ``limit`` of each config; all must share :meth:`candidates`."""
        sub = self.candidates(configs[0])
        if not len(sub):
            return [sub for _ in configs]
        p = self.parts
        prev, nxt = p.prev[sub], p.next[sub]

        prev2 = np.where(prev >= 0, p.prev[np.maximum(prev, 0)], -1)
        next2 = np.where(nxt >= 0, p.next[np.maximum(nxt, 0)], -1)

        def lead(x: np.ndarray, other: np.ndarray) -> np.ndarray:
            return np.where(other >= 0, np.maximum(x[other] - x[sub], 0.0), 0.0)

        def near(x: np.ndarray, context: float, after: float, reach: float) -> np.ndarray:
            out = x[sub] + context * lead(x, prev)
            if after:
                out = out + after * lead(x, nxt)
            if reach:
                out = out + reach * np.maximum(lead(x, prev2), lead(x, next2))
            return out

        scaled: dict[tuple[float, float, float], tuple[np.ndarray, np.ndarray]] = {}
        for c in configs:
            key = (c.context_share, c.next_share, c.reach_share)
            if key not in scaled:
                cs, ls = near(self.cosine, *key), near(self.keywords(configs[0])[0], *key)
                low, spread, top = cs.min(), cs.max() - cs.min(), ls.max()
                scaled[key] = (
                    (cs - low) / spread if spread else np.zeros(len(sub)),
                    ls / top if top else np.zeros(len(sub)),
                )
        pick = list(scaled)
        at = np.array([pick.index((c.context_share, c.next_share, c.reach_share)) for c in configs])
        ncs = np.stack([scaled[k][0] for k in pick])[at]
        nls = np.stack([scaled[k][1] for k in pick])[at]
        share = np.array([c.cosine_share for c in configs])[:, None]
        blend = share * ncs + (1.0 - share) * nls
        turns = p.turn[sub]
        starts = np.flatnonzero(np.r_[True, turns[1:] != turns[:-1]])
        best = np.repeat(
            np.maximum.reduceat(blend, starts, axis=1), np.diff(np.r_[starts, len(sub)]), axis=1
        )
        score = blend + np.array([c.turn_share for c in configs])[:, None] * best
        dates = np.array([c.date_share for c in configs])
        if dates.any():
            score = score + dates[:, None] * self.dated(configs[0])[sub][None, :]
        by_tie = np.argsort(p.tiebreak[sub])
        score, turns = score[:, by_tie], turns[by_tie]
        order = np.argsort(-score, axis=1, kind="stable")
        out = []
        for row, c in enumerate(configs):
            o = order[row]
            if c.repeat_cost:
                t = turns[o]
                grouped = np.argsort(t, kind="stable")
                tg = t[grouped]
                first = np.r_[0, np.flatnonzero(tg[1:] != tg[:-1]) + 1]
                before = np.empty(len(o), dtype=np.int64)
                before[grouped] = np.arange(len(o)) - np.repeat(
                    first, np.diff(np.r_[first, len(o)])
                )
                adjusted = score[row, o] - c.repeat_cost * before
                o = o[np.argsort(-adjusted, kind="stable")]
            out.append(sub[by_tie][o[:limit]])
        return out

    def recall(self, found: np.ndarray) -> float:
        got = {self.parts.dia[i] for i in found[:K]}
        return len(self.evidence & got) / len(self.evidence)


async def _parts(srv: Server, loaded: Loaded, reader: Any) -> Parts:
    from sqlalchemy import select, text
    from sqlmodel import col

    from server.models import HistoryEvent, HistoryPart
    from server.storage.history_gate import history_condition

    async with srv.database.session() as db:
        rows = (
            await db.execute(
                select(
                    HistoryPart.id,
                    HistoryPart.turn_number,
                    HistoryEvent.sequence,
                    HistoryPart.part,
                    HistoryPart.created_at,
                    HistoryPart.embedding,
                )
                .join(HistoryEvent, col(HistoryEvent.id) == col(HistoryPart.event_id))
                .where(history_condition(reader))
                .order_by(HistoryPart.turn_number, HistoryEvent.sequence, HistoryPart.part)
            )
        ).all()
        lexemes = (
            await db.execute(
                text(
                    "SELECT p.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)"
                    " FROM history_parts p, unnest(p.search_tsv) u"
                    " WHERE p.session_id = :s AND p.turn_number < :t"
                ),
                {"s": loaded.session_id, "t": reader.turn_number},
            )
        ).all()
    held: dict[uuid.UUID, dict[str, int]] = {}
    for part, lexeme, tf in lexemes:
        held.setdefault(part, {})[lexeme] = tf
    n = len(rows)
    turn = np.array([r[1] for r in rows])
    created = np.array([r[4].timestamp() for r in rows])
    by_tie = sorted(range(n), key=lambda i: (-created[i], rows[i][0].bytes))
    tiebreak = np.empty(n, dtype=np.int64)
    tiebreak[by_tie] = np.arange(n)
    same_prev = np.r_[False, turn[1:] == turn[:-1]]
    same_next = np.r_[turn[1:] == turn[:-1], False]
    idx = np.arange(n)
    return Parts(
        keys=[r[0] for r in rows],
        turn=turn,
        created=created,
        dia=[loaded.dia_of.get((r[1], r[2]), "?") for r in rows],
        tiebreak=tiebreak,
        prev=np.where(same_prev, idx - 1, -1),
        next=np.where(same_next, idx + 1, -1),
        starts=np.flatnonzero(~same_prev),
        embedding=_unit(np.array([np.asarray(r[5], dtype=np.float64) for r in rows])),
        terms=[held.get(r[0], {}) for r in rows],
    )


def _unit(m: np.ndarray) -> np.ndarray:
    return np.asarray(m / np.linalg.norm(m, axis=-1, keepdims=True))


async def _signals(srv: Server, reader: Any, parts: Parts, conv: Conversation) -> list[Signals]:
    from sqlalchemy import bindparam, literal_column, select

    from server.domain import dates
    from server.models import HistoryPart
    from server.storage.bm25 import query_terms
    from server.storage.history_gate import history_condition
    from server.storage.search_terms import tsquery, uses_web_syntax

    position = {k: i for i, k in enumerate(parts.keys)}
    out = []
    async with srv.database.session() as db:
        for q in conv.questions:
            vector = (await srv.embedder.embed_one(q.text))[0]
            qv = bindparam("q", list(vector), type_=HistoryPart.embedding.type)
            distance = HistoryPart.embedding.op("<=>")(qv)
            rows = (
                await db.execute(
                    select(HistoryPart.id, literal_column("1") - distance).where(
                        history_condition(reader)
                    )
                )
            ).all()
            cosine = np.zeros(parts.n)
            for r in rows:
                cosine[position[r[0]]] = r[1]
            terms = await query_terms(db, q.text)
            dfs = {t: sum(t in p for p in parts.terms) for t in terms}
            weights = {t: bm25.idf(df, parts.n) for t, df in dfs.items()}
            web = None
            if uses_web_syntax(q.text):
                matched = (
                    await db.execute(
                        select(HistoryPart.id).where(
                            history_condition(reader),
                            HistoryPart.search_tsv.op("@@")(tsquery(q.text)),
                        )
                    )
                ).all()
                web = np.array(sorted(position[r[0]] for r in matched), dtype=np.int64)
            periods = [
                (a.timestamp(), b.timestamp()) for a, b in dates.query_periods(q.text, now=NOW)
            ]
            out.append(
                Signals(
                    conv.name,
                    q.category,
                    q.evidence,
                    q.text,
                    parts,
                    cosine,
                    weights,
                    dfs,
                    web,
                    periods,
                    np.asarray(vector, dtype=np.float64),
                )
            )
    return out


# The bench's asking turn is now; relative times in LoCoMo's questions are the speakers'.
NOW = datetime.now(UTC)


@dataclass
class Kept:
    conv: Conversation
    loaded: Loaded
    reader: Any
    turn_id: str
    signals: list[Signals]


async def keep_all(srv: Server, conversations: Sequence[Conversation]) -> list[Kept]:
    from server.domain.history import HistoryReader

    kept = []
    for conv in conversations:
        loaded = await keep_conversation(srv, conv, await new_agent(srv))
        await backdate(srv, conv, loaded)
        begun = (await srv.ok(BEGIN, s=str(loaded.session_id)))["beginTurn"]["turn"]
        reader = HistoryReader(
            agent_id=loaded.agent_id,
            session_id=loaded.session_id,
            turn_number=begun["number"],
            preview=False,
        )
        parts = await _parts(srv, loaded, reader)
        signals = await _signals(srv, reader, parts, conv)
        kept.append(Kept(conv, loaded, reader, begun["id"], signals))
        print(f"kept {conv.name}: {parts.n} parts, {len(signals)} questions", flush=True)
    return kept


async def check_replay(srv: Server, kept: Sequence[Kept], every: int = 7) -> tuple[int, int]:
    """The replay against the server's own SQL (``rank_parts``), every ``every``-th
    question, in the three modes: how many agreed, of how many."""
    from server.services.history_ranking import rank_parts

    agree = total = 0
    for k in kept:
        for s in k.signals[::every]:
            vector = (await srv.embedder.embed_one(s.query))[0]
            async with srv.database.session() as db:
                for mode in MODES:
                    hits = await rank_parts(
                        db,
                        reader=k.reader,
                        query=s.query,
                        vector=None if mode == "lexical" else vector,
                        limit=K,
                        mode=mode,
                    )
                    want = [h.key for h in hits]
                    got = [s.parts.keys[i] for i in replay(s, SERVER, mode)]
                    total += 1
                    if got == want:
                        agree += 1
                    else:
                        print(f"  replay differs ({mode}) on {s.query!r}", flush=True)
    return agree, total


MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")


def replay(s: Signals, c: Constants, mode: str) -> np.ndarray:
    if mode == "vector":
        return s.vector_list(c, K)
    if mode == "lexical":
        return s.lexical_list(c, K)
    return s.hybrid(c)


# -- cross-validation -------------------------------------------------------------------


def _candidate_key(c: Constants) -> tuple[Any, ...]:
    return (
        c.pool,
        c.common_share,
        c.min_score,
        c.date_share > 0 and c.date_turns,
        c.date_slack_days,
        c.bm25_k1,
        c.bm25_b,
    )


def scores(signals: Sequence[Signals], configs: Sequence[Constants]) -> np.ndarray:
    """recall@10 of each config (rows) on each question (columns)."""
    out = np.zeros((len(configs), len(signals)))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(_candidate_key(c), []).append(i)
    for rows in groups.values():
        chosen = [configs[i] for i in rows]
        for j, s in enumerate(signals):
            for i, found in zip(rows, s.hybrid_many(chosen), strict=True):
                out[i, j] = s.recall(found)
    return out


@dataclass
class Fold:
    held_out: str
    chosen: Constants
    train: float
    hybrid: float
    vector: float
    lexical: float
    baseline: float


def cross_validate(
    signals: Sequence[Signals], configs: Sequence[Constants], table: np.ndarray | None = None
) -> list[Fold]:
    table = scores(signals, configs) if table is None else table
    convs = sorted({s.conv for s in signals})
    which = np.array([s.conv for s in signals])
    base = scores(signals, [BASELINE])[0]
    folds = []
    for held in convs:
        train, test = which != held, which == held
        best = int(np.argmax(table[:, train].mean(axis=1)))
        chosen = configs[best]
        held_signals = [s for s in signals if s.conv == held]
        folds.append(
            Fold(
                held,
                chosen,
                float(table[best, train].mean()),
                float(table[best, test].mean()),
                statistics.fmean(s.recall(s.vector_list(chosen, K)) for s in held_signals),
                statistics.fmean(s.recall(s.lexical_list(chosen, K)) for s in held_signals),
                float(base[test].mean()),
            )
        )
    return folds


def by_category(signals: Sequence[Signals], folds: Sequence[Fold]) -> dict[str, dict[str, float]]:
    """Per category, the held-out figures (each question ranked by its fold's constants)."""
    chosen = {f.held_out: f.chosen for f in folds}
    rows: dict[str, dict[str, list[float]]] = {}
    for s in signals:
        c = chosen[s.conv]
        row = rows.setdefault(
            CATEGORIES[s.category], {m: [] for m in ("hybrid", "vector", "lexical")}
        )
        for mode in row:
            row[mode].append(s.recall(replay(s, c, mode)))
    return {
        cat: {m: round(statistics.fmean(v), 4) for m, v in modes.items()}
        | {"questions": len(modes["hybrid"])}
        for cat, modes in rows.items()
    }


def report(signals: Sequence[Signals], folds: Sequence[Fold], title: str) -> dict[str, Any]:
    common.table(
        f"{title}: leave-one-conversation-out recall@10",
        ["held out", "train", "hybrid", "vector", "lexical", "baseline", "chosen"],
        [
            [
                f.held_out,
                f"{f.train:.3f}",
                f"{f.hybrid:.3f}",
                f"{f.vector:.3f}",
                f"{f.lexical:.3f}",
                f"{f.baseline:.3f}",
                f.chosen.short(),
            ]
            for f in folds
        ],
    )
    cats = by_category(signals, folds)
    common.table(
        f"{title}: held-out recall@10 by category",
        ["category", "questions", "hybrid", "vector", "lexical"],
        [[c, v["questions"], v["hybrid"], v["vector"], v["lexical"]] for c, v in cats.items()],
    )
    mean = statistics.fmean(f.hybrid for f in folds)
    worst = min(f.hybrid for f in folds)
    above = all(f.hybrid >= max(f.vector, f.lexical) for f in folds)
    print(
        f"{title}: cv mean {mean:.4f}, worst fold {worst:.4f}, hybrid >= max(vector, "
        f"lexical) on every fold: {above}",
        flush=True,
    )
    return {
        "cv_mean": round(mean, 4),
        "cv_worst": round(worst, 4),
        "folds": {f.held_out: round(f.hybrid, 4) for f in folds},
        "hybrid_ge_single_every_fold": above,
        "by_category": cats,
    }


# The base grid each idea is measured over, with the idea's own axis added.
SMALL_GRID: dict[str, tuple[float | None, ...]] = {
    "pool": (20, 40),
    "common_share": (0.03, 0.05),
    "cosine_share": (0.5, 0.6, 0.7),
    "context_share": (0.15, 0.3, 0.45),
    "turn_share": (0.25, 0.5, 0.75),
}


def experiments(
    base: dict[str, tuple[float | None, ...]] = SMALL_GRID,
) -> Iterator[tuple[str, dict[str, tuple[float | None, ...]]]]:
    """Each idea measured on its own: the base grid, then the base grid with one more axis."""
    yield "base", base
    yield "next part", base | {"next_share": (0.0, 0.1, 0.2, 0.3)}
    yield "turn diversity", base | {"repeat_cost": (0.0, 0.02, 0.05, 0.1)}
    yield "dates", base | {"date_share": (0.0, 0.1, 0.2, 0.4), "date_slack_days": (0, 7)}
    yield (
        "dates, their turns",
        base
        | {
            "date_share": (0.0, 0.1, 0.2, 0.4),
            "date_slack_days": (0, 7),
            "date_turns": (1,),
        },
    )
    yield (
        "parts two away",
        base | {"next_share": (0.15, 0.3), "date_share": (0.4,), "reach_share": (0.0, 0.1, 0.2)},
    )
    # BM25's saturation and length normalisation, over the base grid with the landed ideas
    yield (
        BM25_CONSTANTS,
        base
        | {
            "next_share": (0.3,),
            "date_share": (0.4,),
            "bm25_b": (0.0, 0.25, 0.5, 0.75),
            "bm25_k1": (0.9, 1.2, 2.0, 3.0, 5.0),
        },
    )
    yield ACCEPTED, FINAL_GRID
    # BM25 weighs a common word little: does it still need to find no candidates?
    yield NO_CUT, FINAL_GRID | {"common_share": (None,)}


NO_CUT = "every word finds candidates"
BM25_CONSTANTS = "BM25 constants"
# What landed (next part, dates), over a grid whose every chosen value is inside it.
ACCEPTED = "next part + dates"
FINAL_GRID: dict[str, tuple[float | None, ...]] = {
    "pool": (15, 20, 40, 60),
    "common_share": (0.03, 0.05, 0.08),
    "cosine_share": (0.4, 0.5, 0.6, 0.7),
    "bm25_k1": (2.0, 3.0, 5.0),
    "context_share": (0.15, 0.3, 0.45),
    "turn_share": (0.5, 0.75, 1.0),
    "next_share": (0.15, 0.3, 0.45),
    "date_share": (0.2, 0.4, 0.7),
}


# The constants whose sensitivity is reported (docs/ranking.md): the nested mean with each
# held at half and one and a half times the server's value, while the three shares that
# move the ranking most are chosen per fold among the server's value and its neighbours in
# FINAL_GRID (BM25's b is 0: its row names 0.25 and 0.75 instead).
SENSITIVE = (
    "pool",
    "common_share",
    "cosine_share",
    "context_share",
    "next_share",
    "turn_share",
    "date_share",
    "bm25_k1",
    "bm25_b",
)
RECHOSEN = ("cosine_share", "context_share", "turn_share")


def _neighbours(name: str) -> tuple[float | None, ...]:
    values = sorted(v for v in FINAL_GRID[name] if v is not None)
    i = values.index(getattr(SERVER, name))
    return tuple(values[max(i - 1, 0) : i + 2])


def sensitivity(signals: Sequence[Signals]) -> dict[str, dict[str, float]]:
    out = {}
    for name in SENSITIVE:
        value = getattr(SERVER, name)
        held = (0.25, value, 0.75) if name == "bm25_b" else (value * 0.5, value, value * 1.5)
        row = {}
        for at in held:
            at = int(at) if isinstance(value, int) else round(at, 4)
            axes = {k: _neighbours(k) for k in RECHOSEN if k != name}
            configs = grid(axes, replace(SERVER, **{name: at}))
            folds = cross_validate(signals, configs)
            row[f"{at:g}"] = round(statistics.fmean(f.hybrid for f in folds), 4)
        out[name] = row
        print(f"sensitivity {name}: {row}", flush=True)
    return out


async def _run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    conversations = load_conversations(data, QUICK_CV_FILES if quick else None)
    started = time.perf_counter()
    async with server("bench_locomo_cv") as srv:
        kept = await keep_all(srv, conversations)
        agree, total = await check_replay(srv, kept)
    print(
        f"replay agrees with the SQL on {agree} of {total} rankings; kept and read in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    signals = [s for k in kept for s in k.signals]
    figures: dict[str, Any] = {"replay_agrees": f"{agree}/{total}"}
    chosen_experiments = [
        (title, {k: v[:2] for k, v in axes.items()} if quick else axes)
        for title, axes in experiments()
        if not quick or title in ("base", ACCEPTED, NO_CUT)
    ]
    for title, axes in chosen_experiments:
        t = time.perf_counter()
        configs = grid(axes)
        table = scores(signals, configs)
        folds = cross_validate(signals, configs, table)
        figures[title] = report(signals, folds, title)
        print(f"{title}: {len(configs)} constant sets in {time.perf_counter() - t:.0f} s")
        if title == ACCEPTED:
            chosen = configs[int(np.argmax(table.mean(axis=1)))]
            print(
                f"chosen on every conversation: {chosen.short()} (recall@10 "
                f"{table.mean(axis=1).max():.4f}); the server's: {SERVER.short()}"
            )
            figures["chosen_on_all"] = chosen.short()
    if not quick:
        figures["sensitivity"] = sensitivity(signals)
    return figures


def run(quick: bool, data: Path = DATA) -> dict[str, Any]:
    return dict(common.run_async(_run(quick, data)))
