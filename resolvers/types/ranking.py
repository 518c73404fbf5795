"""Why a search result ranked where it did (R41): the terms of its score."""

from __future__ import annotations

from enum import Enum

import strawberry

from server.domain.ranking import Explanation


@strawberry.enum(description="How a search ranks (harness.memory.search.mode).")
class SearchMode(Enum):
    _value_: str  # the configured value

    HYBRID = strawberry.enum_value("hybrid", description="Meaning, keywords and recency, blended.")
    LEXICAL = strawberry.enum_value("lexical", description="Keywords only (full-text rank).")
    VECTOR = strawberry.enum_value("vector", description="Meaning only (cosine similarity).")


@strawberry.type(
    name="ScoreTerm",
    description="One signal's part in a score: where the result stood by that signal, and "
    "what that added.",
)
class ScoreTermType:
    rank: int | None = strawberry.field(
        description="The result's position, from 1, in the candidates by this signal; null "
        "when it was not one of them (it added nothing)."
    )
    term: float = strawberry.field(description="What this signal added to the score.")


@strawberry.type(
    name="ScoreExplanation",
    description="Why a result ranked where it did. In HYBRID mode the score is the sum of "
    "meaning.term, keywords.term and recency.term: each signal is scaled over the search's "
    "candidates (the cosine from the least, 0, to the greatest, 1; the BM25 score over the "
    "greatest) and weighed by its share of the named preset, and newer records add a "
    "little, halving every halfLifeDays. In VECTOR mode the score is the cosine, in LEXICAL "
    "mode the BM25 score.",
)
class ScoreExplanationType:
    mode: SearchMode = strawberry.field(description="How the search ranked.")
    preset: str = strawberry.field(description="The named fusion constants it used.")
    meaning: ScoreTermType = strawberry.field(
        description="By meaning: the embedding's cosine similarity to the query."
    )
    keywords: ScoreTermType = strawberry.field(
        description="By keywords: the full-text match of the query's words."
    )
    recency: float = strawberry.field(description="What the record's age added (HYBRID only).")
    age_days: float = strawberry.field(description="The version's age, in days, at the search.")
    half_life_days: float = strawberry.field(
        description="The age at which the recency term halves."
    )

    @classmethod
    def of(cls, e: Explanation, *, preset: str, half_life_days: float) -> ScoreExplanationType:
        return cls(
            mode=SearchMode(e.mode),
            preset=preset,
            meaning=ScoreTermType(rank=e.meaning_rank, term=e.meaning_term),
            keywords=ScoreTermType(rank=e.keyword_rank, term=e.keyword_term),
            recency=e.recency_term,
            age_days=e.age_days,
            half_life_days=half_life_days,
        )
