"""What model calls used and cost: totals of tokens and latency, and their price.

The runtime records each model call (``recordInvocation``: its model, tokens in and
out, and how long it took). Totals add up the calls a limit counts (purposes ``turn``
and ``memory``); the server's own embeddings (``embed``, R43) are not counted, here as
anywhere. A price is the server's, not an agent's: the operator's table of prices per
model, per million tokens read and written (``AGENT_MEMORY_MODEL_PRICES``), in one
currency of the operator's choosing. A model is priced by its exact name, else by the
longest ``prefix*`` entry that matches it (``"gpt-4o*"`` prices ``gpt-4o-2024-08-06``);
a call of a model the table does not name has no cost, and totals say how many such
calls they hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

PER = 1_000_000  # prices are per million tokens


class Price(BaseModel):
    """One model's price per million tokens read (``input``) and written (``output``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)


def price_of(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: its exact entry, else the longest ``prefix*`` one."""
    exact = prices.get(model)
    if exact is not None:
        return exact
    best: tuple[int, Price] | None = None
    for name, price in prices.items():
        matches = name.endswith("*") and model.startswith(name[:-1])
        if matches and (best is None or len(name) > best[0]):
            best = (len(name), price)
    return best[1] if best is not None else None


@dataclass(frozen=True, slots=True)
class ModelTotals:
    """The calls of one model: how many, their tokens, and the latency of those that
    gave one (``timed`` of ``calls``)."""

    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    latency_ms: int
    timed: int

    def cost(self, prices: Mapping[str, Price]) -> float | None:
        price = price_of(self.model, prices)
        if price is None:
            return None
        return (self.input_tokens * price.input + self.output_tokens * price.output) / PER


@dataclass(frozen=True, slots=True)
class Totals:
    """Every model's calls, added up; ``cost`` over the priced models only."""

    by_model: tuple[ModelTotals, ...] = field(default=())
    prices: Mapping[str, Price] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[ModelTotals], prices: Mapping[str, Price]) -> Totals:
        return cls(tuple(sorted(rows, key=lambda m: (-m.calls, m.model))), prices)

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.by_model)

    @property
    def input_tokens(self) -> int:
        return sum(m.input_tokens for m in self.by_model)

    @property
    def output_tokens(self) -> int:
        return sum(m.output_tokens for m in self.by_model)

    @property
    def latency_ms(self) -> int | None:
        """The latencies given, added up; None when no call gave one."""
        timed = sum(m.timed for m in self.by_model)
        return sum(m.latency_ms for m in self.by_model) if timed else None

    @property
    def cost(self) -> float | None:
        """The cost of the priced calls; None when none is priced."""
        costs = [c for m in self.by_model if (c := m.cost(self.prices)) is not None]
        return sum(costs) if costs else None

    @property
    def unpriced_calls(self) -> int:
        return sum(m.calls for m in self.by_model if price_of(m.model, self.prices) is None)
