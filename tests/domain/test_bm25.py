"""BM25, the keyword score of memory and history search (R41, R62): the pure formula
of :mod:`server.domain.bm25`, and which of a query's terms find candidates."""

from __future__ import annotations

import math

import pytest

from server.domain import bm25
from server.domain.bm25 import BM25, Bm25, Seeking
from server.domain.ranking_presets import DEFAULT_PRESET, HISTORY_FUSION_PRESET


def test_r41_a_rare_term_weighs_more_than_a_common_one() -> None:
    """R41: the inverse document frequency falls as more documents hold the term; a term
    every document holds weighs almost nothing, never less than nothing."""
    assert bm25.idf(1, 400) > bm25.idf(20, 400) > bm25.idf(300, 400) > 0
    assert 0 < bm25.idf(400, 400) < 0.01
    assert bm25.idf(0, 400) == pytest.approx(math.log(1 + 400.5 / 0.5))
    assert bm25.idf(0, 0) == pytest.approx(math.log(2))  # no documents: no division by 0


def test_r41_impact_saturates_with_repeats_and_a_texts_length_does_not_weigh() -> None:
    """R41, R62: a term repeated counts more, up to ``k1 + 1``; without length
    normalisation (``b`` 0, chosen on LoCoMo) a term once in a text counts 1 whatever
    the text's length. With ``b`` above 0 the same term in a longer text counts less."""
    assert {bm25.impact(1, dl) for dl in (1, 15, 200)} == {1.0}
    assert 1.0 < bm25.impact(2, 40) < bm25.impact(9, 40) < BM25.k1 + 1
    usual = Bm25(k1=1.2, b=0.75, avgdl=15.0)
    assert bm25.impact(1, 15, usual) == pytest.approx(1.0)
    assert bm25.impact(1, 5, usual) > bm25.impact(1, 15, usual) > bm25.impact(1, 60, usual)


def test_r41_a_document_scores_the_idf_weighted_impacts_of_the_terms_it_holds() -> None:
    """R41: the score sums, in term order, each held query term's idf times its impact; a
    document holding no query term has no score (it is no keyword match)."""
    weights = {"garden": 2.0, "tomato": 0.5, "rain": 3.0}
    doc = {"garden": 2, "tomato": 1, "shed": 1}
    want = 2.0 * bm25.impact(2, 4) + 0.5 * bm25.impact(1, 4)
    assert want == 2.0 * 1.6 + 0.5
    assert bm25.score(doc, 4, weights) == want
    assert bm25.score({"shed": 1}, 1, weights) is None


def test_r41_rare_words_outrank_common_ones() -> None:
    """R41: of two documents of one length, each holding one query word, the one holding
    the word fewer documents hold ranks first."""
    weights = {"dana": bm25.idf(380, 400), "flowerpot": bm25.idf(2, 400)}
    rare = bm25.score({"flowerpot": 1, "key": 1}, 2, weights)
    common = bm25.score({"dana": 1, "hello": 1}, 2, weights)
    assert rare is not None and common is not None and rare > 10 * common


def test_r62_common_terms_find_no_candidates_unless_all_are_common() -> None:
    """R62: with a common share, a term in more than that share of the documents (and in
    more than ``common_min``) finds no candidates; when every term is that common they
    all do; the rarest find first, at most ``most``."""
    seeking = Seeking(most=3, common_share=0.05, common_min=10)
    dfs = {"caroline": 180, "go": 21, "support": 6, "group": 9}
    assert bm25.seekers(dfs, 400, seeking) == ["support", "group"]
    # exactly at the share still finds; just over does not
    assert bm25.seekers({**dfs, "go": 20}, 400, seeking) == ["support", "group", "go"]
    assert bm25.seekers({"caroline": 300, "melanie": 290}, 400, seeking) == [
        "melanie",
        "caroline",
    ]
    # in a short session a term in a handful of documents still narrows the search
    assert bm25.seekers({"caroline": 10, "melanie": 1}, 30, seeking) == ["melanie", "caroline"]
    assert bm25.seekers({"caroline": 11, "melanie": 1}, 30, seeking) == ["melanie"]
    many = {f"w{i}": i for i in range(10)}
    assert bm25.seekers(many, 1000, seeking) == ["w0", "w1", "w2"]
    # without a share, every term finds
    assert bm25.seekers(dfs, 400, Seeking(most=8)) == ["support", "group", "go", "caroline"]


def test_r41_a_query_within_the_budget_reads_every_posting() -> None:
    """R41: when the query's terms hold no more postings than the budget, every posting
    of every term is read (common ones too, though they find nothing): the candidates are
    every match, each with its exact score."""
    seeking = Seeking(most=8, budget=8, common_share=0.5)
    dfs = {"rare": 5, "scarce": 30, "middling": 200, "everywhere": 85}
    assert bm25.reading(dfs, 100, seeking, 40) == bm25.Reading(True, dfs)
    assert not bm25.reading({**dfs, "middling": 201}, 100, seeking, 40).whole


def test_r41_beyond_the_budget_the_rarest_are_read_whole_and_the_rest_share() -> None:
    """R41: beyond the budget the finding terms read their best postings: the rarest all
    of theirs while those hold at most half the budget, the rest in proportion to their
    postings (each the same share of its list), at least a pool each; so what is read is
    bounded by ``(budget + terms) * pool``, however many documents hold the terms."""
    seeking = Seeking(most=8, budget=8)
    dfs = {"rare": 5, "scarce": 30, "middling": 300, "common": 3000, "everywhere": 9000}
    reading = bm25.reading(dfs, 10_000, seeking, 40)
    assert not reading.whole
    # 35 read whole (<= 160); 285 left for 12,300 postings: each its 2.3 %, at least 40
    assert reading.depths == {
        "rare": 5,
        "scarce": 30,
        "middling": 40,
        "common": 70,
        "everywhere": 209,
    }
    big = {t: 100 * df for t, df in dfs.items()}
    assert sum(bm25.reading(big, 10**6, seeking, 40).depths.values()) <= (8 + len(big)) * 40
    # only the finding terms read
    assert bm25.reading(dfs, 10_000, Seeking(most=2), 40).depths == {"rare": 5, "scarce": 30}


def test_the_presets_seeking() -> None:
    """Memory search: every term finds (up to 32); history: a session's common words do
    not (docs/history.md); both read every match within 200 pools of postings."""
    assert DEFAULT_PRESET.seeking == Seeking(most=32, budget=200)
    assert HISTORY_FUSION_PRESET.seeking == Seeking(
        most=32, common_share=0.05, common_min=10, budget=200
    )
    with pytest.raises(ValueError):
        Seeking(most=0)
    with pytest.raises(ValueError):
        Seeking(most=1, common_share=0.0)
    with pytest.raises(ValueError):
        Seeking(most=1, budget=-1)
