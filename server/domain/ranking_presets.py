"""The named constants of search ranking (R41, R62): the fusion presets and the preset
of history in context. :mod:`server.domain.ranking` says what each constant does;
docs/ranking.md how each was chosen (a value from the literature, cited, or chosen by
nested leave-one-conversation-out on LoCoMo) and how much the ranking moves with it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from server.domain.bm25 import Seeking

# The postings a keyword search reads, in pools (server.domain.bm25.reading): a query's
# every match while its terms hold at most this many pools (8,000 postings at the pool of
# a limit of 10), each exactly scored; reading them costs about what a tenth of them
# probed one by one did (docs/scaling.md, "The keyword leg").
KEYWORD_BUDGET = 200


@dataclass(frozen=True, slots=True)
class FusionPreset:
    """The constants of hybrid ranking: a blend of the candidates' cosines and BM25
    scores, each scaled over the candidates, plus a recency term."""

    name: str
    # the cosine's share of the blend; the BM25 score has the rest
    cosine_share: float
    # what a brand-new record gains, as a share of what the top candidate gains from its
    # stronger signal (:attr:`recency_gain`)
    recency_weight: float
    recency_half_life_days: float
    candidate_pool: int
    pool_factor: int
    # which of a query's terms find keyword candidates, and how many postings a search
    # reads (server.domain.bm25.seekers, reading): every match while the terms hold at
    # most KEYWORD_BUDGET pools of postings
    seeking: Seeking = field(default_factory=lambda: Seeking(most=32, budget=KEYWORD_BUDGET))

    def __post_init__(self) -> None:
        if not 0.0 <= self.cosine_share <= 1.0:
            raise ValueError("cosine_share must be from 0 to 1")
        if self.recency_weight < 0:
            raise ValueError("recency_weight must be >= 0")
        if not self.recency_half_life_days > 0:
            raise ValueError("recency_half_life_days must be > 0")
        if self.candidate_pool < 1 or self.pool_factor < 1:
            raise ValueError("candidate_pool and pool_factor must be >= 1")

    def pool_size(self, limit: int) -> int:
        """How many candidates each signal contributes before fusion; never below ``limit``."""
        return max(limit * self.pool_factor, self.candidate_pool)

    @property
    def keyword_share(self) -> float:
        """The BM25 score's share of the blend: ``1 - cosine_share``."""
        return 1.0 - self.cosine_share

    @property
    def recency_gain(self) -> float:
        """What a brand-new record gains: ``recency_weight`` of the larger share."""
        return self.recency_weight * max(self.cosine_share, self.keyword_share)


# Memory search's: each constant's value, how it was chosen and its sensitivity are in
# docs/ranking.md.
DEFAULT_PRESET = FusionPreset(
    name="default",
    cosine_share=0.5,
    # newer wins exact ties by the order alone: nested cross-validation chose no
    # recency term (LoCoMo asked the day after: 0 of 0, 0.025, 0.05, 0.1)
    recency_weight=0.0,
    recency_half_life_days=30.0,
    candidate_pool=40,
    pool_factor=4,
)


@dataclass(frozen=True, slots=True)
class ContextPreset:
    """The constants of ranking a session's history in context (R62), over the fusion
    preset whose recency it keeps (docs/ranking.md says how each was chosen)."""

    name: str
    # the cosine's share of a part's blend; the keyword weight has the rest
    cosine_share: float
    # a part gains this share of the lead the part before it in its turn has over it
    # (an answer follows the question that names what it answers)
    context_share: float
    # a part gains this share of the best blend in its turn (a conversation stays on
    # a subject for a while)
    turn_share: float
    fusion: FusionPreset
    # a part gains this share of the lead the part after it in its turn has over it
    # (a question is found through its answer, a remark through the reply to it)
    next_share: float = 0.0
    # what a part kept in a period the query names gains ("in May", "last week")
    date_share: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.cosine_share <= 1.0:
            raise ValueError("cosine_share must be from 0 to 1")
        if min(self.context_share, self.turn_share, self.next_share, self.date_share) < 0:
            raise ValueError("shares must be >= 0")

    @property
    def recency_weight(self) -> float:
        """What a brand-new part gains: the fusion preset's share of a top part's gain
        from its stronger signal."""
        return self.fusion.recency_weight * max(self.cosine_share, 1.0 - self.cosine_share)


# A history search's candidates: the memory search's pool at a limit of 10, less as the
# limit grows, and a session's common words find none (docs/history.md).
HISTORY_FUSION_PRESET = replace(
    DEFAULT_PRESET,
    name="history",
    candidate_pool=40,
    pool_factor=2,
    seeking=Seeking(most=32, common_share=0.05, common_min=10, budget=KEYWORD_BUDGET),
)

# Each constant chosen by nested leave-one-conversation-out on LoCoMo (docs/ranking.md).
HISTORY_CONTEXT_PRESET = ContextPreset(
    name="history_context",
    cosine_share=0.6,
    context_share=0.3,
    turn_share=0.75,
    fusion=HISTORY_FUSION_PRESET,
    next_share=0.3,
    date_share=0.4,
)
