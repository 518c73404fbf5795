"""BM25, the keyword score of memory search and history search (R41, R62).

A document is a memory version (its summary and content) or a history part; its
terms are the lexemes of PostgreSQL's ``english`` text search configuration
(``to_tsvector``: words stemmed, stop words dropped), and a query's terms are its
distinct lexemes (for web-search syntax, those it does not negate). For a reader
whose reach holds ``N`` documents, ``df`` of them holding term ``t``::

    impact(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    idf(t)       = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(d, q)  = sum over the query's terms t in d of idf(t) * impact(t, d)

``tf`` is how often ``t`` occurs in ``d``, ``dl`` how many lexemes ``d`` holds (with
repeats). The sum runs in term order (code points), so that a score computed twice
is the same float. A rare term weighs more than a common one, a term repeated
weighs more (saturating at ``k1 + 1``), and with ``b`` above 0 a long document's
terms weigh less.

``avgdl`` is a fixed reference length, not the running mean of the corpus: the
impacts are stored with the postings when a document is written (migration 0011,
whose ``bm25_impact`` is :func:`impact`) and ordered by, so that a term's best
documents are the first rows of an index; a running mean would reorder them all
as the corpus grows. 15 lexemes is the mean length of a LoCoMo dialog turn (15.1),
what one memory or one history part usually holds.

The constants (:data:`BM25`), stored with both kinds' postings: ``k1`` 3 and ``b``
0, no length normalisation. On LoCoMo a text's length says nothing of its worth
(the answer a question needs is often the longer turn, and "Thanks!" is short):
nested leave-one-conversation-out chose ``b`` 0 on every fold of memory search and
of history search, and history's chose ``k1`` 3 on most (docs/ranking.md, with each
one's sensitivity).

Which terms find candidates (:func:`seekers`): a query's ``most`` rarest terms,
leaving out, when the preset says so, those more than ``common_share`` of the
reader's documents (and more than ``common_min``) hold, unless every term is that
common: such a term matches nearly everything and finds nothing in particular
(history: docs/history.md). Every term still counts in the score.

How many postings a search reads (:func:`reading`), a budget of ``budget`` pools in
all: when the query's terms hold no more postings than that in the reader's reach,
every posting of every term (the keyword candidates are then every match, each with
its exact score: the ranking is exhaustive); otherwise each finding term its best
postings, the rarest all of theirs while they hold at most half the budget, the others
sharing the rest in proportion to their postings (each the same share of its list: its
best postings, which with ``b`` 0 are its newest of each impact), and at least a
pool's worth each.

Pure Python; :mod:`server.storage.bm25` computes the same in SQL, and the tests
check that both agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Bm25:
    """BM25's constants: the saturation ``k1``, the length normalisation ``b`` and the
    reference length ``avgdl`` (lexemes)."""

    k1: float
    b: float
    avgdl: float


BM25 = Bm25(k1=3.0, b=0.0, avgdl=15.0)
"""The constants of every stored impact, memory's and history's (migration 0011):
changing them takes a migration that rewrites the postings."""


def impact(tf: int, dl: int, p: Bm25 = BM25) -> float:
    """BM25's term-frequency part of a term occurring ``tf`` times in a document of
    ``dl`` lexemes, in the order of operations of ``bm25_impact``."""
    return tf * (p.k1 + 1.0) / (tf + p.k1 * (1.0 - p.b + p.b * dl / p.avgdl))


def idf(df: int, docs: int) -> float:
    """The inverse document frequency of a term ``df`` of ``docs`` documents hold:
    ``ln(1 + (docs - df + 0.5) / (df + 0.5))``, positive, near 0 for a term every
    document holds."""
    return math.log(1.0 + (float(docs) - float(df) + 0.5) / (float(df) + 0.5))


def score(
    tfs: Mapping[str, int], dl: int, weights: Mapping[str, float], p: Bm25 = BM25
) -> float | None:
    """The BM25 score of a document (``tfs``: its terms' frequencies, ``dl`` its
    length) for a query whose terms weigh ``weights`` (their :func:`idf`); None when it
    holds none of them."""
    shared = sorted(t for t in weights if t in tfs)
    if not shared:
        return None
    total = 0.0
    for t in shared:
        total += weights[t] * impact(tfs[t], dl, p)
    return total


@dataclass(frozen=True, slots=True)
class Seeking:
    """Which of a query's terms find keyword candidates (:func:`seekers`), and how many
    postings a search reads (:func:`reading`): ``budget`` pools in all."""

    most: int
    common_share: float | None = None
    common_min: int = 0
    budget: int = 0

    def __post_init__(self) -> None:
        if self.most < 1:
            raise ValueError("most must be >= 1")
        if self.budget < 0:
            raise ValueError("budget must be >= 0")
        if self.common_share is not None and not 0.0 < self.common_share <= 1.0:
            raise ValueError("common_share must be in (0, 1]")


def common(df: int, docs: int, seeking: Seeking) -> bool:
    """True when a term ``df`` of ``docs`` documents hold is too common to find
    candidates: more than ``common_share`` of them, and more than ``common_min``."""
    if seeking.common_share is None:
        return False
    return df > max(seeking.common_share * docs, seeking.common_min)


def seekers(dfs: Mapping[str, int], docs: int, seeking: Seeking) -> list[str]:
    """The terms that find candidates, rarest first (then in term order): at most
    ``seeking.most``, the common ones left out unless all are common."""
    rare = [t for t, df in dfs.items() if not common(df, docs, seeking)]
    chosen = rare if rare else list(dfs)
    return sorted(chosen, key=lambda t: (dfs[t], t))[: seeking.most]


@dataclass(frozen=True, slots=True)
class Reading:
    """What a keyword search reads (:func:`reading`): ``whole``, every posting of every
    query term; otherwise ``depths``, how many of its best postings each finding term
    reads (the other terms none)."""

    whole: bool
    depths: dict[str, int]


def reading(dfs: Mapping[str, int], docs: int, seeking: Seeking, pool: int) -> Reading:
    """How many postings each term reads, within ``seeking.budget * pool`` (the module
    docstring): all of every term's when they hold no more; else the finding terms'
    (:func:`seekers`, rarest first) whole while those read whole hold at most half the
    budget, then each of the rest its share of what is left, in proportion to ``df``, at
    least a pool's worth. What is read stays within ``budget * pool + terms * pool``."""
    budget = seeking.budget * pool
    if sum(dfs.values()) <= budget:
        return Reading(True, dict(dfs))
    finding = seekers(dfs, docs, seeking)
    out: dict[str, int] = {}
    whole = 0
    for t in finding:
        if whole + dfs[t] > budget / 2:
            break
        out[t] = dfs[t]
        whole += dfs[t]
    rest = [t for t in finding if t not in out]
    held = float(sum(dfs[t] for t in rest))
    left = float(budget - whole)
    for t in rest:
        out[t] = max(min(dfs[t], pool), math.ceil(left * float(dfs[t]) / held))
    return Reading(False, out)


__all__ = [
    "BM25",
    "Bm25",
    "Reading",
    "Seeking",
    "common",
    "idf",
    "impact",
    "reading",
    "score",
    "seekers",
]
