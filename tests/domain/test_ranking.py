"""Search ranking (R41, R62): the reference the generated SQL must agree with."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.domain.ranking import (
    Candidate,
    ContextPart,
    Mode,
    Ranked,
    blend,
    explain,
    rank,
    rank_in_context,
    recency,
)
from server.domain.ranking_presets import DEFAULT_PRESET, HISTORY_CONTEXT_PRESET, FusionPreset

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MODES: tuple[Mode, ...] = ("hybrid", "lexical", "vector")
# Each signal contributes only as many candidates as the limit asks for.
TINY_POOL = replace(DEFAULT_PRESET, name="tiny", candidate_pool=1, pool_factor=1)
# a preset whose newest records matter: a brand-new record gains half what the best
# candidate gains from its stronger signal (0.25 of a score of at most 1)
RECENCY_HEAVY = replace(
    DEFAULT_PRESET, name="recency_heavy", recency_weight=0.5, recency_half_life_days=7.0
)
MEANING = DEFAULT_PRESET.cosine_share
WORDS = DEFAULT_PRESET.keyword_share


def cand(
    key: str, *, days_old: float = 0.0, cosine: float | None = None, lexical: float | None = None
) -> Candidate:
    return Candidate(key, NOW - timedelta(days=days_old), cosine, lexical)


def keys(results: list[Ranked]) -> list[str]:
    return [r.key for r in results]


def run(cands: list[Candidate], mode: Mode = "hybrid", **kw: object) -> list[Ranked]:
    args: dict[str, object] = {"min_score": 0.0, "limit": 10, "now": NOW} | kw
    return rank(cands, mode=mode, **args)  # type: ignore[arg-type]


def recency_term(days_old: float, preset: FusionPreset = DEFAULT_PRESET) -> float:
    return preset.recency_gain * recency(NOW - timedelta(days=days_old), NOW, preset)


# Formula pieces


def test_each_signal_is_scaled_over_the_candidates_and_blended() -> None:
    """The cosine from the candidates' least (0) to their greatest (1), the BM25 score
    over the greatest, each times its share; a record holding no word adds nothing."""
    cands = [
        cand("a", cosine=0.9, lexical=2.0),
        cand("b", cosine=0.5, lexical=4.0),
        cand("c", cosine=0.7),
    ]
    assert blend(cands, DEFAULT_PRESET) == {
        "a": (MEANING * 1.0, WORDS * 0.5),
        "b": (MEANING * 0.0, WORDS * 1.0),
        "c": (MEANING * ((0.7 - 0.5) / (0.9 - 0.5)), 0.0),
    }
    assert DEFAULT_PRESET.cosine_share + DEFAULT_PRESET.keyword_share == 1.0


def test_no_spread_and_no_keyword_match_add_nothing() -> None:
    """0/0 is 0: candidates all as close add no meaning term, none holding a word no
    keyword term."""
    assert blend([cand("a", cosine=0.4), cand("b", cosine=0.4)], DEFAULT_PRESET) == {
        "a": (0.0, 0.0),
        "b": (0.0, 0.0),
    }


def test_recency_halves_every_half_life_and_ignores_future() -> None:
    half = DEFAULT_PRESET.recency_half_life_days
    assert recency(NOW, NOW, DEFAULT_PRESET) == 1.0
    assert recency(NOW - timedelta(days=half), NOW, DEFAULT_PRESET) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=2 * half), NOW, DEFAULT_PRESET) == pytest.approx(0.25)
    assert recency(NOW + timedelta(days=5), NOW, DEFAULT_PRESET) == 1.0


@pytest.mark.parametrize("preset", [DEFAULT_PRESET, RECENCY_HEAVY])
def test_hybrid_score_is_the_documented_sum(preset: FusionPreset) -> None:
    a = cand("a", days_old=10, cosine=0.9, lexical=0.2)
    b = cand("b", days_old=0, cosine=0.8, lexical=0.5)
    scores = {r.key: r.score for r in run([a, b], preset=preset)}
    assert scores["a"] == MEANING * 1.0 + WORDS * (0.2 / 0.5) + recency_term(10, preset)
    assert scores["b"] == MEANING * 0.0 + WORDS * 1.0 + recency_term(0, preset)
    assert (recency_term(0, preset) > 0) == (preset is RECENCY_HEAVY)


# One signal per mode


def test_vector_mode_ranks_by_cosine_alone() -> None:
    cands = [
        cand("words-only", lexical=0.9),
        cand("close", cosine=0.9),
        cand("closer-fewer-words", cosine=0.95, lexical=0.01),
        cand("far-many-words", cosine=0.2, lexical=0.8),
    ]
    results = run(cands, "vector")
    assert keys(results) == ["closer-fewer-words", "close", "far-many-words"]
    assert [r.score for r in results] == [0.95, 0.9, 0.2]


def test_lexical_mode_ranks_by_full_text_alone() -> None:
    cands = [
        cand("meaning-only", cosine=0.99),
        cand("few-words-close", cosine=0.95, lexical=0.1),
        cand("many-words-far", cosine=-0.5, lexical=0.7),
        cand("zero-rank", cosine=0.9, lexical=0.0),
    ]
    results = run(cands, "lexical", min_score=0.5)
    assert keys(results) == ["many-words-far", "few-words-close"]
    assert [r.score for r in results] == [0.7, 0.1]


# min_score: the bar for being found by meaning alone


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_min_score_drops_meaning_only_candidates_below_it(mode: Mode) -> None:
    cands = [cand("at", cosine=0.5), cand("below", cosine=0.49), cand("above", cosine=0.8)]
    assert keys(run(cands, mode, min_score=0.5)) == ["above", "at"]


def test_min_score_keeps_keyword_matches_and_their_cosine_counts() -> None:
    """A keyword match under min_score is still found, and its cosine is the least of
    the candidates'."""
    cands = [
        cand("words", cosine=0.1, lexical=0.3),
        cand("close", cosine=0.9),
        cand("mid", cosine=0.5),
        cand("below", cosine=0.2),
    ]
    results = {r.key: r for r in run(cands, min_score=0.5)}
    assert set(results) == {"words", "close", "mid"}
    assert results["words"].score == WORDS * 1.0
    assert results["mid"].score == MEANING * ((0.5 - 0.1) / (0.9 - 0.1))
    assert results["words"].cosine == 0.1


def test_negative_min_score_admits_opposite_meaning() -> None:
    assert keys(run([cand("opposite", cosine=-0.4)], "vector", min_score=-0.5)) == ["opposite"]


# Ties and the weight of recency


@pytest.mark.parametrize(
    ("mode", "signals"),
    [("vector", {"cosine": 0.7}), ("lexical", {"lexical": 0.3}), ("hybrid", {"cosine": 0.7})],
)
def test_newer_wins_exact_ties(mode: Mode, signals: dict[str, float]) -> None:
    # "a-old" sorts first by key, so only the time can put "z-new" ahead.
    results = run([cand("a-old", days_old=3, **signals), cand("z-new", **signals)], mode)
    assert keys(results) == ["z-new", "a-old"]


@pytest.mark.parametrize("mode", MODES)
def test_key_settles_ties_of_score_and_time(mode: Mode) -> None:
    results = run([cand("b", cosine=0.7, lexical=0.3), cand("a", cosine=0.7, lexical=0.3)], mode)
    assert keys(results) == ["a", "b"]


@pytest.mark.parametrize("preset", [DEFAULT_PRESET, RECENCY_HEAVY])
def test_hybrid_tie_between_signals_goes_to_the_newer(preset: FusionPreset) -> None:
    """The best by meaning alone and the best by words alone score the same (each its
    signal's share); the newer ranks first."""
    by_meaning = cand("a-meaning", days_old=1, cosine=0.9)
    by_words = cand("z-words", days_old=0, cosine=0.5, lexical=0.9)
    found = run([by_meaning, by_words], preset=replace(preset, recency_weight=0.0))
    assert keys(found) == ["z-words", "a-meaning"]
    assert found[0].score == found[1].score


def test_strong_in_both_signals_beats_strong_in_one() -> None:
    cands = [
        cand("best-meaning", cosine=0.95),
        cand("best-words", cosine=0.2, lexical=0.9),
        cand("both", days_old=300, cosine=0.9, lexical=0.8),
    ]
    assert keys(run(cands))[0] == "both"


def test_a_weak_signal_does_not_push_down_the_best_of_the_other() -> None:
    """The best keyword match, whatever its cosine, scores at least the keyword share;
    a record found by meaning alone at most the cosine share: of a strong keyword match
    and records a little closer holding a common word, the keyword match ranks first."""
    cands = [
        cand("keyword-hit", cosine=0.40, lexical=4.0),
        *(cand(f"closer-{i}", cosine=0.50 - i / 100, lexical=0.2) for i in range(5)),
        cand("far", cosine=0.1),
    ]
    assert keys(run(cands))[0] == "keyword-hit"
    cands = [
        cand("meaning-hit", cosine=0.60),
        *(cand(f"word-{i}", cosine=0.20 + i / 100, lexical=0.2) for i in range(5)),
        cand("rarer-word", cosine=0.15, lexical=1.0),
        cand("far", cosine=0.05),
    ]
    assert keys(run(cands))[:2] == ["rarer-word", "meaning-hit"]


def test_the_default_preset_has_no_recency_term() -> None:
    """Newer wins ties by the order; the default preset adds nothing for age (nested
    cross-validation chose no recency term, docs/ranking.md)."""
    cands = [
        cand("first-old", days_old=365, cosine=0.91),
        cand("second-new", cosine=0.9),
        cand("floor", cosine=0.5),
    ]
    assert DEFAULT_PRESET.recency_gain == 0.0
    assert keys(run(cands)) == ["first-old", "second-new", "floor"]


def test_a_recency_term_settles_near_ties_only() -> None:
    """Under a preset that weighs recency, a brand-new record passes an old one a little
    closer, not one much closer."""
    near = [
        cand("first-old", days_old=365, cosine=0.91),
        cand("second-new", cosine=0.9),
        cand("floor", cosine=0.5),
    ]
    assert keys(run(near, preset=RECENCY_HEAVY)) == ["second-new", "first-old", "floor"]
    far = [
        cand("old-best", days_old=3650, cosine=0.9),
        *(cand(f"mid-{i}", days_old=100, cosine=0.8 - i / 100) for i in range(3)),
        cand("new-low", cosine=0.5),
    ]
    assert keys(run(far, limit=1, preset=RECENCY_HEAVY)) == ["old-best"]


# Limit and pool


@pytest.mark.parametrize("mode", MODES)
def test_limit_caps_results_and_keeps_the_best(mode: Mode) -> None:
    cands = [cand(f"k{i}", cosine=i / 10, lexical=(i + 1) / 10) for i in range(10)]
    assert keys(run(cands, mode, limit=3)) == ["k9", "k8", "k7"]
    assert run(cands, mode, limit=0) == []


def test_pool_size_grows_with_limit_and_never_falls_below_it() -> None:
    assert DEFAULT_PRESET.pool_size(5) == 40
    assert DEFAULT_PRESET.pool_size(20) == 80
    assert TINY_POOL.pool_size(3) == 3
    assert TINY_POOL.pool_size(0) == 1


def test_only_the_pool_of_each_signal_counts_in_hybrid() -> None:
    old = [cand("v1", days_old=365, cosine=0.9), cand("v2", days_old=365, cosine=0.75)]
    new_third = cand("v3-new", cosine=0.7)
    # Recency lifts the third by meaning over the second, unless it is past the pool.
    heavy_tiny = replace(RECENCY_HEAVY, candidate_pool=1, pool_factor=1)
    assert keys(run([*old, new_third], limit=2, preset=RECENCY_HEAVY)) == ["v1", "v3-new"]
    assert keys(run([*old, new_third], limit=2, preset=heavy_tiny)) == ["v1", "v2"]


def test_a_keyword_match_past_the_vector_pool_keeps_its_cosine() -> None:
    """A candidate is scaled by its cosine whichever list found it."""
    old = [cand("v1", days_old=365, cosine=0.9), cand("v2", days_old=365, cosine=0.8)]
    words = cand("v3-words", cosine=0.7, lexical=0.2)
    in_pool = {r.key: r.score for r in run([*old, words], limit=2)}
    past_pool = {r.key: r.score for r in run([*old, words], limit=2, preset=TINY_POOL)}
    assert in_pool == past_pool == {"v1": MEANING * 1.0, "v3-words": WORDS * 1.0}


@pytest.mark.parametrize("mode", MODES)
def test_empty_input_gives_no_results(mode: Mode) -> None:
    assert run([], mode) == []


def test_candidates_found_by_neither_signal_are_dropped() -> None:
    assert run([cand("nothing")]) == []


# Inputs and presets


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone"):
        Candidate("naive", datetime(2026, 1, 1), 0.5, None)
    with pytest.raises(ValueError, match="unique"):
        run([cand("a", cosine=0.5), cand("a", lexical=0.5)])
    with pytest.raises(ValueError, match="limit"):
        run([], limit=-1)
    with pytest.raises(ValueError, match="timezone"):
        run([], now=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="mode"):
        run([], "semantic")  # type: ignore[arg-type]


def test_presets_are_immutable() -> None:
    with pytest.raises(FrozenInstanceError):
        DEFAULT_PRESET.cosine_share = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "change",
    [
        {"cosine_share": -0.1},
        {"cosine_share": 1.5},
        {"recency_weight": -0.1},
        {"recency_half_life_days": 0.0},
        {"candidate_pool": 0},
        {"pool_factor": 0},
    ],
)
def test_preset_constants_are_validated(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        replace(DEFAULT_PRESET, **change)


# Properties

signal = st.one_of(st.none(), st.floats(-1.0, 1.0))
full_text = st.one_of(st.none(), st.just(0.0), st.floats(0.0, 1.0))
times = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2026, 6, 1), timezones=st.just(UTC)
)
candidate_lists = st.lists(
    st.builds(Candidate, st.text("abcdef", min_size=1, max_size=3), times, signal, full_text),
    max_size=25,
    unique_by=lambda c: c.key,
)
modes = st.sampled_from(MODES)
min_scores = st.floats(-1.0, 1.0)
limits = st.integers(0, 30)
presets = st.sampled_from([DEFAULT_PRESET, RECENCY_HEAVY, TINY_POOL])


@given(candidate_lists, modes, min_scores, limits, presets)
def test_results_are_sorted_and_come_from_the_input(
    cands: list[Candidate], mode: Mode, min_score: float, limit: int, preset: FusionPreset
) -> None:
    results = rank(cands, mode=mode, min_score=min_score, limit=limit, now=NOW, preset=preset)
    by_key = {c.key: c for c in cands}
    assert len(results) <= limit
    assert len({r.key for r in results}) == len(results)
    for r in results:
        c = by_key[r.key]
        assert (r.cosine, r.lexical) == (c.cosine, c.lexical)
    order = [(-r.score, NOW - by_key[r.key].created_at, r.key) for r in results]
    assert order == sorted(order)


@given(candidate_lists, modes, min_scores, limits)
def test_every_result_was_found_by_a_signal_the_mode_uses(
    cands: list[Candidate], mode: Mode, min_score: float, limit: int
) -> None:
    results = rank(cands, mode=mode, min_score=min_score, limit=limit, now=NOW)
    for r in results:
        by_meaning = r.cosine is not None and r.cosine >= min_score
        by_words = r.lexical is not None and r.lexical > 0
        assert {"vector": by_meaning, "lexical": by_words, "hybrid": by_meaning or by_words}[mode]
        if mode != "hybrid":
            assert r.score == (r.cosine if mode == "vector" else r.lexical)


@given(candidate_lists, min_scores, limits)
def test_single_signal_modes_miss_nothing(
    cands: list[Candidate], min_score: float, limit: int
) -> None:
    found = sum(c.cosine is not None and c.cosine >= min_score for c in cands)
    vector = rank(cands, mode="vector", min_score=min_score, limit=limit, now=NOW)
    assert len(vector) == min(limit, found)
    matched = sum(c.lexical is not None and c.lexical > 0 for c in cands)
    lexical = rank(cands, mode="lexical", min_score=min_score, limit=limit, now=NOW)
    assert len(lexical) == min(limit, matched)


@given(
    st.data(),
    candidate_lists.filter(bool),
    st.sampled_from(["vector", "hybrid"]),
    min_scores,
    limits,
    presets,
    st.floats(-1.0, 1.0),
    st.floats(0.0, 2.0),
)
def test_raising_cosine_never_lowers_position(
    data: st.DataObject,
    cands: list[Candidate],
    mode: Mode,
    min_score: float,
    limit: int,
    preset: FusionPreset,
    cosine: float,
    rise: float,
) -> None:
    i = data.draw(st.integers(0, len(cands) - 1))
    target = cands[i].key
    before = [*cands[:i], replace(cands[i], cosine=cosine), *cands[i + 1 :]]
    after = [*cands[:i], replace(cands[i], cosine=min(1.0, cosine + rise)), *cands[i + 1 :]]
    args = {"mode": mode, "min_score": min_score, "limit": limit, "now": NOW, "preset": preset}
    old = keys(rank(before, **args))  # type: ignore[arg-type]
    new = keys(rank(after, **args))  # type: ignore[arg-type]
    if target in old:
        assert target in new
        assert new.index(target) <= old.index(target)


# -- history in context (R62) ------------------------------------------------------------


def _part(
    key: str,
    turn: int,
    sequence: int,
    cosine: float,
    keywords: float = 0.0,
    *,
    age_days: float = 1.0,
    part: int = 1,
) -> ContextPart:
    return ContextPart(
        key=key,
        turn=turn,
        sequence=sequence,
        part=part,
        cosine=cosine,
        keywords=keywords,
        created_at=NOW - timedelta(days=age_days),
    )


def _keys(ranked: list[Ranked]) -> list[str]:
    return [r.key for r in ranked]


def test_r62_an_answer_is_lifted_by_the_question_before_it() -> None:
    """The answer shares nothing with the query; the question before it does. It gains
    context_share of the question's lead and passes a part of another turn that is a
    little closer to the query on its own."""
    parts = [
        _part("question", 1, 1, cosine=0.8, keywords=2.0),
        _part("answer", 1, 2, cosine=0.2),
        _part("elsewhere", 2, 1, cosine=0.3),
        _part("elsewhere-2", 2, 2, cosine=0.1),
    ]
    ranked = rank_in_context(parts, now=NOW, limit=4)
    assert _keys(ranked) == ["question", "answer", "elsewhere", "elsewhere-2"]
    alone = rank_in_context([replace(p, turn=9 + i) for i, p in enumerate(parts)], now=NOW, limit=4)
    assert _keys(alone)[1] == "elsewhere"  # without its question, the answer falls behind


def test_r62_a_part_gains_a_share_of_the_best_in_its_turn() -> None:
    """Two equal parts, each first in its turn: the one whose turn holds the best match
    ranks first, by turn_share of the difference of the turns' best blends (the part
    after each left out: next_share 0)."""
    c = replace(HISTORY_CONTEXT_PRESET, next_share=0.0)
    parts = [
        _part("a", 1, 0, cosine=0.4),
        _part("best", 1, 1, cosine=0.9, keywords=1.0),
        _part("b", 2, 0, cosine=0.4),
        _part("low", 2, 1, cosine=0.1),
    ]
    ranked = rank_in_context(parts, now=NOW, limit=4, preset=c)
    assert _keys(ranked) == ["best", "a", "b", "low"]
    score = {r.key: r.score for r in ranked}
    low_cs = 0.1 + c.context_share * (0.4 - 0.1)  # the part before it leads by 0.3
    blend_b = c.cosine_share * (0.4 - low_cs) / (0.9 - low_cs)
    assert score["a"] - score["b"] == pytest.approx(c.turn_share * (1.0 - blend_b))


def test_r62_scores_follow_the_documented_formula() -> None:
    """One worked case, term by term (module docstring)."""
    c = HISTORY_CONTEXT_PRESET
    parts = [
        _part("q", 1, 1, cosine=0.7, keywords=3.0, age_days=0.0),
        _part("a", 1, 2, cosine=0.1, keywords=0.0, age_days=0.0),
    ]
    cs_a = 0.1 + c.context_share * (0.7 - 0.1)  # the lowest cs: the blend's 0
    ls_a = 0.0 + c.context_share * 3.0
    blend_q = c.cosine_share * 1.0 + (1 - c.cosine_share) * 1.0  # both signals at the top
    blend_a = c.cosine_share * 0.0 + (1 - c.cosine_share) * ls_a / 3.0
    assert cs_a < 0.7
    ranked = {r.key: r for r in rank_in_context(parts, now=NOW, limit=2)}
    assert ranked["q"].score == pytest.approx(blend_q + c.turn_share * blend_q + c.recency_weight)
    assert ranked["a"].score == pytest.approx(blend_a + c.turn_share * blend_q + c.recency_weight)
    assert ranked["a"].lexical is None and ranked["q"].lexical == 3.0


def test_r62_newer_wins_ties_and_a_recency_term_settles_near_ties_only() -> None:
    """The history preset adds nothing for age (as memory's: docs/ranking.md), so newer
    wins exact ties by the order; a preset that weighs recency lifts a new part over an
    old one a little closer, not over one much closer."""
    assert HISTORY_CONTEXT_PRESET.recency_weight == 0.0
    same = [
        _part("old", 1, 1, cosine=0.5, age_days=60),
        _part("new", 2, 1, cosine=0.5),
        _part("floor", 3, 1, cosine=0.1),
    ]
    assert _keys(rank_in_context(same, now=NOW, limit=3))[:2] == ["new", "old"]
    weighed = replace(
        HISTORY_CONTEXT_PRESET,
        fusion=replace(HISTORY_CONTEXT_PRESET.fusion, recency_weight=0.05),
    )
    near = [
        _part("old", 1, 1, cosine=0.501, age_days=60),
        _part("new", 2, 1, cosine=0.5),
        _part("floor", 3, 1, cosine=0.1),
    ]
    assert _keys(rank_in_context(near, now=NOW, limit=3))[:2] == ["old", "new"]
    assert _keys(rank_in_context(near, now=NOW, limit=3, preset=weighed))[:2] == ["new", "old"]
    clear = [
        _part("old", 1, 1, cosine=0.6, age_days=60),
        _part("new", 2, 1, cosine=0.5),
        _part("floor", 3, 1, cosine=0.1),
    ]
    assert _keys(rank_in_context(clear, now=NOW, limit=3, preset=weighed))[:2] == ["old", "new"]


def test_r62_no_spread_and_no_keyword_score_nothing_but_recency() -> None:
    """0/0 terms are 0: equal cosines and no keywords leave recency and then the key."""
    parts = [
        _part("b", 1, 1, cosine=0.4),
        _part("a", 2, 1, cosine=0.4),
        _part("c", 3, 1, cosine=0.4, age_days=0.5),
    ]
    ranked = rank_in_context(parts, now=NOW, limit=3)
    assert _keys(ranked) == ["c", "a", "b"]
    assert ranked[1].score == pytest.approx(
        HISTORY_CONTEXT_PRESET.recency_weight
        * recency(NOW - timedelta(days=1), NOW, DEFAULT_PRESET)
    )
    assert rank_in_context([], now=NOW, limit=5) == []
    assert len(rank_in_context(parts, now=NOW, limit=2)) == 2


def test_r62_context_preset_is_checked() -> None:
    with pytest.raises(ValueError, match="cosine_share"):
        replace(HISTORY_CONTEXT_PRESET, cosine_share=1.5)
    with pytest.raises(ValueError, match="shares"):
        replace(HISTORY_CONTEXT_PRESET, turn_share=-0.1)
    assert HISTORY_CONTEXT_PRESET.recency_weight == pytest.approx(
        HISTORY_CONTEXT_PRESET.fusion.recency_weight
        * max(HISTORY_CONTEXT_PRESET.cosine_share, 1 - HISTORY_CONTEXT_PRESET.cosine_share)
    )


def test_r62_a_question_is_lifted_by_the_answer_after_it() -> None:
    """The question shares little with the query; the answer after it does. It gains
    next_share of the answer's lead and passes a part of another turn that is a little
    closer to the query on its own (the turn's share left out: turn_share 0)."""
    c = replace(HISTORY_CONTEXT_PRESET, turn_share=0.0)
    assert c.next_share > 0
    parts = [
        _part("question", 1, 1, cosine=0.2),
        _part("answer", 1, 2, cosine=0.8, keywords=2.0),
        _part("elsewhere", 2, 1, cosine=0.3),
        _part("elsewhere-2", 2, 2, cosine=0.1),
    ]
    ranked = rank_in_context(parts, now=NOW, limit=4, preset=c)
    assert _keys(ranked) == ["answer", "question", "elsewhere", "elsewhere-2"]
    without = rank_in_context(parts, now=NOW, limit=4, preset=replace(c, next_share=0.0))
    assert _keys(without)[1] == "elsewhere"  # without next_share, the question falls behind


def test_r62_a_part_kept_in_a_period_the_query_names_gains_date_share() -> None:
    """R62: "what did I cook last week": the part kept that week passes a slightly closer
    one kept since, by date_share; with no period named, it does not."""
    c = HISTORY_CONTEXT_PRESET
    assert c.date_share > 0
    parts = [
        _part("last-week", 1, 1, cosine=0.6, age_days=9),
        _part("since", 2, 1, cosine=0.65, age_days=2),
        _part("floor", 3, 1, cosine=0.1, age_days=20),
    ]
    week = (NOW - timedelta(days=12), NOW - timedelta(days=5))
    ranked = rank_in_context(parts, now=NOW, limit=3, periods=[week])
    assert _keys(ranked)[:2] == ["last-week", "since"]
    plain = rank_in_context(parts, now=NOW, limit=3)
    assert _keys(plain)[:2] == ["since", "last-week"]
    gained = {r.key: r.score for r in ranked}["last-week"] - {r.key: r.score for r in plain}[
        "last-week"
    ]
    assert gained == pytest.approx(c.date_share)
    # the period is half-open: a part kept at its end is outside it
    edge = rank_in_context(
        parts, now=NOW, limit=3, periods=[(NOW - timedelta(days=12), NOW - timedelta(days=9))]
    )
    assert _keys(edge)[:2] == ["since", "last-week"]


# Explanations: the terms of a score


@given(candidate_lists, min_scores, limits.filter(bool), presets)
def test_a_hybrid_explanation_sums_to_the_score(
    cands: list[Candidate], min_score: float, limit: int, preset: FusionPreset
) -> None:
    """Each result's terms (its blend's, and its age's) add up to its score exactly; its
    positions are those in the single-signal rankings over the same pool (what the
    dashboard's search reads), in one of them at least."""
    pool = preset.pool_size(limit)
    args: dict[str, Any] = {"min_score": min_score, "now": NOW, "preset": preset}
    results = rank(cands, mode="hybrid", limit=limit, **args)
    by_meaning = {r.key: i for i, r in enumerate(rank(cands, mode="vector", limit=pool, **args), 1)}
    by_words = {r.key: i for i, r in enumerate(rank(cands, mode="lexical", limit=pool, **args), 1)}
    created = {c.key: c.created_at for c in cands}
    for r in results:
        e = explain(
            mode="hybrid",
            score=r.score,
            terms=r.terms,
            created_at=created[r.key],
            now=NOW,
            meaning_rank=by_meaning.get(r.key),
            keyword_rank=by_words.get(r.key),
            preset=preset,
        )
        assert (e.meaning_term + e.keyword_term) + e.recency_term == r.score
        assert e.meaning_rank is not None or e.keyword_rank is not None


def test_a_single_signal_explanation_is_that_signal() -> None:
    made = NOW - timedelta(days=3)
    vector = explain(
        mode="vector",
        score=0.8,
        terms=None,
        created_at=made,
        now=NOW,
        meaning_rank=2,
        keyword_rank=None,
    )
    assert (vector.meaning_term, vector.keyword_term, vector.recency_term) == (0.8, 0.0, 0.0)
    assert (vector.meaning_rank, vector.age_days) == (2, pytest.approx(3.0))
    lexical = explain(
        mode="lexical",
        score=0.1,
        terms=None,
        created_at=made,
        now=NOW,
        meaning_rank=None,
        keyword_rank=1,
    )
    assert (lexical.meaning_term, lexical.keyword_term, lexical.keyword_rank) == (0.0, 0.1, 1)
