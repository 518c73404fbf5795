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
p.candidate_pool)``::

    V: candidates with cosine >= :min_score, ordered by cosine DESC,
       created_at DESC, key ASC; the first P.
    L: keyword matches, ordered by lexical DESC, created_at DESC, key ASC;
       the first P.

(Taking the top P by cosine and then dropping those under ``min_score`` gives
the same V: the threshold only trims the tail. Storage reads L from the query
terms' postings, :mod:`server.storage.bm25`: this very L whenever the terms hold
no more postings than the preset's budget in the reader's reach (every match is
read and scored); beyond it, each term's best share of the budget stands for
the rest, and a match outside every share is not a candidate.)

Modes:

- ``vector``: the candidates in V; ``score = cosine``.
- ``lexical``: the candidates in L; ``score = lexical``.
- ``hybrid``: the candidates in V or L, ``C = V ∪ L`` (so a candidate found only
  by meaning needs ``cosine >= min_score``; a keyword match is found whatever its
  cosine). Each signal is scaled over C and the two are blended::

      meaning(c)  = p.cosine_share * (cosine(c) - min_C cosine)
                                   / (max_C cosine - min_C cosine)
      keywords(c) = p.keyword_share * bm25(c) / max_C bm25
                    -- bm25(c): its BM25 score, 0 when it holds no query term
                    -- (or does not match the query's web-search syntax)
      recency(c)  = 0.5 ^ (greatest(:now - created_at, 0) in days
                           / p.recency_half_life_days)
      score       = meaning(c) + keywords(c) + p.recency_gain * recency(c)

  A 0/0 term is 0 (every candidate as close, or none holding a query word). Every
  candidate's cosine counts, a keyword match's too, wherever it stands by meaning:
  the blend reads how far apart the candidates are by each signal, not only their
  order, so a weak signal whose candidates are all about as close moves the order
  little, and a strong keyword match is not pulled out of the top by a meaning list
  that is barely better than chance. ``p.keyword_share`` is ``1 - p.cosine_share``;
  ``p.recency_gain`` is ``p.recency_weight`` times the larger share: what a brand-new
  record gains, as a share of what the top candidate gains from its stronger signal.

  Ages are ``extract(epoch FROM :now - created_at) / 86400``, clamped at 0 so a
  record stamped in the future counts as new, not newer than new.

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
stronger signal, as in memory search; the order is the one above (score, newer, key).
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

    ``cosine`` is its cosine to the query (None: the search had no vector), ``lexical``
    its BM25 score (:mod:`server.domain.bm25`) when it matched the full-text query.
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
    """A result: ``score`` is the cosine, the BM25 score or the fused score, by mode;
    ``terms``: a fused score's meaning and keyword terms (:func:`blend`)."""

    key: str
    score: float
    cosine: float | None
    lexical: float | None
    terms: tuple[float, float] | None = None


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

    terms: dict[str, tuple[float, float]] = {}
    if mode == "vector":
        scored = vector
    elif mode == "lexical":
        scored = lexical
    elif mode == "hybrid":
        found = list({c.key: c for _, c in (*vector, *lexical)}.values())
        terms = blend(found, preset)
        # Summed in the documented order, so equal inputs give bit-equal scores.
        scored = [
            (
                (terms[c.key][0] + terms[c.key][1])
                + preset.recency_gain * recency(c.created_at, now, preset),
                c,
            )
            for c in found
        ]
    else:
        raise ValueError(f"unknown mode {mode!r}")

    scored.sort(key=_order)
    return [
        Ranked(c.key, score, c.cosine, c.lexical, terms.get(c.key)) for score, c in scored[:limit]
    ]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a result ranked where it did: each term of its score (R41).

    In ``hybrid`` mode the score is ``meaning_term + keyword_term + recency_term``
    (:func:`rank`'s blend); ``meaning_rank`` and ``keyword_rank`` are the result's
    positions in the candidate lists by meaning and by keywords (None when it was not
    in one: it was found by the other). In ``vector`` mode the score is the cosine (the
    meaning term); in ``lexical`` mode the BM25 score (the keyword term); neither has a
    recency term."""

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
    terms: tuple[float, float] | None,
    created_at: datetime,
    now: datetime,
    meaning_rank: int | None,
    keyword_rank: int | None,
    preset: FusionPreset = DEFAULT_PRESET,
) -> Explanation:
    """The terms of a result's ``score`` as :func:`rank` sums them: in ``hybrid`` mode
    ``terms`` are its meaning and keyword terms (:func:`blend`, as the search computed
    them), and its 1-based positions in the candidate lists by meaning and by keywords
    (None: not in one)."""
    age = max((now - created_at).total_seconds(), 0.0) / _SECONDS_PER_DAY
    if mode != "hybrid" or terms is None:
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
    return Explanation(
        mode=mode,
        score=score,
        meaning_rank=meaning_rank,
        meaning_term=terms[0],
        keyword_rank=keyword_rank,
        keyword_term=terms[1],
        age_days=age,
        recency_term=preset.recency_gain * recency(created_at, now, preset),
    )


def blend(candidates: Sequence[Candidate], preset: FusionPreset) -> dict[str, tuple[float, float]]:
    """Each candidate's meaning and keyword terms (the module docstring's ``meaning``
    and ``keywords``), each signal scaled over ``candidates``; a candidate without a
    cosine has no meaning term and does not count in the cosines' range."""
    cosines = [c.cosine for c in candidates if c.cosine is not None]
    low = min(cosines, default=0.0)
    spread = max(cosines, default=0.0) - low
    top = max((_keyword_score(c) for c in candidates), default=0.0)
    out = {}
    for c in candidates:
        meaning = 0.0
        if c.cosine is not None and spread > 0:
            meaning = preset.cosine_share * ((c.cosine - low) / spread)
        words = preset.keyword_share * (_keyword_score(c) / top) if top > 0 else 0.0
        out[c.key] = (meaning, words)
    return out


def _keyword_score(c: Candidate) -> float:
    return c.lexical if c.lexical is not None and c.lexical > 0 else 0.0


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
