"""Search ranking (R41, R62): the fusion presets and the reference ranking.

Memory search and history search rank by the same signals: meaning (pgvector
cosine similarity between the query's embedding and the record's), keywords
(PostgreSQL full-text) and recency, and newer wins ties. The weights and
constants live in named presets (:class:`FusionPreset`; for history in
context, :class:`ContextPreset` over one), never in a resolver. Storage
generates the SQL from a preset; :func:`rank` and :func:`rank_in_context` are
the pure references that SQL must reproduce, and the tests pin them down.

The formula, for a query with ``mode``, ``min_score``, ``limit``, ``now`` and
preset ``p``. A candidate is one memory version or one history-event part.

Signals::

    cosine(c)  = 1 - (embedding <=> :query_embedding)        -- in [-1, 1]
    lexical(c) = BM25(c, :query)   -- server.domain.bm25: a match only if
                                   -- tsv @@ :tsquery and c holds a query term

A text that holds no term of the query is not a keyword match: a query such as
``-word`` "matches" every text without the word, and such texts share no word
with the query (and have no BM25 score).

Candidate lists, with ``P = p.pool_size(limit) = max(limit * p.pool_factor,
p.candidate_pool)`` and ``vrank``/``lrank`` 1-based positions::

    V: candidates with cosine >= :min_score, ordered by cosine DESC,
       created_at DESC, key ASC; the first P.    vrank = position in V
    L: keyword matches, ordered by lexical DESC, created_at DESC, key ASC;
       the first P.                              lrank = position in L

(Taking the top P by cosine and then dropping those under ``min_score`` gives
the same V: the threshold only trims the tail. Storage reads L from the query
terms' postings, :mod:`server.storage.bm25`: this very L whenever the terms hold
no more postings than the preset's budget in the reader's reach (every match is
read and scored); beyond it, each term's best share of the budget stands for
the rest, and a match outside every share is not a candidate.)

Modes:

- ``vector``: the candidates in V; ``score = cosine``.
- ``lexical``: the candidates in L; ``score = lexical``.
- ``hybrid``: the candidates in V or L (so a candidate found only by meaning
  needs ``cosine >= min_score``; a keyword match is found whatever its cosine,
  but its meaning adds nothing below ``min_score``)::

      rrf(r, w)  = w / (p.rrf_k + r)
      recency(c) = 0.5 ^ (greatest(:now - created_at, 0) in days
                          / p.recency_half_life_days)
      score      = [c in V] rrf(vrank, p.vector_weight)
                 + [c in L] rrf(lrank, p.lexical_weight)
                 + p.recency_weight * recency(c) / (p.rrf_k + 1)

  Ages are ``extract(epoch FROM :now - created_at) / 86400``, clamped at 0 so a
  record stamped in the future counts as new, not newer than new. The recency
  term is at most ``recency_weight`` times a first-place signal term, so under
  the default preset it only reorders near-ties of the fused ranks.

Every mode orders by ``score DESC, created_at DESC, key ASC`` and returns the
first ``limit``. ``key ASC`` is code-point order (a ``uuid`` column, or
``COLLATE "C"`` on text). ``:now`` is one bound value per search, not
``clock_timestamp()``.

History in context (R62, :func:`rank_in_context`, preset :class:`ContextPreset`
``c`` over fusion preset ``p``). A hybrid history search takes its candidates
as ``hybrid`` above does (V and L), then ranks every part of the candidates'
turns, so an answer is found through the question before it::

    near(x)(t)  = x(t) + c.context_share * greatest(x(prev) - x(t), 0)
                       + c.next_share * greatest(x(next) - x(t), 0)
                  -- prev, next: the parts before and after t in its turn (event
                  -- sequence, part); a missing one adds 0
    cs = near(cosine), ls = near(keyword weight)
                  -- keyword weight: the part's BM25 score (0: it holds no
                  -- word of the query)
    blend(t)    = c.cosine_share * (cs(t) - min cs) / (max cs - min cs)
                + (1 - c.cosine_share) * ls(t) / max ls      -- a 0/0 term is 0
    score(t)    = blend(t) + c.turn_share * max(blend in t's turn)
                + c.date_share * [t's created_at in a period the query names]
                + c.recency_weight * recency(t)

The periods are half-open ``[start, end)`` (:func:`server.domain.dates.query_periods`,
read against ``:now``); a query naming none adds nothing.

``c.recency_weight`` is ``p.recency_weight`` of what a top part gains from its
stronger signal, so recency again only settles near-ties; the order is the one
above (score, newer, key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from server.domain.ranking_presets import (
    DEFAULT_PRESET,
    HISTORY_CONTEXT_PRESET,
    ContextPreset,
    FusionPreset,
)

Mode = Literal["hybrid", "lexical", "vector"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class ContextPart:
    """A part of a candidate turn with its signals (:func:`rank_in_context`)."""

    key: str
    turn: int
    sequence: int
    part: int
    created_at: datetime
    cosine: float
    keywords: float  # the keyword weight; 0 when the part holds no query word


@dataclass(frozen=True, slots=True)
class Candidate:
    """One record version or history part with the signals the query found for it.

    ``cosine`` is set when it was in the vector candidate list, ``lexical`` when it
    matched the full-text query (its BM25 score, :mod:`server.domain.bm25`).
    """

    key: str
    created_at: datetime
    cosine: float | None = None
    lexical: float | None = None

    def __post_init__(self) -> None:
        if self.created_at.utcoffset() is None:
            raise ValueError(f"created_at of {self.key!r} must be timezone-aware")


_Scored = tuple[float, Candidate]


@dataclass(frozen=True, slots=True)
class Ranked:
    """A result: ``score`` is the cosine, the BM25 score or the fused score, by mode."""

    key: str
    score: float
    cosine: float | None
    lexical: float | None


def rrf_term(rank: int, weight: float, k: int) -> float:
    """Reciprocal rank fusion term ``weight / (k + rank)`` of a 1-based rank."""
    if rank < 1:
        raise ValueError("ranks are 1-based")
    return weight / (k + rank)


def recency(created_at: datetime, now: datetime, preset: FusionPreset) -> float:
    """``0.5 ** (age_days / half_life)`` in (0, 1]; a future timestamp counts as age 0."""
    age_days = max((now - created_at).total_seconds(), 0.0) / _SECONDS_PER_DAY
    return float(0.5 ** (age_days / preset.recency_half_life_days))


def rank(
    candidates: Iterable[Candidate],
    *,
    mode: Mode,
    min_score: float,
    limit: int,
    now: datetime,
    preset: FusionPreset = DEFAULT_PRESET,
) -> list[Ranked]:
    """Rank ``candidates`` as the module docstring states; at most ``limit`` results."""
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    pool = list(candidates)
    if len({c.key for c in pool}) != len(pool):
        raise ValueError("candidate keys must be unique")

    size = preset.pool_size(limit)
    vector = [(v, c) for v, c in _signal_list(pool, _cosine, size) if v >= min_score]
    lexical = _signal_list(pool, _lexical_match, size)

    if mode == "vector":
        scored = vector
    elif mode == "lexical":
        scored = lexical
    elif mode == "hybrid":
        scored = _fuse(vector, lexical, now=now, preset=preset)
    else:
        raise ValueError(f"unknown mode {mode!r}")

    scored.sort(key=_order)
    return [Ranked(c.key, score, c.cosine, c.lexical) for score, c in scored[:limit]]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a result ranked where it did: each term of its score (R41).

    In ``hybrid`` mode the score is ``meaning_term + keyword_term + recency_term``: a
    signal's term is its reciprocal-rank-fusion term, from the result's position in that
    signal's candidate list (``meaning_rank``, ``keyword_rank``; None, with a term of 0,
    when it was not a candidate by that signal), and the recency term comes from its age.
    In ``vector`` mode the score is the cosine (the meaning term); in ``lexical`` mode the
    full-text rank (the keyword term); neither has a recency term."""

    mode: Mode
    score: float
    meaning_rank: int | None
    meaning_term: float
    keyword_rank: int | None
    keyword_term: float
    age_days: float
    recency_term: float


def explain(
    *,
    mode: Mode,
    score: float,
    created_at: datetime,
    now: datetime,
    meaning_rank: int | None,
    keyword_rank: int | None,
    preset: FusionPreset = DEFAULT_PRESET,
) -> Explanation:
    """The terms of a result's ``score`` as :func:`rank` sums them, given its 1-based
    positions in the candidate lists by meaning and by keywords (None: not in one)."""
    age = max((now - created_at).total_seconds(), 0.0) / _SECONDS_PER_DAY
    if mode != "hybrid":
        by_meaning = mode == "vector"
        return Explanation(
            mode=mode,
            score=score,
            meaning_rank=meaning_rank if by_meaning else None,
            meaning_term=score if by_meaning else 0.0,
            keyword_rank=None if by_meaning else keyword_rank,
            keyword_term=0.0 if by_meaning else score,
            age_days=age,
            recency_term=0.0,
        )
    k = preset.rrf_k
    meaning = 0.0 if meaning_rank is None else rrf_term(meaning_rank, preset.vector_weight, k)
    keywords = 0.0 if keyword_rank is None else rrf_term(keyword_rank, preset.lexical_weight, k)
    fresh = preset.recency_weight * recency(created_at, now, preset) / (k + 1)
    return Explanation(
        mode=mode,
        score=score,
        meaning_rank=meaning_rank,
        meaning_term=meaning,
        keyword_rank=keyword_rank,
        keyword_term=keywords,
        age_days=age,
        recency_term=fresh,
    )


def _fuse(
    vector: list[_Scored], lexical: list[_Scored], *, now: datetime, preset: FusionPreset
) -> list[_Scored]:
    vrank = {c.key: i for i, (_, c) in enumerate(vector, start=1)}
    lrank = {c.key: i for i, (_, c) in enumerate(lexical, start=1)}
    found = {c.key: c for _, c in (*vector, *lexical)}
    scored = []
    for key, c in found.items():
        # Summed in the documented order, so equal inputs give bit-equal scores.
        score = 0.0
        if key in vrank:
            score += rrf_term(vrank[key], preset.vector_weight, preset.rrf_k)
        if key in lrank:
            score += rrf_term(lrank[key], preset.lexical_weight, preset.rrf_k)
        score += preset.recency_weight * recency(c.created_at, now, preset) / (preset.rrf_k + 1)
        scored.append((score, c))
    return scored


def _signal_list(
    pool: list[Candidate], signal: Callable[[Candidate], float | None], size: int
) -> list[_Scored]:
    """The candidates that have ``signal``, with its value, best first, cut to ``size``."""
    having = [(value, c) for c in pool if (value := signal(c)) is not None]
    having.sort(key=_order)
    return having[:size]


def _order(scored: _Scored) -> tuple[float, timedelta, str]:
    """Sort key: value desc, then newer first, then key asc."""
    value, c = scored
    return (-value, _EPOCH - c.created_at, c.key)


def _cosine(c: Candidate) -> float | None:
    return c.cosine


def _lexical_match(c: Candidate) -> float | None:
    return c.lexical if c.lexical is not None and c.lexical > 0 else None


def rank_in_context(
    parts: Iterable[ContextPart],
    *,
    now: datetime,
    limit: int,
    preset: ContextPreset = HISTORY_CONTEXT_PRESET,
    periods: Sequence[tuple[datetime, datetime]] = (),
) -> list[Ranked]:
    """Rank the parts of the candidates' turns as the module docstring states (history
    in context); at most ``limit`` results, ``lexical`` set for a part holding a word.
    ``periods``: those the query names (:func:`server.domain.dates.query_periods`)."""
    if now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    pool = sorted(parts, key=lambda t: (t.turn, t.sequence, t.part))
    if not pool:
        return []
    cs: dict[str, float] = {}
    ls: dict[str, float] = {}
    for before, t, after in zip([None, *pool[:-1]], pool, [*pool[1:], None], strict=True):
        prev = before if before is not None and before.turn == t.turn else None
        nxt = after if after is not None and after.turn == t.turn else None
        cs[t.key] = _near(t.cosine, prev, nxt, lambda p: p.cosine, preset)
        ls[t.key] = _near(t.keywords, prev, nxt, lambda p: p.keywords, preset)
    low, spread, top = min(cs.values()), max(cs.values()) - min(cs.values()), max(ls.values())
    blend = {
        t.key: preset.cosine_share * ((cs[t.key] - low) / spread if spread else 0.0)
        + (1.0 - preset.cosine_share) * (ls[t.key] / top if top else 0.0)
        for t in pool
    }
    best: dict[int, float] = {}
    for t in pool:
        best[t.turn] = max(best.get(t.turn, blend[t.key]), blend[t.key])
    scored = [
        (
            blend[t.key]
            + preset.turn_share * best[t.turn]
            + preset.date_share * any(a <= t.created_at < b for a, b in periods)
            + preset.recency_weight * recency(t.created_at, now, preset.fusion),
            t,
        )
        for t in pool
    ]
    scored.sort(key=lambda st: (-st[0], _EPOCH - st[1].created_at, st[1].key))
    return [
        Ranked(t.key, score, t.cosine, t.keywords if t.keywords > 0 else None)
        for score, t in scored[:limit]
    ]


def _near(
    value: float,
    before: ContextPart | None,
    after: ContextPart | None,
    signal: Callable[[ContextPart], float],
    preset: ContextPreset,
) -> float:
    near = value + preset.context_share * max(signal(before) - value if before else 0, 0)
    return near + preset.next_share * max(signal(after) - value if after else 0, 0)
