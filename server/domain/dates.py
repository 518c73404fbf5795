"""The periods a history query names (R62): dates and relative times in the query,
read against the time of the search, so that a part kept in that period can gain.

Plain Python over plain values. :func:`query_periods` finds, case-insensitively:

- a day: ``8 May 2023``, ``May 8th, 2023``, ``2023-05-08``; without a year
  (``May 8``), that day in each of the last ``YEARS_BACK`` years and this one;
- a month: ``May 2023``, ``in May`` (a month name alone counts after a word such as
  ``in``, ``of``, ``during``, ``since``, so that "may" and "march" as verbs do not),
  likewise in each recent year when it has none;
- a year: ``in 2023``;
- relative to ``now``: ``today``, ``yesterday``, ``last night``, ``this``/``last``
  ``week``, ``weekend``, ``month``, ``year``, ``N days``/``weeks``/``months``/
  ``years ago`` (``a``/``an``/``a few`` for N), weeks starting on Monday.

A period is a half-open UTC interval ``[start, end)``; what a text names twice is
one period. A query naming no time has none.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# A month or day without a year is looked for in this many years before now's, and now's.
YEARS_BACK = 10

_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH = "(" + "|".join(_MONTHS) + ")"
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_DAY_FIRST = re.compile(rf"\b{_ORD}\s+(?:of\s+)?{_MONTH}\b(?:,?\s+{_YEAR}\b)?", re.I)
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+{_ORD}\b(?!\s*(?:am|pm|:))(?:,?\s+{_YEAR}\b)?", re.I)
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I)
_MONTH_ALONE = re.compile(
    rf"\b(?:in|of|during|since|until|before|after|early|late|mid|last|this|next|"
    rf"through|throughout|around|by)\s+(?:-\s*)?{_MONTH}\b",
    re.I,
)
_YEAR_ALONE = re.compile(
    rf"\b(?:in|of|during|since|until|before|after|around|by)\s+{_YEAR}\b", re.I
)
_NUMBER = r"(\d+|an?|a few|a couple of|one|two|three|four|five|six)"
_AGO = re.compile(rf"\b{_NUMBER}\s+(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = re.compile(
    r"\b(today|tonight|yesterday|last night|(?:this|last|past|previous)\s+"
    r"(?:week|weekend|month|year))\b",
    re.I,
)
_WORD_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "a few": 3,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
}

Period = tuple[datetime, datetime]


def query_periods(query: str, *, now: datetime) -> list[Period]:
    """The periods ``query`` names, in the order found (see the module docstring)."""
    if now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    now = now.astimezone(UTC)
    found: list[Period] = []
    taken: list[tuple[int, int]] = []  # spans already read, so "8 May 2023" is not also "May"

    def free(m: re.Match[str]) -> bool:
        return not any(a < m.end() and m.start() < b for a, b in taken)

    def add(m: re.Match[str], periods: list[Period]) -> None:
        taken.append(m.span())
        for p in periods:
            if p not in found:
                found.append(p)

    for m in _ISO.finditer(query):
        add(m, _day(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for pattern, day_at, month_at in ((_DAY_FIRST, 1, 2), (_MONTH_FIRST, 2, 1)):
        for m in pattern.finditer(query):
            if free(m):
                month, day = _month_number(m.group(month_at)), int(m.group(day_at))
                years = [int(m.group(3))] if m.group(3) else _recent(now)
                add(m, [p for y in years for p in _day(y, month, day)])
    for m in _MONTH_YEAR.finditer(query):
        if free(m):
            add(m, [_month(int(m.group(2)), _month_number(m.group(1)))])
    for m in _MONTH_ALONE.finditer(query):
        if free(m):
            month = _month_number(m.group(1))
            add(m, [_month(y, month) for y in _recent(now)])
    for m in _YEAR_ALONE.finditer(query):
        if free(m):
            year = int(m.group(1))
            add(m, [(_at(year, 1, 1), _at(year + 1, 1, 1))])
    for m in _AGO.finditer(query):
        add(m, [_ago(_count(m.group(1)), m.group(2).lower(), now)])
    for m in _RELATIVE.finditer(query):
        add(m, [_relative(" ".join(m.group(1).lower().split()), now)])
    return found


def _recent(now: datetime) -> list[int]:
    return list(range(now.year - YEARS_BACK, now.year + 1))


def _month_number(name: str) -> int:
    return _MONTHS.index(name.lower()) + 1


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _day(year: int, month: int, day: int) -> list[Period]:
    try:
        start = _at(year, month, day)
    except ValueError:  # 31 June, 29 February of a common year
        return []
    return [(start, start + timedelta(days=1))]


def _month(year: int, month: int) -> Period:
    return _at(year, month, 1), _at(year + month // 12, month % 12 + 1, 1)


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _WORD_NUMBERS[word]


def _ago(n: int, unit: str, now: datetime) -> Period:
    today = _at(now.year, now.month, now.day)
    if unit == "day":
        start = today - timedelta(days=n)
        return start, start + timedelta(days=1)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=n)
        return monday, monday + timedelta(weeks=1)
    if unit == "month":
        index = now.year * 12 + now.month - 1 - n
        return _month(index // 12, index % 12 + 1)
    return _at(now.year - n, 1, 1), _at(now.year - n + 1, 1, 1)


def _relative(phrase: str, now: datetime) -> Period:
    today = _at(now.year, now.month, now.day)
    tomorrow = today + timedelta(days=1)
    monday = today - timedelta(days=today.weekday())
    if phrase in ("today", "tonight"):
        return today, tomorrow
    if phrase in ("yesterday", "last night"):
        return today - timedelta(days=1), today
    which, unit = phrase.split()
    if which == "this":
        start = {
            "week": monday,
            "weekend": monday + timedelta(days=5),
            "month": _at(now.year, now.month, 1),
            "year": _at(now.year, 1, 1),
        }[unit]
        return start, max(tomorrow, start + timedelta(days=2)) if unit == "weekend" else tomorrow
    if unit == "week":
        return monday - timedelta(weeks=1), monday
    if unit == "weekend":
        saturday = monday - timedelta(days=2)
        return saturday, monday
    if unit == "month":
        return _ago(1, "month", now)
    return _ago(1, "year", now)
