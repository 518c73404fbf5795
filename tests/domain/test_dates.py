"""The periods a history query names (R62): :func:`server.domain.dates.query_periods`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from server.domain.dates import YEARS_BACK, query_periods

NOW = datetime(2026, 5, 13, 15, 30, tzinfo=UTC)  # a Wednesday


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _days(query: str) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in query_periods(query, now=NOW)]


@pytest.mark.parametrize(
    "query",
    [
        "What did Gina find on 1 February, 2023?",
        "What did she find on February 1st, 2023?",
        "what happened on 2023-02-01",
        "the 1st of February 2023",
    ],
)
def test_r62_a_day_with_its_year_is_that_day(query: str) -> None:
    assert _days(query) == [("2023-02-01", "2023-02-02")]


def test_r62_a_month_with_its_year_is_that_month_and_is_not_read_twice() -> None:
    assert _days("What setback did Melanie face in October 2023?") == [("2023-10-01", "2023-11-01")]
    assert _days("plans for December 2023") == [("2023-12-01", "2024-01-01")]


def test_r62_a_month_without_a_year_is_that_month_in_each_recent_year() -> None:
    periods = query_periods("When did Melanie go camping in June?", now=NOW)
    assert periods == [(_at(y, 6, 1), _at(y, 7, 1)) for y in range(2026 - YEARS_BACK, 2027)]


def test_r62_may_and_march_as_words_name_no_month() -> None:
    assert query_periods("What may happen if the band will march?", now=NOW) == []
    assert query_periods("May I ask what we said about the budget?", now=NOW) == []
    assert query_periods("what did we decide", now=NOW) == []


def test_r62_a_year_is_that_year() -> None:
    assert _days("How many times has she gone to the beach in 2023?") == [
        ("2023-01-01", "2024-01-01")
    ]


def test_r62_relative_times_are_read_against_now() -> None:
    assert _days("what did I cook yesterday?") == [("2026-05-12", "2026-05-13")]
    assert _days("what did we say today") == [("2026-05-13", "2026-05-14")]
    assert _days("what did X do last week") == [("2026-05-04", "2026-05-11")]  # Monday to Monday
    assert _days("over the last weekend") == [("2026-05-09", "2026-05-11")]
    assert _days("the budget last month") == [("2026-04-01", "2026-05-01")]
    assert _days("trips last year") == [("2025-01-01", "2026-01-01")]
    assert _days("this week's plan") == [("2026-05-11", "2026-05-14")]
    assert _days("what I said 3 days ago") == [("2026-05-10", "2026-05-11")]
    assert _days("a few weeks ago") == [("2026-04-20", "2026-04-27")]
    assert _days("two months ago") == [("2026-03-01", "2026-04-01")]


def test_r62_several_periods_are_each_found_once() -> None:
    periods = query_periods("in March 2024 and on 3 March 2024, and in March 2024", now=NOW)
    assert periods == [(_at(2024, 3, 3), _at(2024, 3, 4)), (_at(2024, 3, 1), _at(2024, 4, 1))]
    assert query_periods("on 31 June 2024", now=NOW) == []  # no such day


def test_r62_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="aware"):
        query_periods("yesterday", now=NOW.replace(tzinfo=None))
    assert query_periods("yesterday", now=NOW.astimezone(UTC) + timedelta(hours=0))
