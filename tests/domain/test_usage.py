"""Prices and totals of model calls (server/domain/usage.py): pure, no database."""

from __future__ import annotations

import pytest

from server.domain.usage import ModelTotals, Price, Totals, price_of

PRICES = {
    "gpt-4o": Price(input=2.5, output=10),
    "gpt-4o*": Price(input=3, output=12),
    "gpt-4o-mini*": Price(input=0.15, output=0.6),
    "claude*": Price(input=3, output=15),
}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", PRICES["gpt-4o"]),  # the exact name first
        ("gpt-4o-2024-08-06", PRICES["gpt-4o*"]),
        ("gpt-4o-mini-2024-07-18", PRICES["gpt-4o-mini*"]),  # the longest prefix
        ("claude-sonnet", PRICES["claude*"]),
        ("llama-3", None),
        ("gpt-4", None),  # a prefix matches the start of a name, not the other way round
    ],
)
def test_a_model_is_priced_by_its_name_else_its_longest_prefix(
    model: str, expected: Price | None
) -> None:
    assert price_of(model, PRICES) == expected


def test_totals_add_up_and_price_what_the_table_prices() -> None:
    totals = Totals.of(
        [
            ModelTotals("llama-3", 1, 100, 10, 0, 0),
            ModelTotals("gpt-4o", 3, 2_000_000, 100_000, 900, 2),
        ],
        PRICES,
    )
    assert [m.model for m in totals.by_model] == ["gpt-4o", "llama-3"]  # most calls first
    assert (totals.calls, totals.input_tokens, totals.output_tokens) == (4, 2_000_100, 100_010)
    assert totals.latency_ms == 900
    assert totals.cost == pytest.approx(2 * 2.5 + 0.1 * 10)
    assert totals.unpriced_calls == 1
    nothing = Totals.of([ModelTotals("llama-3", 2, 5, 5, 0, 0)], PRICES)
    assert nothing.cost is None and nothing.latency_ms is None and nothing.unpriced_calls == 2
    assert Totals.of([], {}).calls == 0
